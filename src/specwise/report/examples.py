"""The shipped examples as a table (``specwise examples``)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specwise.examples import CopyResult, Example
from specwise.report.console import console
from specwise.report.tables import print_table

NARROW = 110  # below this many columns the description would wrap a word per line: one example per paragraph


def render_examples(examples: Sequence[Example], *, wide: bool = False, out: Console | None = None) -> None:
    con = console(out)
    if not wide and con.width < NARROW:
        con.print("shipped examples (specwise examples NAME prints one; --copy DIR copies them)", highlight=False)
        for e in examples:
            con.print(f"[bold]{escape(e.name)}[/]  ({e.kind})", highlight=False)
            # wrapped here, not by a rich Padding, which pads every line with blanks out to the console's width
            indent = "    "
            text = textwrap.fill(e.description, max(con.width, 20), initial_indent=indent, subsequent_indent=indent)
            con.print(escape(text), highlight=False, soft_wrap=True)
        return
    table = Table(title="shipped examples (specwise examples NAME prints one; --copy DIR copies them)")
    table.add_column("name", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("what it is", overflow="fold")
    for e in examples:
        table.add_row(e.name, e.kind, escape(e.description))
    print_table(con, table, wide=wide)


def render_copy(result: CopyResult, dest: str, out: Console | None = None) -> None:
    same = f", {len(result.unchanged)} already there unchanged" if result.unchanged else ""
    n = len(result.written)
    console(out).print(
        f"copied {n} file{'' if n == 1 else 's'} to {escape(dest)}{same}", highlight=False, soft_wrap=True
    )
