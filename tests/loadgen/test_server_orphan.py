"""A server started by ``bench --launch`` does not outlive a specwise killed with SIGKILL (Linux only)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

PARENT = """
import sys, time
from specwise.loadgen.launcher import spawn_server
with open(sys.argv[1], "wb") as log:
    child = spawn_server([sys.executable, "-c", "import time; time.sleep(60)"], log, {})
print(child.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie (exited, not yet reaped by init) is not running
        return f.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_server_dies_with_a_killed_parent(tmp_path: object) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path) + "/log"], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the server outlived its killed parent"
    finally:
        parent.kill()
