"""SIGTERM while a command runs is handled as Ctrl-C is (review C, finding 1): one line, "terminated", exit 143
(128 + 15), and the handler main() had installed is gone when main() returns (tests call it in process). The real
thing, a sweep's pool and its workers, is tests/executors/test_worker_signals.py."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType

import pytest

from specwise.cli import EXIT_TERMINATED, gpus, main
from specwise.cli.common import EXIT_INTERRUPTED


@pytest.mark.parametrize("catches", [False, True])
def test_sigterm_is_one_line_and_exit_143(
    catches: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(args: argparse.Namespace) -> int:
        try:
            signal.raise_signal(signal.SIGTERM)
        except KeyboardInterrupt:  # a command that stops its own way on Ctrl-C (profile's partial results)
            if not catches:
                raise
            print("interrupted: what was done is kept", file=sys.stderr)
            return EXIT_INTERRUPTED
        return 0

    seen: list[int] = []

    def outer(signum: int, frame: FrameType | None) -> None:  # what a caller of main() had: back afterwards
        seen.append(signum)

    monkeypatch.setattr(gpus, "run", run)
    previous = signal.signal(signal.SIGTERM, outer)
    try:
        code = main(["gpus"])
        after = signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)
    err = capsys.readouterr().err
    assert code == EXIT_TERMINATED == 143
    assert err.strip().splitlines()[-1] == ("interrupted: what was done is kept" if catches else "terminated")
    assert "Traceback" not in err and seen == []
    assert after is outer
