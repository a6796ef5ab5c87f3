"""The console all renderers write to (stdout; colour only on a terminal)."""

from __future__ import annotations

from rich.console import Console


def console(out: Console | None = None) -> Console:
    """``out`` when given (a test's recording console), else a new console on stdout."""
    return out if out is not None else Console(highlight=False, soft_wrap=False)


STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "info": "cyan"}
