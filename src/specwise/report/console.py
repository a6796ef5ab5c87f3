"""The console all renderers write to (stdout; colour only on a terminal)."""

from __future__ import annotations

from rich.console import Console


def console() -> Console:
    return Console(highlight=False, soft_wrap=False)


STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "info": "cyan"}
