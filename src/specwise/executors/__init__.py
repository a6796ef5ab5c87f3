"""Where independent jobs run: in this process, in a local process pool, or as tasks on a Ray cluster.

A job is a picklable argument to a picklable (module-level) function; an :class:`Executor` maps the function over
the jobs and returns the results in job order, so what a sweep or a replay computes never depends on where it ran
(each job carries its own seeds). ``--executor local|ray[:ADDRESS]`` on simulate, advise and validate is parsed
once, by :func:`parse_executor`, into an :class:`ExecutorSpec`; :func:`open_executor` turns the spec into an
executor for the length of a ``with`` block."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar
from urllib.parse import urlsplit

from specwise.extras import require

J = TypeVar("J")
R = TypeVar("R")
Progress = Callable[[int, int], None]  # (jobs done, jobs in all), called in job order
EXECUTOR_HELP = (
    "where the simulations run: 'local' (a process pool on this machine; the default), 'ray' (a Ray cluster "
    "started on this machine for the run, loopback only) or 'ray:ADDRESS' (a running cluster: 'auto', HOST:PORT "
    "of its head, or ray://HOST:PORT); needs pip install 'specwise[ray]'"
)


class Executor(Protocol):
    """Maps a picklable function over picklable jobs; results in job order, whatever order they finish in."""

    @property
    def workers(self) -> int:
        """How many jobs run at once (a caller may cut its work into a few times as many jobs)."""
        ...

    def map(
        self, fn: Callable[[J], R], jobs: Sequence[J], progress: Progress | None = None, into: list[R] | None = None
    ) -> list[R]:
        """The results in job order, appended to ``into`` (a new list when None) as each arrives: a caller that
        passes its own list still holds the finished prefix when the map is interrupted (Ctrl-C, SIGTERM)."""
        ...


@dataclass(frozen=True)
class ExecutorSpec:
    """``kind`` local or ray; ``address`` a running Ray cluster's (``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``),
    None for a cluster started here for the run."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = None

    def __str__(self) -> str:
        return self.kind if self.address is None else f"{self.kind}:{self.address}"


LOCAL = ExecutorSpec()


def parse_executor(text: str) -> ExecutorSpec:
    """``local``, ``ray`` or ``ray:ADDRESS``; a ValueError that says what is accepted otherwise."""
    kind, sep, address = text.strip().partition(":")
    if kind == "local" and not sep:
        return LOCAL
    if kind != "ray":
        raise ValueError(f"expected 'local', 'ray' or 'ray:ADDRESS', got {text!r}")
    if not sep:
        return ExecutorSpec("ray")
    return ExecutorSpec("ray", _ray_address(address))


def _ray_address(address: str) -> str:
    """``auto``, ``HOST:PORT`` (the head's GCS) or ``ray://HOST:PORT`` (Ray Client), as ``ray.init`` takes them."""
    if address == "auto":
        return address
    try:
        parts = urlsplit("//" + address.removeprefix("ray://"))
        port = parts.port
        ok = bool(parts.hostname) and port is not None and port > 0
        ok = ok and not (parts.path or parts.query or parts.fragment or parts.username)
    except ValueError:  # a port that is not a number, or out of range
        ok = False
    if not ok:
        raise ValueError(f"expected ray:auto, ray:HOST:PORT or ray:ray://HOST:PORT, got 'ray:{address}'")
    return address


@contextlib.contextmanager
def open_executor(spec: ExecutorSpec = LOCAL, max_workers: int | None = None) -> Iterator[Executor]:
    """The executor ``spec`` names, at most ``max_workers`` jobs at once (a local pool's size, or the CPUs of a Ray
    cluster started here; a running cluster schedules by its own CPUs). A Ray cluster is joined or started only
    when the first job is submitted, and shut down on leaving only if it was started here. Ray missing, or nothing
    listening at the address: a SpecwiseError before anything runs."""
    from specwise.executors.local import LocalExecutor

    if spec.kind == "local":
        local = LocalExecutor(max_workers, keep_pool=True)  # one pool for the block's maps, not one per map
        try:
            yield local
        finally:
            local.close()
        return
    require("ray", f"--executor {spec}")
    from specwise.executors.ray_cluster import RayExecutor, check_reachable

    if spec.address is not None:
        check_reachable(spec.address)  # before any work: a wrong address is the user's mistake, said at once
    ray_executor = RayExecutor(spec.address, max_workers)
    try:
        yield ray_executor
    finally:
        ray_executor.close()
