"""The console all renderers write to (stdout; colour only on a terminal)."""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console
from rich.errors import MarkupError


class _StdoutConsole(Console):
    """A closed pipe (``specwise advise ... | head``) is the reader's choice, not a failure: rich's default raises
    ``SystemExit(1)``, which reads as "the answer is no"; this one silences stdout and raises ``BrokenPipeError``
    to its caller (the Python API's; under the CLI stdout is a :class:`~specwise.cli.common.GuardedStdout`, which
    takes a closed pipe quietly itself, so this is not reached there)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """As rich's, but text that reads as broken markup (a path with ``[/bold]`` in it) is printed as it is
        rather than ending the command with an internal error; renderers escape the text they know is the user's."""
        try:
            super().print(*objects, **kwargs)
        except MarkupError:
            markup, self._markup = self._markup, False
            try:
                super().print(*objects, **{**kwargs, "markup": False})
            finally:
                self._markup = markup

    def on_broken_pipe(self) -> None:
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise BrokenPipeError


def console(out: Console | None = None) -> Console:
    """``out`` when given (a test's recording console), else a new console on stdout."""
    return out if out is not None else _StdoutConsole(highlight=False, soft_wrap=False)


STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "info": "cyan"}
