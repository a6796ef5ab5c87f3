"""The local executor: a process pool on this machine, or this process when one worker is all there is to use."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

from specwise.executors import Progress
from specwise.executors.workers import init_worker

J = TypeVar("J")
R = TypeVar("R")


def pool_size(jobs: int, max_workers: int | None = None, cores: int | None = None) -> int:
    """Worker processes for ``jobs`` jobs: at most one per job, per core and ``max_workers``; 1 runs in-process."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    return max(1, min(jobs, cores, max_workers if max_workers is not None else cores))


class LocalExecutor:
    """A fresh process pool per :meth:`map` (nothing to shut down between maps), sized by :func:`pool_size`."""

    def __init__(self, max_workers: int | None = None) -> None:
        self.max_workers = max_workers

    @property
    def workers(self) -> int:
        return pool_size(os.cpu_count() or 1, self.max_workers)

    def map(
        self, fn: Callable[[J], R], jobs: Sequence[J], progress: Progress | None = None, into: list[R] | None = None
    ) -> list[R]:
        workers = pool_size(len(jobs), self.max_workers)
        results: list[R] = into if into is not None else []
        if workers <= 1:
            for i, job in enumerate(jobs, start=1):
                results.append(fn(job))
                if progress:
                    progress(i, len(jobs))
            return results
        context = multiprocessing.get_context()
        parent = None if context.get_start_method() == "forkserver" else os.getpid()
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=init_worker, initargs=(parent,))
        try:
            for i, result in enumerate(pool.map(fn, jobs, chunksize=1), start=1):
                results.append(result)
                if progress:
                    progress(i, len(jobs))
        except BaseException:  # Ctrl-C, SIGTERM (the CLI raises), an error: the workers end now, not after their jobs
            _stop(pool)
            raise
        pool.shutdown()
        return results


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and kill the workers (pure computation: nothing of theirs to save); bounded."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # the workers, before shutdown forgets them
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, ValueError):  # already ended, or closed
            process.kill()
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            process.join(timeout=5)
    # the pool's manager thread sees the workers gone and closes its wakeup pipe; wait for it, or CPython's atexit hook
    # (concurrent.futures.process._python_exit) can write to that pipe as it closes: "Exception ignored ... Bad file
    # descriptor" after "terminated" (seen once in six runs of tests/executors/test_worker_signals.py)
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None:
        manager.join(timeout=5)
