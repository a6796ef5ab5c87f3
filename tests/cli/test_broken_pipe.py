"""A reader that closes the pipe early (``specwise advise ... | head -1``) is not a "no": rich's default turns the
broken pipe into exit 1 (the answer is no); specwise exits 0 and prints no traceback (review item)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "advise" / "summarize-low-qps.toml"


def test_a_closed_pipe_exits_0_without_a_traceback() -> None:
    cmd = [sys.executable, "-m", "specwise.cli", "advise", "--scenario", str(EXAMPLE), "--processes", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away after one line, as head -1 does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in err and "Exception ignored" not in err
