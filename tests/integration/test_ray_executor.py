"""Sweeps on Ray (issue 15): ``--executor ray`` (a cluster specwise starts, loopback only) and ``--executor
ray:127.0.0.1:PORT`` (a cluster started beside it with ``ray start --head``) give byte-for-byte the JSON of the
local process pool for simulate and validate; the cluster's servers listen on 127.0.0.1 only; a cluster specwise
joined is still up afterwards. Needs ``pip install 'specwise[ray]'`` (``make install`` installs it)."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specwise.loadgen.launcher import free_port
from tests.child_env import child_env
from tests.missing import missing_dependency

pytestmark = [pytest.mark.slow, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]
SIMULATE = ["simulate", "--scenario", str(ROOT / "examples" / "llama70b-ngram.toml"), "--json", "--num-requests", "200"]
VALIDATE = ["validate", "--json"]
RUN_TIMEOUT_S = 300


@pytest.fixture(autouse=True)
def _ray_installed() -> None:
    if importlib.util.find_spec("ray") is None:
        missing_dependency("ray is not installed: pip install 'specwise[ray]' (make install installs it)")


def _env(home: Path, **extra: str) -> dict[str, str]:
    """This checkout's src first (Ray's workers import specwise from it); a scratch HOME for Ray's token file."""
    env = child_env(HOME=str(home), RAY_USAGE_STATS_ENABLED="0", **extra)
    env.pop("RAY_ADDRESS", None)
    return env


def _specwise(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "specwise.cli", *args], env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return done.stdout


def test_ray_started_here_gives_the_local_results(tmp_path: Path) -> None:
    env = _env(tmp_path)
    for command in (SIMULATE, VALIDATE):
        local = _specwise([*command, "--executor", "local"], env)
        on_ray = _specwise([*command, "--executor", "ray", "--processes", "2"], env)
        assert on_ray == local  # the same JSON, byte for byte
        assert json.loads(on_ray)
    assert len(json.loads(local)["records"]) > 600  # validate: the whole evidence set


def _listening(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp{,6} write them) of the sockets listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


LOOPBACK_HEX = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}
PORTS_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from test_ray_executor import _listening
from specwise.executors import ExecutorSpec, open_executor
with open_executor(ExecutorSpec("ray"), 2) as executor:
    assert executor.map(abs, [-3, 4]) == [3, 4]
    import ray
    node = ray.nodes()[0]
    gcs_port = int(ray.get_runtime_context().gcs_address.rpartition(":")[2])
    ports = [gcs_port, node["NodeManagerPort"], node["ObjectManagerPort"]]
    print(json.dumps({"ip": node["NodeManagerAddress"], "listening": {p: sorted(_listening(p)) for p in ports}}))
"""


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp")
def test_ray_started_here_listens_on_loopback_only(tmp_path: Path) -> None:
    """The cluster ``--executor ray`` starts: its node address is 127.0.0.1 and its GCS, raylet and object manager
    listen there only (Ray's default would be every interface)."""
    done = subprocess.run(
        [sys.executable, "-c", PORTS_SCRIPT, str(Path(__file__).parent)],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info["ip"] == "127.0.0.1"
    assert len(info["listening"]) == 3
    for port, addresses in info["listening"].items():
        assert addresses and set(addresses) <= LOOPBACK_HEX, (port, addresses)


@pytest.fixture
def ray_head(tmp_path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """``ray start --head --block`` on 127.0.0.1:PORT with token authentication, stopped by its pid; the env a
    driver needs to join it."""
    port = free_port()
    # The head and the driver share a token as any Ray cluster with token authentication (Ray's default) does.
    env = _env(tmp_path, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    head_env = {**env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # the head on 127.0.0.1 only
    ray = Path(sys.executable).parent / "ray"
    args = [str(ray), "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=2"]
    args += ["--include-dashboard=false", "--disable-usage-stats", "--block"]
    log = (tmp_path / "ray-head.log").open("w")
    head = subprocess.Popen(args, env=head_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not _answers(port):
            assert head.poll() is None, (tmp_path / "ray-head.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "ray start --head did not listen within 90 s"
            time.sleep(0.5)
        yield port, env
    finally:
        head.send_signal(signal.SIGTERM)  # --block: Ray drains and stops the processes it started
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)  # its own session: only what this fixture started
            head.wait(timeout=10)
        log.close()


def _answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def test_ray_address_gives_the_local_results_and_leaves_the_cluster_up(ray_head: tuple[int, dict[str, str]]) -> None:
    port, env = ray_head
    assert _listening(port) and _listening(port) <= LOOPBACK_HEX  # the head's GCS: loopback only
    for command in (SIMULATE, [*VALIDATE, "--family", "vllm-blog-p-eagle-2026", "--family", "vllm-issues"]):
        local = _specwise([*command, "--executor", "local"], env)
        assert _specwise([*command, "--executor", f"ray:127.0.0.1:{port}"], env) == local
    assert _answers(port)  # specwise disconnected; the cluster it joined is still up
