"""Terminal tables of a profile (its plot: :mod:`specwise.report.profile_plots`, which needs matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specwise.contracts.profile import ProfileDoc, ProfileResult, VerificationRow
from specwise.methods import LOOKUP_METHODS
from specwise.report.console import console
from specwise.report.tables import print_table


def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def quant_label(r: ProfileResult) -> str:
    return ",".join(f"{k}={v}" for k, v in dict(r.quantization).items())


def _result_table(who: str, target: str | None, r: ProfileResult) -> Table:
    cls = r.workload_class or "all"
    table = Table(
        title=escape(
            f"{who} -> {target}: T={r.temperature:g}, {r.drafting} drafting, quant {quant_label(r) or 'none'}, "
            f"class {cls} ({r.prompts} prompts); alpha {_f(r.alpha_mean)}"
        ),
        title_justify="left",
    )
    for col in ("k", "acceptance rate", "95% CI", "AL", "per-position acceptance"):
        prose = col == "per-position acceptance"
        table.add_column(col, justify="left" if prose else "right", overflow="fold" if prose else "ellipsis")
    for row in r.by_k:
        lo, hi = row.ci95
        table.add_row(
            str(row.k),
            _f(row.acceptance_rate),
            f"{_f(lo)}-{_f(hi)}",
            _f(row.mean_acceptance_length, 2),
            " ".join(_f(x, 2) for x in row.per_position_acceptance),
        )
    return table


def _match_line(method: str, r: ProfileResult) -> str:
    """A lookup drafts only where it finds a match: how often it did, beside the per-match acceptance above."""
    top = max(r.by_k, key=lambda b: b.k) if r.by_k else None
    if top is None or not top.num_steps:
        return f"{method}: decode steps not recorded (a profile written before num_steps)"
    if not top.num_drafts:
        return f"{method}: no match in {top.num_steps:,.0f} decode steps at k={top.k}: nothing was drafted"
    return (
        f"{method} match rate: {top.num_drafts:,.0f} of {top.num_steps:,.0f} decode steps drafted at k={top.k} "
        f"({top.num_drafts / top.num_steps:.0%}); the acceptance above is per match, as vLLM counts it"
    )


def _yes_no(flag: bool | None) -> str:
    return "yes" if flag else "NO"


def _verification_table(rows: Sequence[VerificationRow]) -> Table:
    table = Table(title="speculative sampling loop vs prediction", title_justify="left")
    cols = (
        "T",
        "drafting",
        "k",
        "paths",
        "measured",
        "95% CI",
        "paired pred",
        "diff",
        "agrees",
        "profile pred",
        "CPU speedup",
    )
    for col in cols:
        table.add_column(col, justify="right")
    for v in rows:
        lo, hi = v.measured_ci95
        table.add_row(
            f"{v.temperature:g}",
            v.drafting,
            str(v.k),
            str(v.paths_per_prompt),
            _f(v.measured_acceptance_rate),
            f"{_f(lo)}-{_f(hi)}",
            _f(v.paired_predicted_acceptance_rate),
            _f(v.paired_difference),
            _yes_no(v.agrees),
            _f(v.predicted_acceptance_rate),
            _f(v.measured_speedup, 2),
        )
    return table


def _prompts_line(doc: ProfileDoc) -> str | None:
    """What was profiled: the prompt source, how many, categories and the chat template (absent before they were
    recorded)."""
    p = doc.prompts
    if not p.get("source"):
        return None
    parts = [f"{p.get('count', '?')} prompts", f"turns {p['turns']}" if p.get("turns") else None]
    cats = p.get("categories")
    parts.append(f"categories {', '.join(map(str, cats))}" if isinstance(cats, list) and cats else None)
    template = p.get("chat_template")
    if isinstance(template, dict):
        src = template.get("source")
        parts.append(f"chat template: {template.get('used')}" + (f" ({src})" if src else ""))
    return f"prompts: {p['source']} (" + "; ".join(x for x in parts if x) + ")"


def render_profile(doc: ProfileDoc, out: Console | None = None, wide: bool = False) -> None:
    out = console(out)
    who = doc.draft or doc.method
    line = _prompts_line(doc)
    if line:
        out.print(line, markup=False, highlight=False)
    classes = {r.workload_class for r in doc.results if r.workload_class is not None}
    for r in doc.results:
        if len(classes) == 1 and r.workload_class is not None:
            continue  # every prompt of one class: its table is the "all" one, shown once (the JSON keeps both)
        print_table(out, _result_table(who, doc.target, r), wide=wide)
        if doc.method in LOOKUP_METHODS:
            out.print(_match_line(doc.method, r), highlight=False)
    if doc.verification:
        print_table(out, _verification_table(doc.verification), wide=wide)
        out.print(
            "paired pred: the profiler's estimator on the loop's own output paths (the method check); "
            "profile pred: the profile's number from its own sampled continuations (at T > 0 it also carries "
            "path-sampling noise, heavy-tailed: use --verify-paths N at T > 0); paths: loop runs per prompt"
        )
    if doc.timing_s:
        times = ", ".join(f"{k} {v:.1f}" for k, v in doc.timing_s.items() if k != "threads")
        threads = doc.timing_s.get("threads")
        out.print(f"time (s): {times}" + (f"; torch threads {threads:g}" if threads is not None else ""))
