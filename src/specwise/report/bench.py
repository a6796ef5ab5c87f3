"""Terminal view of a bench run, an A/B comparison and a calibration."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specwise.calibration.fit import STALL_FACTOR, proposer_cost_text
from specwise.contracts.bench import BenchDoc, BenchLevel
from specwise.contracts.calibration import CalibrationDoc
from specwise.report.console import console
from specwise.report.tables import print_table


def _level(rate: float | None, concurrency: int | None) -> str:
    """A level's load: its rate, its concurrency (``c=N``), or both (a vllm bench serve run capped by
    ``--max-concurrency``)."""
    if concurrency is not None:
        return f"c={concurrency}" if rate is None else f"{rate:g} c={concurrency}"
    return "-" if rate is None else f"{rate:g}"


def _ms(x: float | None) -> str:
    return "-" if x is None or x != x else f"{x * 1e3:.1f}"


def _x(v: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if v is None else fmt.format(v)


def render_bench(doc: BenchDoc, out: Console | None = None, wide: bool = False, notes: Sequence[str] = ()) -> None:
    out = console(out)
    table = Table(title=f"bench run {doc.run_id} against {doc.url} ({doc.model}); latencies p50", title_justify="left")
    slo = any(lv.summary.goodput_per_s is not None for lv in doc.levels)  # --slo-ttft / --slo-tpot given
    for col in ("rps", "ok", "fail", "TTFT ms", "TPOT ms", "ITL ms", "E2E ms", "tok/s", *(["good/s"] if slo else [])):
        table.add_column(col, justify="right")
    for col in ("acc", "AL"):
        table.add_column(col, justify="right")
    for lv in doc.levels:
        s, sd = lv.summary, lv.spec_decode
        rate = (sd.counts.acceptance_rate if sd.counts else sd.acceptance_rate) if sd else None
        al = (sd.counts.mean_acceptance_length if sd.counts else sd.acceptance_length) if sd else None
        table.add_row(
            _level(s.target_rate_per_s, lv.concurrency) + ("*" if s.sessions > 1 else ""),
            str(s.requests - s.failed),
            str(s.failed),
            _ms(s.ttft_s.p50),
            _ms(s.tpot_s.p50),
            _ms(s.itl_s.p50),
            _ms(s.e2e_s.p50),
            f"{s.output_tokens_per_s:.1f}",
            *([_x(s.goodput_per_s)] if slo else []),
            _x(rate, "{:.3f}"),
            _x(al),
        )
    print_table(out, table, wide=wide)
    if slo:
        out.print("good/s: requests per second that met the --slo-ttft / --slo-tpot objectives", highlight=False)
    for lv in doc.levels:
        _replica_lines(out, lv)
    _resumed_lines(out, "", doc.levels)
    for lv in doc.levels:
        for e in lv.scrape_errors:
            out.print(f"[yellow]level {lv.summary.level}[/yellow]: {e}")
    for line in failure_lines("", doc.levels):
        out.print(line, highlight=False)
    for line in notes:
        out.print(line, highlight=False, markup=False)
    out.print(f"records in {doc.db} (run {doc.run_id})")


def failure_lines(prefix: str, levels: tuple[BenchLevel, ...]) -> list[str]:
    """One line per level with failed requests: how many of how many, by kind (the record's ``error`` up to its
    first colon; each record in --db keeps the whole message), and what to change for a timeout."""
    lines: list[str] = []
    for lv in levels:
        s = lv.summary
        if not s.failed:
            continue
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(s.errors.items(), key=lambda kv: (-kv[1], kv[0])))
        hint = "; a slow configuration needs a longer --request-timeout" if "timeout" in s.errors else ""
        if lv.concurrency is not None:
            where = f"concurrency {lv.concurrency}"
        else:
            where = "-" if s.target_rate_per_s is None else f"{s.target_rate_per_s:g} rps"
        lines.append(f"{prefix}at {where}: {s.failed} of {s.requests} requests failed ({kinds}){hint}")
    return lines


def _resumed_lines(out: Console, prefix: str, levels: tuple[BenchLevel, ...]) -> None:
    """A level that two or more bench processes sent (``--resume`` after a crash): its throughputs are over the
    processes' sending times, laid on the level's arrival schedule when it has one
    (:func:`specwise.loadgen.records.active_span_s`)."""
    for lv in levels:
        s = lv.summary
        if s.sessions > 1:
            out.print(
                f"* {prefix}level {s.level} was resumed: sent by {s.sessions} bench processes; its duration "
                f"({s.duration_s:.1f} s) and throughputs count each one's sending time, laid on the level's arrival "
                "schedule (a rate level), not the time between them",
                highlight=False,
            )


def _replica_lines(out: Console, lv: BenchLevel) -> None:
    """Under the pooled table: each replica's own reading (a fleet of two or more)."""
    if len(lv.replicas) < 2:
        return
    for i, r in enumerate(lv.replicas):
        sd = r.spec_decode
        counts = sd.counts if sd else None
        rate = counts.acceptance_rate if counts else (sd.acceptance_rate if sd else None)
        al = counts.mean_acceptance_length if counts else (sd.acceptance_length if sd else None)
        drafts = f"{int(counts.drafts):,}" if counts else "-"
        reset = " [yellow](restarted)[/yellow]" if r.counter_reset else ""
        out.print(
            f"  level {lv.summary.level} replica {i} {escape(r.url)}: acc {_x(rate, '{:.3f}')}, AL {_x(al)}, "
            f"drafts {drafts}{reset}",
            highlight=False,
        )


def render_comparison(doc: BenchDoc, out: Console | None = None, wide: bool = False, notes: Sequence[str] = ()) -> None:
    out = console(out)
    table = Table(title=f"A/B comparison (speedups vs {doc.configs[0].name}, same requests)", title_justify="left")
    for col in ("config", "rps", "TPOT ms", "xTPOT", "xE2E", "tok/s", "xtok/s", "acc", "AL", "fail"):
        table.add_column(col, justify="left" if col == "config" else "right")
    resumed = {(c.name, lv.summary.level) for c in doc.configs for lv in c.levels if lv.summary.sessions > 1}
    for r in doc.comparison:
        table.add_row(
            r.config,
            _level(r.rate_per_s, r.concurrency) + ("*" if (r.config, r.level) in resumed else ""),
            _ms(r.tpot_p50_s),
            _x(r.speedup_tpot),
            _x(r.speedup_e2e),
            f"{r.output_tokens_per_s:.1f}",
            _x(r.speedup_throughput),
            _x(r.spec_decode_acceptance_rate),
            _x(r.spec_decode_acceptance_length),
            str(r.failed),
        )
    print_table(out, table, wide=wide)
    for c in doc.configs:
        out.print(f"{c.name}: run {c.run_id}, server log {c.server_log}")
        _resumed_lines(out, f"{c.name} ", c.levels)
        for line in failure_lines(f"  {c.name} ", c.levels):
            out.print(line, highlight=False)
    for line in [*losing_draft_notes(doc), *speculating_baseline_notes(doc), *notes]:
        out.print(line, highlight=False, markup=False)


def speculating_baseline_notes(doc: BenchDoc) -> list[str]:
    """A configuration launched without a speculative_config whose server still counted drafts: it is not the
    baseline it is named as (a default the engine applies, a setting in extra_args), and the speedups vs it mean
    something else."""
    notes = []
    for c in doc.configs:
        drafts = sum((_drafts(lv) or 0.0) for lv in c.levels)
        if c.speculative_config is None and drafts > 0:
            notes.append(
                f"warning: {c.name} has no speculative_config, yet its server counted {drafts:,.0f} spec-decode "
                "drafts: it speculates (check its extra_args and the engine's defaults), so it is no baseline"
            )
    return notes


def _drafts(lv: BenchLevel) -> float | None:
    sd = lv.spec_decode
    if sd is None or sd.counts is None:
        return None
    return sd.counts.drafts


def losing_draft_notes(doc: BenchDoc, max_acceptance: float = 0.2, min_draft_tokens: float = 100.0) -> list[str]:
    """Why a speculative configuration lost, when the reason is its acceptance: a draft that agrees with the target
    this rarely pays for k proposals and a (1 + k)-token verification every step and gains almost nothing. Only
    from ``min_draft_tokens`` drafted tokens up (a level whose requests all timed out early may have drafted 4:
    0 of 4 accepted says nothing about n-gram lookup)."""
    drafted = {(c.name, lv.summary.level): _draft_tokens(lv) for c in doc.configs for lv in c.levels}
    notes: list[str] = []
    seen: set[str] = set()
    for r in doc.comparison:
        acc, speedup = r.spec_decode_acceptance_rate, r.speedup_tpot
        n = drafted.get((r.config, r.level))
        if n is not None and n < min_draft_tokens:
            continue
        # no TPOT when none of the level's requests finished (e.g. all timed out): the counters still measured
        # the acceptance, and a draft this poor is the likely reason it was too slow
        if r.config in seen or acc is None or acc > max_acceptance or (speedup is not None and speedup >= 1.0):
            continue
        if speedup is None and not r.failed:
            continue
        seen.add(r.config)
        al = "" if r.spec_decode_acceptance_length is None else f", AL {r.spec_decode_acceptance_length:.2f}"
        share = "under 2%" if acc < 0.02 else f"{acc:.0%}"  # a few requests cannot tell 0.4% from 1.4%
        cost = "no request finished: see its failures above" if speedup is None else f"TPOT x{speedup:.2f}"
        notes.append(
            f"note: {r.config} accepts {share} of drafted tokens{al}: the draft almost never agrees with the "
            f"target, so each step pays for drafting and a longer verification and gains ~nothing "
            f"({cost}); profile the pair (specwise profile) or pick a trained draft"
        )
    return notes


def _draft_tokens(lv: BenchLevel) -> float | None:
    """Tokens the level's counters say were drafted; None when the engine reports gauges, not counts."""
    sd = lv.spec_decode
    if sd is None:
        return None
    return sd.counts.draft_tokens if sd.counts is not None else sd.draft_tokens


MANY_OUTLIERS = "; that many suggests a busy machine: re-run on a quiet one"


def render_calibration(
    cal: CalibrationDoc, path: Path | None = None, out: Console | None = None, wide: bool = False
) -> None:
    out = console(out)
    law = cal.law
    rms = "-" if cal.fit_relative_rms_error is None else f"{cal.fit_relative_rms_error:.1%}"
    out.print(
        f"calibrated step time (run {cal.run_id}): {law.per_kv_token_s * 1e6:.3f} us/KV token + "
        f"{law.per_batched_token_s * 1e3:.3f} ms/batched token above {law.free_batched_tokens:g} + "
        f"{law.constant_s * 1e3:.1f} ms ({cal.fit_points} step classes, RMS error {rms} of the mean step)"
    )
    if cal.outlier_steps > 0:
        total = cal.outlier_steps + sum(p.samples for p in cal.points)
        many = MANY_OUTLIERS if cal.outlier_steps > 0.05 * total else ""
        out.print(
            f"  {cal.outlier_steps} of {total} step timings (one per running request per step) left out of the fit: "
            f"over their shape's time by more than {STALL_FACTOR - 1:g}x the smaller of it and the level's median "
            f"step (an engine stall, or a step that also prefilled part of a prompt){many}"
        )
    methods = {c.name: c.method for c in cal.configs}
    for name, scale in cal.draft_cost_scale.items():
        out.print(f"  {proposer_cost_text(name, methods.get(name), scale)}")
    table = Table(title="simulator vs measurement (TPOT p50, speedup vs first config)", title_justify="left")
    for col in ("config", "rps", "TPOT ms", "sim TPOT ms", "xTPOT", "sim xTPOT", "error"):
        table.add_column(col, justify="left" if col == "config" else "right")
    for r in cal.rows:
        table.add_row(
            r.config,
            _level(r.rate_per_s, r.concurrency),
            _ms(r.measured_tpot_p50_s),
            _ms(r.predicted_tpot_p50_s),
            _x(r.measured_speedup_tpot, "{:.3f}"),  # three places: the error column's two-place rounding of
            _x(r.predicted_speedup_tpot, "{:.3f}"),  # unrounded values read as swapped rows at two (review s45c)
            _x(r.speedup_error, "{:+.3f}"),
        )
    print_table(out, table, wide=wide)
    if cal.mean_abs_speedup_error is not None:
        out.print(
            f"speedup error: mean |sim - measured| {cal.mean_abs_speedup_error:.3f}, "
            f"max {cal.max_abs_speedup_error:.3f}"
        )
    if path is not None:
        # soft_wrap: a path split across lines cannot be copied back into the command
        out.print(
            f"calibration file: {path} (use it: specwise simulate|advise|monitor --calibration {path})",
            soft_wrap=True,
            markup=False,
            highlight=False,
        )
