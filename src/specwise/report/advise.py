"""Terminal summary of an advise document (rich)."""

from __future__ import annotations

from rich.panel import Panel
from rich.table import Table

from specwise.contracts.advice import Advice
from specwise.report.console import console

_STATUS = {"pass": "[green]pass[/]", "warn": "[yellow]warn[/]", "fail": "[red]fail[/]"}


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def render_advise(doc: Advice) -> None:
    out = console()
    body = f"[bold]{doc.headline}[/]\n{doc.reason}"
    if doc.assumed_acceptance_for:
        body += (
            "\n[bold yellow]ASSUMED acceptance[/] (nothing measured) for: "
            + ", ".join(doc.assumed_acceptance_for)
            + " -- run specwise profile / bench and pass --profile / --bench"
        )
    out.print(Panel(body, title=f"specwise advise: {doc.scenario} ({doc.target} on {doc.tp} x {doc.gpu})"))
    table = Table(title=f"candidates at {doc.operating_qps:g} QPS (ranked)", title_justify="left")
    for col in ("rank", "candidate", "verdict", "k", "speedup", "KV tokens", "rules", "acceptance from"):
        table.add_column(col)
    for i, c in enumerate(doc.ranked, start=1):
        counts = " ".join(f"{sum(r.status == s for r in c.rules)}{s[0]}" for s in ("pass", "warn", "fail"))
        kinds = sorted({e.kind for e in c.evidence})
        table.add_row(
            str(i),
            c.candidate,
            c.verdict,
            str(c.k) + (" (schedule)" if c.schedule else ""),
            _x(c.speedup_at_operating_qps),
            f"{c.memory['kv_cache_tokens']:,}",
            counts,
            ", ".join(kinds),
        )
    out.print(table)
    top = doc.ranked[0]
    rt = Table(title=f"rule checks: {top.candidate}", title_justify="left")
    for col in ("rule", "status", "message"):
        rt.add_column(col, overflow="fold")
    for r in top.rules:
        rt.add_row(r.rule, _STATUS[r.status], r.message)
    out.print(rt)
    if doc.predictor:
        out.print(
            f"predictor: {doc.predictor}; speedups carry a +-{doc.band:.0%} band (80th percentile error of "
            f"{doc.band_source})"
        )
    if doc.measure is not None:
        out.print(f"[bold]measure first[/] ({doc.measure.candidate}): save this launch file as the command names it")
        out.print(doc.measure.launch_toml, soft_wrap=True, markup=False)
        out.print("[bold]then:[/] " + doc.measure.command, soft_wrap=True)
    out.print(f"[bold]{doc.serve.engine}:[/] " + doc.serve.command, soft_wrap=True)
