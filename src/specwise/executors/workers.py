"""The local pool's workers: they never outlive the process that started them, and leave signals to it.

A pool worker is a child process blocked on the pool's call queue between jobs; if the parent dies without
shutting the pool down (SIGTERM with no handler, SIGKILL, the OOM killer), nothing ever writes to that queue again
and the worker waits forever, reparented to PID 1. On Linux :func:`init_worker` asks the kernel to SIGKILL the
worker when its parent dies (``prctl(PR_SET_PDEATHSIG)``, prctl(2); the signal is sent when the *thread* that
forked the worker ends, and :meth:`LocalExecutor.map <specwise.executors.local.LocalExecutor.map>` forks from the
calling thread, which is blocked in ``map`` as long as a fresh pool lives; a kept pool, which outlives its map, is
used only from the thread that started it, and another thread's map starts its own). Elsewhere the parent's
shutdown is all there is.

The worker also drops the signal handlers it inherited by fork (the CLI's SIGTERM handler would raise in the
worker and print a traceback): SIGINT is ignored (a terminal's Ctrl-C reaches the whole process group; the parent
stops the pool) and SIGTERM kills it quietly (the default action).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def init_worker(parent_pid: int | None) -> None:
    """A pool worker's initializer: signals reset, killed with its parent on Linux. ``parent_pid``: the pid the
    worker's parent has when the pool forks it (None when a fork server is its parent): a worker whose parent is
    already gone when this runs (the death signal only covers a death after it is set) ends at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if set_parent_death_signal(signal.SIGKILL) and parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)  # the parent died between the fork and the prctl: no one will ever send this worker a job


def set_parent_death_signal(signum: int) -> bool:
    """Have the kernel send ``signum`` to this process when its parent dies; False where that cannot be had."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0)
    return False
