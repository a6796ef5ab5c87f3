"""The console all renderers write to (stdout; colour only on a terminal)."""

from __future__ import annotations

import os
import sys

from rich.console import Console


class _StdoutConsole(Console):
    """A closed pipe (``specwise advise ... | head``) is the reader's choice, not a failure: rich's default raises
    ``SystemExit(1)``, which reads as "the answer is no"; this one silences stdout and raises ``BrokenPipeError``,
    which the CLI turns into exit 0."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise BrokenPipeError


def console(out: Console | None = None) -> Console:
    """``out`` when given (a test's recording console), else a new console on stdout."""
    return out if out is not None else _StdoutConsole(highlight=False, soft_wrap=False)


STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "info": "cyan"}
