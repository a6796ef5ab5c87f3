"""``specwise examples`` reads on an 80-column terminal: one example per paragraph, not a table whose description
column wraps a word per line; a wide terminal keeps the table."""

from __future__ import annotations

import io

from rich.console import Console

from specwise.examples import list_examples
from specwise.report.examples import render_examples


def _render(width: int) -> str:
    buf = io.StringIO()
    render_examples(list_examples(), out=Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


def test_narrow_terminal_lists_paragraphs() -> None:
    text = _render(80)
    assert "┃" not in text and "llama70b-4xh100  (simulate scenario)" in text
    lines = text.splitlines()
    assert len(lines) < 4 * len(list_examples()) + 2  # name line + about two description lines each
    names = {e.name for e in list_examples()}
    for line in lines[1:]:  # after the title: a name with its kind, or its description indented under it
        assert line.startswith("    ") or line.split("  (")[0] in names, line
        assert len(line) <= 80 and line == line.rstrip(), line  # wrapped at the terminal, no blanks padded to it


def test_wide_terminal_keeps_the_table() -> None:
    assert "┃ name" in _render(160)
