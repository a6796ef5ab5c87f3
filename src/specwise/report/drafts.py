"""``specwise drafts`` as a table: one row per candidate draft, the reasons folded into the last column."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specwise.compat.drafts import DraftSuggestion
from specwise.report.console import console
from specwise.report.tables import print_table


def render_drafts(
    target: str,
    drafts: Sequence[DraftSuggestion],
    *,
    memory_checked: bool,
    wide: bool = False,
    out: Console | None = None,
) -> None:
    c = console(out)
    table = Table(
        title=f"drafts for {escape(target)}" + ("" if memory_checked else " (memory not checked: give --gpu)")
    )
    # without a GPU nothing says the pair fits in memory: the column says only whether vLLM can serve it
    # draft:target, as check-pair and the 1:8-1:12 advice write a size ratio (review s59: "50.3:1" beside "1:15.4")
    for name in ("#", "draft", "method", "fits" if memory_checked else "serves", "draft:target", "KV cost"):
        table.add_column(name, no_wrap=True)
    table.add_column("why", overflow="fold")
    for i, s in enumerate(drafts, 1):
        ratio = f"1:{s.param_ratio:.1f}" if s.param_ratio is not None else "-"
        ratio += " active" if s.param_ratio is not None and s.ratio_of == "active params" else ""
        cost = f"{s.kv_cost:.0%}" if s.kv_cost is not None else "-"
        table.add_row(str(i), escape(s.draft), s.method, "yes" if s.fits else "no", ratio, cost, escape(s.summary))
    print_table(c, table, wide=wide)
    if not any(s.fits and s.model_based for s in drafts):
        c.print("no draft model or head in the catalog fits this target; n-gram / suffix lookup need no weights")
    c.print("order: a heuristic (what to profile first); acceptance on your traffic decides: specwise profile")
    c.print("every finding in full: --json, or specwise check-pair --target T --draft D")
