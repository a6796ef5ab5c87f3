"""Terminal summary of an advise document (rich)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from specwise.contracts.advice import Advice, CandidateAdvice, NearbyEvidence, RuleCheck
from specwise.engines.base import shell_lines
from specwise.perfmodel.factory import band_basis
from specwise.report.console import console
from specwise.report.tables import print_table, print_wide
from specwise.units import fmt_pct, fmt_x

_STATUS = {"pass": "[green]pass[/]", "warn": "[yellow]warn[/]", "fail": "[red]fail[/]"}
_COUNT_STYLE = {"pass": "green", "warn": "yellow", "fail": "red"}


EVERY_CANDIDATE = "every candidate"


def grouped_warnings(doc: Advice) -> list[tuple[str, str]]:
    """(who, warning) pairs, each said once: a warning every candidate carries (a scenario-wide note, such as a
    missing ``[advise].operating_qps``) under ``every candidate``, first; the rest under their candidate."""
    per = [(c.candidate, list(dict.fromkeys(c.warnings))) for c in doc.ranked]
    shared = [w for w in per[0][1] if all(w in ws for _, ws in per[1:])] if len(per) > 1 else []
    return [(EVERY_CANDIDATE, w) for w in shared] + [(name, w) for name, ws in per for w in ws if w not in shared]


def rule_counts(rules: Sequence[RuleCheck]) -> str:
    """``7 pass, 1 warn, 0 fail``: how many of a candidate's rule checks passed, warned and failed."""
    return ", ".join(f"{sum(r.status == s for r in rules)} {s}" for s in ("pass", "warn", "fail"))


def rule_line(c: CandidateAdvice) -> str:
    """A candidate's rule checks on one line: the counts, then the rules that did not pass."""
    if c.verdict == "unsupported":
        return f"[bold red]unsupported[/] {escape(c.candidate)}: {escape(c.reason)}"
    if not c.rules:
        return f"rule checks, {escape(c.candidate)}: none (not evaluated)"
    flagged = [f"[{_COUNT_STYLE[r.status]}]{r.status}[/] {escape(r.rule)}" for r in c.rules if r.status != "pass"]
    head = f"rule checks, {escape(c.candidate)}: {rule_counts(c.rules)}"
    return head + (f" ({'; '.join(flagged)})" if flagged else "")


def _decision_panel(doc: Advice) -> Panel:
    # Messages quote files' tables ("[deployment].tp = 4"): text from the document is never read as markup.
    body = f"[bold]{escape(doc.headline)}[/]\n{escape(doc.reason)}"
    if doc.assumed_acceptance_for:
        body += (
            "\n[bold yellow]ASSUMED acceptance[/] (or n-gram match rate; not measured) for: "
            + escape(", ".join(doc.assumed_acceptance_for))
            + " -- run specwise profile / bench and pass --profile / --bench"
        )
    return Panel(body, title="specwise advise", title_align="left")


def _candidates_table(doc: Advice) -> Table:
    table = Table(
        title=f"candidates at {doc.operating_qps:g} QPS (ranked); rules: how many rule checks pass, warn, fail",
        title_justify="left",
    )
    for col in ("rank", "candidate", "verdict", "k", "speedup", "KV tokens", "rules", "acceptance from"):
        table.add_column(col, justify="right" if col in ("rank", "k", "speedup", "KV tokens") else "left")
    table.columns[7].overflow = "fold"
    for i, c in enumerate(doc.ranked, start=1):
        table.add_row(
            str(i),
            escape(c.candidate),
            c.verdict,
            str(c.k) + (" (schedule)" if c.schedule else ""),
            fmt_x(c.speedup_at_operating_qps),
            c.kv_tokens_text(),
            rule_counts(c.rules),
            escape(", ".join(sorted({e.label(c.k) for e in c.evidence}))),
        )
    return table


def _rules_table(top: CandidateAdvice) -> Table:
    rt = Table(title=f"rule checks: {escape(top.candidate)}", title_justify="left")
    rt.add_column("rule", overflow="fold")
    rt.add_column("status")
    rt.add_column("message", overflow="fold")
    for r in top.rules:
        rt.add_row(escape(r.rule), _STATUS[r.status], escape(r.message))
    return rt


def render_advise(
    doc: Advice, out: Console | None = None, wide: bool = False, launch_written: Path | None = None
) -> None:
    """The decision, the ranked candidates, the top one's rule checks, warnings and the commands;
    ``launch_written``: where ``--write-launch`` wrote the measure-first launch file (None: not written)."""
    out = console(out)

    def show(line: RenderableType) -> None:  # --wide: the title, panel and lines unwrapped, as the tables
        if wide:
            print_wide(out, line)
        else:
            out.print(line)

    show(f"[bold]specwise advise[/]: {escape(f'{doc.scenario} ({doc.target} on {doc.tp} x {doc.gpu})')}")
    show(_decision_panel(doc))
    print_table(out, _candidates_table(doc), wide=wide, key=1)
    top = doc.ranked[0]
    if top.rules:
        print_table(out, _rules_table(top), wide=wide)
    for other in doc.ranked[0 if top.verdict == "unsupported" else 1 :]:
        show(rule_line(other))
    for who, w in grouped_warnings(doc):
        show(f"[bold yellow]warning[/] ({escape(who)}): {escape(w)}")
    if doc.predictor:
        show(
            escape(
                f"predictor: {doc.predictor}; speedups carry a +-{doc.band:.0%} band "
                f"({band_basis(doc.band_statistic, doc.band_source)})"
            )
        )
    if doc.nearby_evidence is not None:
        show(escape(nearby_words(doc.nearby_evidence)))
    if doc.measure is not None:
        where = (
            f"this launch file is written to {escape(str(launch_written))}, as the command names it"
            if launch_written is not None
            else "save this launch file as the command names it"
        )
        show(f"[bold]measure first[/] ({escape(doc.measure.candidate)}): {where}")
        out.print(doc.measure.launch_toml, soft_wrap=True, markup=False)
        out.print("[bold]then:[/] " + escape(doc.measure.command), soft_wrap=True)
        for note in doc.measure.notes:
            show("[bold]note:[/] " + escape(note))
    out.print(f"[bold]{doc.serve.engine}:[/]")
    out.print(shell_lines(doc.serve.argv), soft_wrap=True, markup=False)
    for note in doc.serve.notes:
        show("[bold]note:[/] " + escape(note))


def nearby_words(e: NearbyEvidence) -> str:
    """The evidence nearest the deployment, in one line (terminal and HTML report): how near it is, what in it
    differs, and the predictor's error on it in the band's statistic too."""
    if not e.records:
        return (
            "nearest evidence: none of the held-back published measurements ran on this engine and kind of GPU "
            "(specwise validate lists those that did)"
        )
    low, high = e.nearness or (0.0, 0.0)
    near = f"{low:.0f}" if round(low) == round(high) else f"{low:.0f}-{high:.0f}"
    differs = (
        f"another {', '.join(e.differs[:-1])}{' or ' if len(e.differs) > 1 else ''}{e.differs[-1]} in some of them"
        if e.differs
        else "the same setup"
    )
    if e.slowdowns == 1:
        slow = f"its one published slowdown predicted {'below' if e.slowdowns_predicted else 'at or above'} 1"
    elif e.slowdowns:
        slow = f"{e.slowdowns_predicted} of their {e.slowdowns} published slowdowns predicted below 1"
    else:
        slow = "none of them a published slowdown"
    return (
        f"nearest evidence: the {e.records} held-back published measurements most like this deployment (nearness "
        f"{near} of {e.nearness_of:.0f}: {differs}; load not compared): the predictor's error on them is "
        f"{fmt_pct(e.median_abs_rel_error)} median, {fmt_pct(e.p80_abs_rel_error)} at the 80th percentile, "
        f"{fmt_pct(e.within_25pct)} within +-25%; {slow} ({e.command} lists them)"
    )
