"""Terminal view of a bench run."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from specwise.report.console import console


def _level(rate: float | None, concurrency: int | None) -> str:
    return f"c={concurrency}" if concurrency is not None else f"{rate:g}"


def _ms(x: float | None) -> str:
    return "-" if x is None or x != x else f"{x * 1e3:.1f}"


def render_bench(doc: dict[str, Any]) -> None:
    out = console()
    table = Table(
        title=f"bench run {doc['run_id']} against {doc['url']} ({doc['model']}); latencies p50", title_justify="left"
    )
    for col in ("rps", "ok", "fail", "TTFT ms", "TPOT ms", "ITL ms", "E2E ms", "tok/s", "acc", "AL"):
        table.add_column(col, justify="right")
    for lv in doc["levels"]:
        spec = lv.get("spec_decode") or {}
        rate = spec.get("spec_decode_acceptance_rate")
        al = spec.get("spec_decode_acceptance_length")
        table.add_row(
            _level(lv["target_rate_per_s"], lv.get("concurrency")),
            str(lv["requests"] - lv["failed"]),
            str(lv["failed"]),
            _ms(lv["ttft_s"]["p50"]),
            _ms(lv["tpot_s"]["p50"]),
            _ms(lv["itl_s"]["p50"]),
            _ms(lv["e2e_s"]["p50"]),
            f"{lv['output_tokens_per_s']:.1f}",
            "-" if rate is None else f"{rate:.3f}",
            "-" if al is None else f"{al:.2f}",
        )
    out.print(table)
    for lv in doc["levels"]:
        for e in lv.get("scrape_errors", []):
            out.print(f"[yellow]level {lv['level']}[/yellow]: {e}")
        if lv["errors"]:
            out.print(f"[yellow]level {lv['level']} failures[/yellow]: {lv['errors']}")
    out.print(f"records in {doc['db']} (run {doc['run_id']})")


def render_comparison(doc: dict[str, Any]) -> None:
    out = console()
    table = Table(
        title=f"A/B comparison (speedups vs {doc['configs'][0]['name']}, same requests)", title_justify="left"
    )
    for col in ("config", "rps", "TPOT ms", "xTPOT", "xE2E", "tok/s", "xtok/s", "acc", "AL", "fail"):
        table.add_column(col, justify="left" if col == "config" else "right")

    def x(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for r in doc["comparison"]:
        table.add_row(
            r["config"],
            _level(r["rate_per_s"], r.get("concurrency")),
            _ms(r["tpot_p50_s"]),
            x(r["speedup_tpot"]),
            x(r["speedup_e2e"]),
            f"{r['output_tokens_per_s']:.1f}",
            x(r["speedup_throughput"]),
            x(r["spec_decode_acceptance_rate"]),
            x(r["spec_decode_acceptance_length"]),
            str(r["failed"]),
        )
    out.print(table)
    for c in doc["configs"]:
        out.print(f"{c['name']}: run {c['run_id']}, server log {c['server_log']}")


def render_calibration(cal: dict[str, Any]) -> None:
    out = console()
    pred = cal["predictor"]
    out.print(
        f"calibrated step time (run {cal['run_id']}): {pred['per_kv_token_s'] * 1e6:.3f} us/KV token + "
        f"{pred['per_batched_token_s'] * 1e3:.3f} ms/batched token above {pred['free_batched_tokens']:g} + "
        f"{pred['constant_s'] * 1e3:.1f} ms "
        f"({pred['fit_points']} step classes, relative RMS error {pred['fit_relative_rms_error']:.1%})"
    )
    for name, scale in cal["draft_cost_scale"].items():
        out.print(f"  {name}: draft pass = {scale:.2f} x target pass")
    table = Table(title="simulator vs measurement (TPOT p50, speedup vs first config)", title_justify="left")
    for col in ("config", "rps", "TPOT ms", "sim TPOT ms", "xTPOT", "sim xTPOT", "error"):
        table.add_column(col, justify="left" if col == "config" else "right")

    def x(v: float | None, fmt: str = "{:.2f}") -> str:
        return "-" if v is None else fmt.format(v)

    for r in cal["rows"]:
        table.add_row(
            r["config"],
            _level(r["rate_per_s"], None),
            _ms(r["measured_tpot_p50_s"]),
            _ms(r["predicted_tpot_p50_s"]),
            x(r["measured_speedup_tpot"]),
            x(r["predicted_speedup_tpot"]),
            x(r["speedup_error"], "{:+.2f}"),
        )
    out.print(table)
    if cal["mean_abs_speedup_error"] is not None:
        out.print(
            f"speedup error: mean |sim - measured| {cal['mean_abs_speedup_error']:.3f}, "
            f"max {cal['max_abs_speedup_error']:.3f}"
        )
