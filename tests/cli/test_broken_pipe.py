"""A reader that closes the pipe early (``specwise advise ... | head -1``) changes no answer: the command finishes and
exits with its own status -- 0 for an answer that is yes, 1 for a "no" (under ``set -o pipefail`` a "does not fit"
must not read as success: a first-hour review) -- and prints no traceback. (rich's default turned the broken pipe
into exit 1 whatever the answer; an earlier fix turned every closed pipe into 0.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "advise"


@pytest.mark.parametrize(("example", "code"), [("summarize-low-qps", 0), ("summarize-high-qps", 1)])
def test_a_closed_pipe_keeps_the_answers_exit_status(example: str, code: int) -> None:
    cmd = [sys.executable, "-m", "specwise.cli", "advise", "--scenario", str(EXAMPLES / f"{example}.toml")]
    proc = subprocess.Popen([*cmd, "--processes", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away after one line, as head -1 does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == code
    assert "Traceback" not in err and "Exception ignored" not in err


def test_a_large_output_into_a_closed_pipe(tmp_path: Path) -> None:
    """More than a pipe holds (64 KiB) after the reader went: every later write goes nowhere, quietly."""
    script = (
        "import sys\n"
        "from specwise.cli import common\n"
        "sys.stdout = common.GuardedStdout(sys.stdout)\n"
        "for i in range(20000): print('x' * 40)\n"
        "assert common.reader_gone()\n"
        "sys.stderr.write('finished\\n')\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "finished" in err and "Traceback" not in err


def test_everything_else_is_the_real_streams() -> None:
    import io

    from specwise.cli.common import GuardedStdout

    real = io.StringIO()
    guarded = GuardedStdout(real)
    guarded.write("x")
    assert guarded.getvalue() == "x" and guarded.isatty() is False and not guarded.reader_gone
