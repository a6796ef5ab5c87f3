"""Terminal view of one monitor evaluation."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from specwise.report.console import console


def _f(x: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if x is None else fmt.format(x)


def render_monitor(doc: dict[str, Any]) -> None:
    out = console()
    table = Table(title=f"speculative decoding over the last {doc['window_s']:.1f} s", title_justify="left")
    for col in ("server", "accept", "AL", "per-position", "gen tok/s", "req/s", "running", "waiting", "TPOT p50 ms"):
        table.add_column(col, justify="left" if col in ("server", "per-position") else "right")
    for s in doc["servers"]:
        if "error" in s:
            table.add_row(s["url"], f"[red]{s['error']}[/red]", *[""] * 7)
            continue
        st = s["stats"]
        tpot = (st["latency"].get("tpot_s") or {}).get("p50")
        table.add_row(
            s["url"],
            _f(st["acceptance_rate"]),
            _f(st["mean_acceptance_length"]),
            " ".join(f"{r:.2f}" for r in st["per_position_acceptance"]) or "-",
            _f(st["generation_tokens_per_s"], "{:.1f}"),
            _f(st["requests_per_s"]),
            _f(st["running"], "{:.0f}"),
            _f(st["waiting"], "{:.0f}"),
            "-" if tpot is None else f"{tpot * 1e3:.1f}",
        )
    out.print(table)
    for s in doc["servers"]:
        for a in s["alerts"]:
            out.print(f"[red]{a['severity']}[/red] {s['url']}: {a['message']}")
        for note in (s.get("stats") or {}).get("notes", []):
            out.print(f"[yellow]note[/yellow] {s['url']}: {note}")
