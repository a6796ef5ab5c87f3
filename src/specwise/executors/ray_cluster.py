"""The Ray executor: each job a Ray task (``ray.remote``), on a running cluster or on one started here for the run.

A cluster started here is local only: Ray 2.x resolves ``--node-ip-address 127.0.0.1`` to the machine's routable
address (``ray/_private/services.py``, ``resolve_ip_for_localhost``) and then binds its GCS, raylet and workers on
every interface; with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (``ray/_private/ray_constants.py``,
``ENABLE_RAY_CLUSTER``: "local Ray" only) the node's address is the loopback one and every server binds 127.0.0.1
(``src/ray/rpc/grpc_server.cc`` listens on localhost only for a 127.0.0.1 node). The dashboard is not started and
usage statistics are off (``RAY_USAGE_STATS_ENABLED=0``) unless the environment says otherwise; both are read when
``ray`` is imported, so a program that imported it before keeps Ray's defaults. Nothing is shut down that this
executor did not start."""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from specwise.errors import SpecwiseError
from specwise.executors import Progress
from specwise.executors.local import pool_size

J = TypeVar("J")
R = TypeVar("R")
LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of ``HOST:PORT`` or ``ray://HOST:PORT``; None for ``auto``."""
    if address == "auto":
        return None
    parts = urlsplit("//" + address.removeprefix("ray://"))
    return (parts.hostname or "", parts.port or 0)


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A TCP connection to the head first: ``ray.init`` retries an address where nothing listens for many minutes
    (a warning every few seconds) before it gives up."""
    target = _host_port(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=timeout_s).close()
    except OSError as exc:
        raise SpecwiseError(
            f"--executor ray:{address}: nothing answers at {target[0]}:{target[1]} ({exc.strerror or exc}); "
            "is the cluster's head running ('ray start --head')?"
        ) from None


def _loopback(address: str | None) -> bool:
    """No address (a cluster started here) or one whose host is this machine's loopback."""
    if address is None:
        return True
    host = address.removeprefix("ray://").rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _import_ray(address: str | None) -> Any:
    """``ray``, imported with the environment set first (Ray reads it at import): usage statistics off, and for a
    cluster on this machine's loopback (started here, or joined at 127.0.0.1:PORT) the loopback address as this
    node's -- a driver finds its raylet by its own node address (``ray/_private/services.py``,
    ``get_node_to_connect_for_driver``), which Ray would otherwise take to be the routable one."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if _loopback(address) and "ray" not in sys.modules:
        os.environ.setdefault(LOCAL_ONLY_ENV, "0")
    import ray

    return ray


def _apply(fn: Callable[[J], R], job: J) -> R:
    """What each Ray task runs (Ray passes ``fn`` in from the object store)."""
    return fn(job)


class RayExecutor:
    """Ray tasks, one per job; the cluster reached on the first :meth:`map`, left by :meth:`close`."""

    def __init__(self, address: str | None = None, max_workers: int | None = None) -> None:
        self.address, self.max_workers = address, max_workers
        self._ray: Any = None
        self._initialised = False  # this executor called ray.init: it calls ray.shutdown (a cluster it joined stays up)

    def _connect(self) -> Any:
        if self._ray is not None:
            return self._ray
        ray = _import_ray(self.address)
        if not ray.is_initialized():
            options: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
            if self.address is None:
                cpus = pool_size(os.cpu_count() or 1, self.max_workers)
                # "local": a new cluster even where RAY_ADDRESS names another one
                options.update(address="local", num_cpus=cpus, include_dashboard=False)
            else:
                options["address"] = self.address
            try:
                ray.init(**options)
            except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
                raise SpecwiseError(self._failed(exc)) from exc
            self._initialised = True
        self._ray = ray
        return ray

    def _failed(self, exc: Exception) -> str:
        where = f"the Ray cluster at {self.address}" if self.address else "a local Ray cluster"
        first = str(exc).strip().split(". ")[0].splitlines()[0] if str(exc).strip() else type(exc).__name__
        flag = "ray" if self.address is None else f"ray:{self.address}"
        hint = ""
        if self.address not in (None, "auto") and "RAY_AUTH_MODE" not in os.environ:
            # Ray >= 2.5x: clusters have token authentication by default, and a driver given an explicit address
            # uses it only when told (ray/_private/worker.py, "an explicit address ... never does").
            hint = " (a cluster with token authentication, Ray's default: set RAY_AUTH_MODE=token and its token)"
        return f"--executor {flag}: cannot reach {where}: {first}{hint}"

    @property
    def workers(self) -> int:
        ray = self._connect()
        cpus = int(ray.cluster_resources().get("CPU", 1))
        return max(1, min(cpus, self.max_workers)) if self.max_workers else max(1, cpus)

    def map(self, fn: Callable[[J], R], jobs: Sequence[J], progress: Progress | None = None) -> list[R]:
        if not jobs:
            return []
        ray = self._connect()
        task = ray.remote(_apply)  # not ray.remote(fn): that takes only Python functions (no builtins, partials)
        fn_ref = ray.put(fn)
        refs = [task.remote(fn_ref, job) for job in jobs]
        results: list[R] = []
        for i, ref in enumerate(refs, start=1):
            results.append(ray.get(ref))
            if progress:
                progress(i, len(jobs))
        return results

    def close(self) -> None:
        if self._initialised and self._ray is not None:
            self._ray.shutdown()
        self._ray, self._initialised = None, False
