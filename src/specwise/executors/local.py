"""The local executor: a process pool on this machine, or this process when one worker is all there is to use."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
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
    """A process pool sized by :func:`pool_size`: a fresh one per :meth:`map` (nothing to shut down between maps),
    or with ``keep_pool`` one pool for every map until :meth:`close` (what :func:`~specwise.executors.open_executor`
    gives for the length of its ``with`` block). advise maps 4-5 times per candidate (its sweep, then the
    replicates); a fresh pool per map starts its workers each time, which a forked worker does cheaply but a
    fork-server or spawned one (Python 3.14's Linux default, macOS's) pays with its imports: on three shipped
    examples one pool took 3.58 / 2.76 / 0.73 s of wall time against 3.64 / 2.83 / 0.88 s with fork, and 4.1 / 2.7
    / 1.1 s against 5.6 / 4.6 / 2.2 s with a fork server, where a pool per map was slower than no pool
    (``bench/pool_reuse.py``, 2 cores)."""

    def __init__(self, max_workers: int | None = None, keep_pool: bool = False) -> None:
        self.max_workers = max_workers
        self.keep_pool = keep_pool
        self._pool: ProcessPoolExecutor | None = None
        self._pool_workers = 0  # the kept pool's size: the widest map's so far (one per job and core, as a fresh pool)
        self._thread = 0  # the thread that started the kept pool's workers

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
        if self._pool is not None and (self._pool_workers < workers or self._thread != threading.get_ident()):
            # a wider map than the kept pool: a wider pool; a map from another thread: a pool of its own (the
            # workers' death signal follows the thread that started them, which may have ended: workers.py)
            self.close()
        pool = self._pool or _new_pool(workers)
        if self.keep_pool and self._pool is None:
            self._pool, self._pool_workers, self._thread = pool, workers, threading.get_ident()
        try:
            for i, result in enumerate(pool.map(fn, jobs, chunksize=1), start=1):
                results.append(result)
                if progress:
                    progress(i, len(jobs))
        except BaseException:  # Ctrl-C, SIGTERM (the CLI raises), an error: the workers end now, not after their jobs
            self._pool = None
            _stop(pool)
            raise
        if not self.keep_pool:
            pool.shutdown()
        return results

    def close(self) -> None:
        """Shut a kept pool down (its workers are idle between maps: at once); a later map starts a new one."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()


def _new_pool(workers: int) -> ProcessPoolExecutor:
    """A pool whose workers leave signals to this process and die with it (:func:`~specwise.executors.workers.
    init_worker`); they are forked by the calling thread on the first map (the death signal follows that thread)."""
    context = multiprocessing.get_context()
    parent = None if context.get_start_method() == "forkserver" else os.getpid()
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=init_worker, initargs=(parent,))


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
