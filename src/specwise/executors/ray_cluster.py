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

import logging
import os
import socket
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from specwise.errors import SpecwiseError
from specwise.executors import Progress
from specwise.executors.local import pool_size
from specwise.netaddr import is_loopback

J = TypeVar("J")
R = TypeVar("R")
LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of ``HOST:PORT`` or ``ray://HOST:PORT``; None for ``auto`` or an address that is neither."""
    if address == "auto":
        return None
    try:
        parts = urlsplit("//" + address.removeprefix("ray://"))
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number, or out of range
        return None
    return (host, port) if host and port else None


def ray_address_file(environ: Mapping[str, str] | None = None) -> Path:
    """Where Ray records the last cluster ``ray start`` started on this machine: ``<temp>/ray/ray_current_cluster``,
    ``<temp>`` being RAY_TMPDIR, else TMPDIR on Linux, else /tmp (``ray/_common/utils.py``,
    ``get_default_system_temp_dir`` and ``get_ray_address_file``). ``ray stop`` removes it."""
    env = os.environ if environ is None else environ
    if env.get("RAY_TMPDIR"):
        temp = env["RAY_TMPDIR"]
    elif sys.platform.startswith("linux") and env.get("TMPDIR"):
        temp = env["TMPDIR"]
    elif sys.platform.startswith(("linux", "darwin")):
        temp = "/tmp"
    else:
        temp = tempfile.gettempdir()
    return Path(temp) / "ray" / "ray_current_cluster"


def resolve_auto(environ: Mapping[str, str] | None = None, running: Iterable[str] = ()) -> tuple[str, str] | None:
    """(address, where it came from) of the cluster ``ray.init(address="auto")`` joins, found in Ray's order
    (``ray/_private/worker.py``, ``init``; ``ray/_private/services.py``, ``get_ray_address_from_environment``):
    RAY_ADDRESS when set; else, with no Ray running here (``running``: the GCS addresses of this machine's raylets),
    the address in :func:`ray_address_file`; one running, that one (several: the file's, when it names one). None
    when RAY_ADDRESS is ``local`` (Ray starts a cluster). A SpecwiseError when there is nothing to join, as Ray's
    ConnectionError says after its own search."""
    env = os.environ if environ is None else environ
    given = env.get("RAY_ADDRESS", "")
    if given == "local":
        return None
    if given and given != "auto":
        return given, "in RAY_ADDRESS"
    alive = sorted(running)
    path = ray_address_file(env)
    try:
        recorded = path.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        recorded = None
    if recorded is not None and len(alive) != 1:
        return recorded, f"recorded in {path}"
    if alive:
        return alive[0], "of a Ray running on this machine"
    raise SpecwiseError(
        f"--executor ray:auto: no Ray cluster to join: RAY_ADDRESS is not set, {path} does not exist and no Ray "
        "runs on this machine; start one ('ray start --head') or give its address (ray:HOST:PORT)"
    )


def _running_gcs() -> frozenset[str]:
    """The GCS addresses of the raylets running on this machine, found as ``ray.init`` finds them for ``auto``
    (a scan of the processes, ``ray/_private/services.py``, ``find_gcs_addresses``); none if that is not there."""
    _import_ray("auto")
    try:
        from ray._private import services

        return frozenset(services.find_gcs_addresses())
    except Exception:  # a Ray without it: the recorded address decides, as in Rays before the scan
        return frozenset()


def check_reachable(address: str, timeout_s: float = 5.0, running: Callable[[], Iterable[str]] | None = None) -> None:
    """A TCP connection to the head first: ``ray.init`` retries an address where nothing listens for many minutes
    (a warning every few seconds) before it gives up. For ``auto``, the address Ray resolves it to
    (:func:`resolve_auto`; ``running`` finds the Rays on this machine, :func:`_running_gcs` unless given), named
    with where it came from: a ``ray_current_cluster`` left by a cluster that has stopped names a dead port."""
    flag, source, hint = f"--executor ray:{address}", "", "is the cluster's head running ('ray start --head')?"
    if address == "auto":
        found = resolve_auto(running=(running or _running_gcs)())
        if found is None:  # RAY_ADDRESS=local: Ray starts a cluster
            return
        address, source = found[0], f", the address {found[1]}"
        if found[1].startswith("recorded"):
            hint = "a cluster that has stopped leaves it behind ('ray stop' removes it; 'ray start --head' starts one)"
    target = _host_port(address)
    if target is None:  # a scheme Ray's client builders take (RAY_ADDRESS=anyscale://...): Ray checks it
        return
    try:
        socket.create_connection(target, timeout=timeout_s).close()
    except OSError as exc:
        raise SpecwiseError(
            f"{flag}: nothing answers at {target[0]}:{target[1]} ({exc.strerror or exc}){source}; {hint}"
        ) from None


def _loopback(address: str | None) -> bool:
    """No address (a cluster started here) or one whose host is this machine's loopback."""
    if address is None:
        return True
    return is_loopback(address.removeprefix("ray://").rpartition(":")[0].strip("[]"))


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

    def map(
        self, fn: Callable[[J], R], jobs: Sequence[J], progress: Progress | None = None, into: list[R] | None = None
    ) -> list[R]:
        results: list[R] = into if into is not None else []
        if not jobs:
            return results
        ray = self._connect()
        task = ray.remote(_apply)  # not ray.remote(fn): that takes only Python functions (no builtins, partials)
        fn_ref = ray.put(fn)
        refs = [task.remote(fn_ref, job) for job in jobs]
        for i, ref in enumerate(refs, start=1):
            results.append(ray.get(ref))
            if progress:
                progress(i, len(jobs))
        return results

    def close(self) -> None:
        if self._initialised and self._ray is not None:
            self._ray.shutdown()
        self._ray, self._initialised = None, False
