"""How many threads torch uses for the profiler's passes: the cores this process may actually run on.

``torch.get_num_threads()`` defaults to the machine's physical cores, which over-subscribes a container or a task
pinned to fewer (``taskset``, cgroup cpusets): threads then wait on each other. ``os.sched_getaffinity`` is the
set the scheduler will use for this process.
"""

from __future__ import annotations

import os

from specwise.errors import SpecwiseError

THREADS_PER_CORE = 4
"""``--threads`` above this many per available core is refused: the intra-op pool's threads beyond the cores only
wait on each other (the passes get slower, never faster), and a number in the thousands exhausts the process's
threads (``RuntimeError: can't start new thread``, then a crash inside the thread pool)."""


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def max_threads(cores: int | None = None) -> int:
    """The most threads ``--threads`` accepts: :data:`THREADS_PER_CORE` per core this process may run on."""
    return THREADS_PER_CORE * (available_cores() if cores is None else cores)


def check_threads(requested: int, cores: int | None = None) -> int:
    """``requested`` when it is 1 .. :func:`max_threads`; else one line that says the limit."""
    cores = available_cores() if cores is None else cores
    limit = max_threads(cores)
    if not 1 <= requested <= limit:
        raise SpecwiseError(
            f"expected 1 to {limit} threads ({THREADS_PER_CORE} x the {cores} cores this process may run on; more "
            f"only wait on each other), got {requested}"
        )
    return requested


def configure_threads(requested: int | None = None) -> int:
    """Set torch's intra-op threads to ``requested`` (default: :func:`available_cores`); returns the number set."""
    import torch

    n = available_cores() if requested is None else check_threads(requested)
    torch.set_num_threads(n)
    return n
