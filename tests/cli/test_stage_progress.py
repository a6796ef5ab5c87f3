"""Progress outside a terminal (issue 17): a stage still running after the quiet period is announced on stderr,
even when it reports only at its end; work that ends or fails sooner prints nothing; nothing prints after the bar
is closed."""

from __future__ import annotations

import time

import pytest

from specwise.cli.common import progress_bar, stage_progress


def test_a_long_stage_is_announced_while_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with progress_bar() as bar:
        progress = stage_progress(bar, quiet_s=0.3)
        progress("continuations T=0", 0, 8)
        time.sleep(0.6)
        assert capsys.readouterr().err.strip().endswith("continuations T=0 (0/8)")  # before the stage ends
        progress("continuations T=0", 8, 8)
        progress("analysis", 0, 1)
    assert "analysis (0/1)" in capsys.readouterr().err


def test_quick_or_failed_work_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RuntimeError), progress_bar() as bar:
        stage_progress(bar, quiet_s=0.3)("simulate ngram", 0, 4)
        raise RuntimeError("bad input")
    time.sleep(0.5)
    assert capsys.readouterr().err == ""
