"""Run one CLI invocation the way a user would meet it, bounded in time and memory, and classify the outcome.

``clean`` means: exit 0/1 with no traceback, or exit 2 with exactly one line on stderr. Anything else (exit 3, a
traceback, several lines, a hang, memory exhaustion) is a finding.
"""

from __future__ import annotations

import contextlib
import io
import resource
import signal
import tempfile
from dataclasses import dataclass
from types import FrameType

MEMORY_LIMIT_BYTES = 3 * 2**30
TIME_LIMIT_S = 60


@dataclass(frozen=True)
class Outcome:
    case: str
    code: int | None  # None: hung or killed
    stderr: str

    @property
    def lines(self) -> list[str]:
        return [line for line in self.stderr.strip().splitlines() if line.strip()]

    @property
    def clean(self) -> bool:
        if self.code is None or "Traceback" in self.stderr:
            return False
        if self.code == 2:
            return len(self.lines) == 1
        return self.code in (0, 1)

    @property
    def first_line(self) -> str:
        return self.lines[0] if self.lines else ""


class _Hung(BaseException):
    pass


def _alarm(_sig: int, _frame: FrameType | None) -> None:
    raise _Hung


def run_case(case: str, argv: list[str], limit_memory: bool = True) -> Outcome:
    """``specwise argv`` in this process (call it in a worker), with an alarm and an address-space cap."""
    from specwise.cli import main

    if limit_memory:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or soft > MEMORY_LIMIT_BYTES:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, hard))
    err, out = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIME_LIMIT_S)
    try:
        # in a scratch directory: outputs with default names (bench's specwise-bench.sqlite) stay out of the checkout
        with (
            tempfile.TemporaryDirectory() as scratch,
            contextlib.chdir(scratch),
            contextlib.redirect_stderr(err),
            contextlib.redirect_stdout(out),
        ):
            code: int | None = main(argv)
    except _Hung:
        code = None
        err.write(f"hung: no answer in {TIME_LIMIT_S} s\n")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return Outcome(case, code, err.getvalue())
