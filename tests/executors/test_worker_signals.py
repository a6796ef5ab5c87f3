"""The local pool's workers never outlive the CLI (review C, finding 1): SIGTERM to the main process only (kill PID,
docker stop, systemd KillMode=process) ends a sweep as Ctrl-C does ("terminated", exit 143, no worker left), and a
parent killed outright (SIGKILL) takes its workers with it (PR_SET_PDEATHSIG). Linux only: /proc and prctl."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.child_env import child_env

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "examples" / "llama70b-ngram.toml"
WAIT_S = 120.0  # generous bounds for a loaded 2-core machine; a passing run waits a few seconds

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl(PR_SET_PDEATHSIG): Linux only"),
    pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: simulate runs in process, with no pool"),
]


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of a process from /proc/PID/stat; None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) ": the name may hold spaces
    return fields[0], int(fields[1]), int(fields[19])


def _children(pid: int) -> dict[int, int]:
    """The live children of ``pid``: pid -> start time (to tell a reused pid from the child)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[1] == pid and stat[0] not in ("Z", "X"):
                found[int(entry.name)] = stat[2]
    return found


def _alive(pid: int, start: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[2] == start and stat[0] not in ("Z", "X")


def _start_sweep(stderr: Path) -> tuple[subprocess.Popen[bytes], dict[int, int]]:
    """``specwise simulate`` on a shipped example (tens of seconds of cells on two workers), once its pool's two
    workers are up: the process and its workers. stderr goes to a file: a pipe would stay open in an orphan."""
    env = child_env()
    cmd = [sys.executable, "-m", "specwise", "simulate", "--scenario", str(SCENARIO), "--processes", "2", "--json"]
    with stderr.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=ROOT)
    deadline = time.monotonic() + WAIT_S
    workers: dict[int, int] = {}
    while len(workers) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        workers = _children(proc.pid)
    if len(workers) < 2:
        proc.kill()
        proc.wait(timeout=WAIT_S)
        _left(workers)
        pytest.fail(f"simulate never started its two pool workers (exit {proc.returncode})")
    return proc, workers


def _left(workers: dict[int, int]) -> dict[int, int]:
    """The workers still alive after a bounded wait (the kernel delivers, init reaps; 30 s, for a loaded machine),
    then killed: an orphan of the code under test is never left spinning."""
    deadline = time.monotonic() + 30
    alive = dict(workers)
    while alive and time.monotonic() < deadline:
        alive = {pid: start for pid, start in alive.items() if _alive(pid, start)}
        time.sleep(0.05)
    for pid, start in alive.items():
        if _alive(pid, start):  # not a reused pid
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return alive


def test_sigterm_ends_the_sweep_and_its_workers(tmp_path: Path) -> None:
    proc, workers = _start_sweep(tmp_path / "stderr")
    try:
        proc.send_signal(signal.SIGTERM)  # the main process only, as a supervisor sends it
        proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=WAIT_S)
        left = _left(workers)
    err = (tmp_path / "stderr").read_text()
    assert proc.returncode == 143, err
    last = err.strip().splitlines()[-1]  # one line: how it stopped and what had finished, no bare second one
    assert last.startswith("specwise simulate: terminated: ") and "simulations had finished" in last, err
    assert "Traceback" not in err
    assert not left, f"workers left behind: {sorted(left)}"


def test_sigkill_takes_the_workers_with_it(tmp_path: Path) -> None:
    proc, workers = _start_sweep(tmp_path / "stderr")
    proc.kill()
    proc.wait(timeout=WAIT_S)
    assert proc.returncode == -signal.SIGKILL
    left = _left(workers)
    assert not left, f"workers outlived their parent: {sorted(left)}"


_WORKER_CHECK = """
import ctypes, os, signal, sys
from specwise.executors.workers import init_worker
signal.signal(signal.SIGTERM, lambda *_: sys.exit("inherited handler ran"))
signal.signal(signal.SIGINT, lambda *_: sys.exit("inherited handler ran"))
init_worker(int(sys.argv[1]))
got = ctypes.c_int()
ctypes.CDLL(None).prctl(2, ctypes.byref(got), 0, 0, 0)  # PR_GET_PDEATHSIG
print(got.value, signal.getsignal(signal.SIGINT) is signal.SIG_IGN, signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
"""


def test_worker_initializer_resets_signals_and_watches_its_parent() -> None:
    env = child_env()
    run = [sys.executable, "-c", _WORKER_CHECK]
    ok = subprocess.run([*run, str(os.getpid())], capture_output=True, text=True, env=env, timeout=WAIT_S)
    assert (ok.returncode, ok.stdout.split()) == (0, [str(int(signal.SIGKILL)), "True", "True"]), ok.stderr
    # a parent that is not this worker's any more (it died before the initializer ran): the worker ends at once
    gone = subprocess.run([*run, str(os.getpid() + 1)], capture_output=True, text=True, env=env, timeout=WAIT_S)
    assert (gone.returncode, gone.stdout) == (1, ""), gone.stderr
