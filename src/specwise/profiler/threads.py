"""How many threads torch uses for the profiler's passes: the cores this process may actually run on.

``torch.get_num_threads()`` defaults to the machine's physical cores, which over-subscribes a container or a task
pinned to fewer (``taskset``, cgroup cpusets): threads then wait on each other. ``os.sched_getaffinity`` is the
set the scheduler will use for this process.
"""

from __future__ import annotations

import os

import torch


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def configure_threads(requested: int | None = None) -> int:
    """Set torch's intra-op threads to ``requested`` (default: :func:`available_cores`); returns the number set."""
    n = requested or available_cores()
    torch.set_num_threads(n)
    return n
