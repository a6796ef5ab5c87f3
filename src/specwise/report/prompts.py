"""The table of ``specwise prompts``."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specwise.prompts.summary import PromptSummary
from specwise.report.console import console
from specwise.report.tables import print_table


def render_prompt_summary(summary: PromptSummary, out: Console | None = None, wide: bool = False) -> None:
    table = Table(title=escape(summary.source), title_justify="left")
    for col in ("category", "requests", "multi-turn", f"mean {summary.unit}", f"max {summary.unit}"):
        table.add_column(col, justify="left" if col == "category" else "right")
    for r in summary.rows:
        table.add_row(r.category, str(r.requests), str(r.multi_turn), f"{r.mean_length:.1f}", str(r.max_length))
    print_table(console(out), table, wide=wide)
