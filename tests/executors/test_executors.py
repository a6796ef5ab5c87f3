"""The executor seam (issue 15, sweeps on Ray): ``--executor`` parsed in one place, the local pool's order and
cap, validate's batched replay equal to the serial one, and the one-line errors for a missing Ray or a wrong
address. Ray itself runs in the slow tier (tests/integration/test_ray_executor.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.evidence.records import all_records
from specwise.executors import LOCAL, ExecutorSpec, open_executor, parse_executor
from specwise.executors.local import LocalExecutor, pool_size
from specwise.executors.ray_cluster import check_reachable, ray_address_file, resolve_auto
from specwise.perfmodel.profiles import published_fit
from specwise.validate.predict import Models, Predictor, predict_all, series_batches
from tests.child_env import child_env

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "examples" / "llama70b-ngram.toml"


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("local", LOCAL),
        ("ray", ExecutorSpec("ray")),
        ("ray:auto", ExecutorSpec("ray", "auto")),
        ("ray:127.0.0.1:6379", ExecutorSpec("ray", "127.0.0.1:6379")),
        ("ray:head.cluster.internal:6379", ExecutorSpec("ray", "head.cluster.internal:6379")),
        ("ray:ray://10.0.0.5:10001", ExecutorSpec("ray", "ray://10.0.0.5:10001")),
        ("ray:[::1]:6379", ExecutorSpec("ray", "[::1]:6379")),
    ],
)
def test_executor_spec_parses(text: str, spec: ExecutorSpec) -> None:
    assert parse_executor(text) == spec
    assert parse_executor(str(spec)) == spec


@pytest.mark.parametrize(
    "text",
    ["", "dask", "RAY", "local:2", "ray:", "ray:host", "ray:host:0", "ray:host:65536", "ray:host:abc", "ray:http://h:1",
     "ray:h:1/path", "ray:user@h:1", "ray:ray://h"],
)  # fmt: skip
def test_executor_spec_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        parse_executor(text)


def test_bad_executor_is_one_usage_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--scenario", str(SCENARIO), "--executor", "dask"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--executor" in err and "'local', 'ray' or 'ray:ADDRESS'" in err and "\n" not in err


@pytest.mark.parametrize(
    ("jobs", "max_workers", "cores", "want"),
    [(10, None, 2, 2), (1, None, 16, 1), (3, 5000, 16, 3), (50, 5000, 2, 2), (10, 3, 16, 3), (0, None, 4, 1)],
)
def test_pool_is_capped_at_jobs_cores_and_max(jobs: int, max_workers: int | None, cores: int, want: int) -> None:
    assert pool_size(jobs, max_workers, cores) == want


def _late_first(x: int) -> tuple[int, int]:
    """Earlier jobs finish later (so a pool that returned in finishing order would be caught)."""
    time.sleep(0.05 * (4 - x))
    return x * x, os.getpid()


def test_local_executor_keeps_job_order_and_reports_progress() -> None:
    ticks: list[tuple[int, int]] = []
    got = LocalExecutor(2).map(_late_first, [0, 1, 2, 3], lambda done, total: ticks.append((done, total)))
    assert [square for square, _ in got] == [0, 1, 4, 9]
    assert ticks == [(1, 4), (2, 4), (3, 4), (4, 4)]
    pids = {pid for _, pid in got}
    if (os.cpu_count() or 1) >= 2:
        assert os.getpid() not in pids and 1 <= len(pids) <= 2  # worker processes, at most max_workers
    # One job never starts a pool, however many workers were allowed.
    assert LocalExecutor(5000).map(_late_first, [3]) == [(9, os.getpid())]


def test_validate_batched_on_a_pool_equals_serial() -> None:
    """A record's prediction depends on its own series only: whole series per batch on two processes give the
    serial predictions exactly (anchored series included)."""
    recs = all_records()
    series = list(dict.fromkeys(r.series for r in recs if r.family == "specdecode-bench"))[:10]
    sub = [r for r in recs if r.series in set(series) or r.family in ("plain-decoding-vllm", "vllm-issues")]
    fit = published_fit()
    p = Predictor(fit.profiles, Models("v2"), fit.first_given_match)
    serial = predict_all(sub, p)
    assert sum(x.status == "anchor" for x in serial) >= 2
    ticks: list[int] = []
    batched = predict_all(sub, p.fresh(), lambda done, total: ticks.append(done), LocalExecutor(2))
    assert batched == serial
    assert ticks == sorted(ticks) and ticks[-1] == len(sub)


def test_series_batches_keep_series_whole_and_cover_every_record() -> None:
    recs = all_records()[:200]
    batches = series_batches(recs, 4)
    assert 1 <= len(batches) <= 4
    assert sorted(i for b in batches for i in b) == list(range(len(recs)))
    owner = {recs[i].series: n for n, b in enumerate(batches) for i in b}
    assert all(recs[i].series in owner and owner[recs[i].series] == n for n, b in enumerate(batches) for i in b)
    assert series_batches(recs, 4) == batches  # deterministic


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--scenario", str(SCENARIO), "--json"],
        ["advise", "--scenario", str(ROOT / "examples" / "advise" / "summarize-low-qps.toml"), "--json"],
        ["validate", "--json", "--family", "vllm-issues"],
    ],
    ids=["simulate", "advise", "validate"],
)
def test_missing_ray_is_one_line_with_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as where the extra is not installed
    assert main([*argv, "--executor", "ray"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().endswith("pip install 'specwise[ray]'") and "\n" not in err.strip()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_ray_address_fails_at_once() -> None:
    port = _closed_port()
    t0 = time.monotonic()
    with pytest.raises(SpecwiseError, match=f"nothing answers at 127.0.0.1:{port}"):
        check_reachable(f"127.0.0.1:{port}")
    with pytest.raises(SpecwiseError, match="nothing answers"):
        check_reachable(f"ray://127.0.0.1:{port}")
    assert time.monotonic() - t0 < 5.0


def _stale_cluster_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, int]:
    """Ray's temp directory moved to ``tmp_path`` (the real /tmp/ray is never read), holding the record a stopped
    ``ray start --head`` leaves behind: a loopback port where nothing listens."""
    port = _closed_port()
    record = tmp_path / "ray" / "ray_current_cluster"
    record.parent.mkdir()
    record.write_text(f"127.0.0.1:{port}")
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return record, port


def test_auto_resolves_in_rays_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RAY_ADDRESS first; else the recorded cluster, unless exactly one Ray runs here; nothing: one line."""
    record, port = _stale_cluster_file(tmp_path, monkeypatch)
    assert ray_address_file() == record
    assert ray_address_file({"TMPDIR": "/x"}) == Path("/x/ray/ray_current_cluster" if sys.platform == "linux" else
                                                      "/tmp/ray/ray_current_cluster")  # fmt: skip
    recorded = (f"127.0.0.1:{port}", f"recorded in {record}")
    assert resolve_auto() == recorded
    assert resolve_auto(running=["10.0.0.9:6379", "10.0.0.8:6379"]) == recorded  # several running: the record
    assert resolve_auto(running=["10.0.0.9:6379"]) == ("10.0.0.9:6379", "of a Ray running on this machine")
    assert resolve_auto({**os.environ, "RAY_ADDRESS": "h:7"}) == ("h:7", "in RAY_ADDRESS")
    assert resolve_auto({**os.environ, "RAY_ADDRESS": "auto"}) == recorded
    assert resolve_auto({**os.environ, "RAY_ADDRESS": "local"}) is None  # Ray starts one: nothing to check
    record.unlink()
    with pytest.raises(SpecwiseError, match=f"no Ray cluster to join: RAY_ADDRESS is not set, {record} does not"):
        resolve_auto()


def test_auto_agrees_with_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What Ray's own resolution of ``auto`` gives, for a record, RAY_ADDRESS, and neither."""
    pytest.importorskip("ray")
    from ray._private import services

    record, port = _stale_cluster_file(tmp_path, monkeypatch)
    if services.find_gcs_addresses():
        pytest.skip("a Ray runs on this machine: Ray would join it, whatever the record says")
    assert resolve_auto()[0] == services.get_ray_address_from_environment("auto", None) == f"127.0.0.1:{port}"
    monkeypatch.setenv("RAY_ADDRESS", "10.1.2.3:6379")
    assert resolve_auto()[0] == services.get_ray_address_from_environment("auto", None) == "10.1.2.3:6379"
    monkeypatch.delenv("RAY_ADDRESS")
    record.unlink()
    with pytest.raises(ConnectionError):
        services.get_ray_address_from_environment("auto", None)
    with pytest.raises(SpecwiseError):
        resolve_auto()


def test_auto_with_a_stale_record_fails_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record, port = _stale_cluster_file(tmp_path, monkeypatch)
    t0 = time.monotonic()
    with pytest.raises(SpecwiseError) as info:
        check_reachable("auto", running=lambda: ())
    assert str(info.value).startswith(f"--executor ray:auto: nothing answers at 127.0.0.1:{port} (")
    assert f"the address recorded in {record}" in str(info.value) and "'ray stop'" in str(info.value)
    monkeypatch.setenv("RAY_ADDRESS", f"ray://127.0.0.1:{port}")
    with pytest.raises(SpecwiseError, match=f"nothing answers at 127.0.0.1:{port} .*, the address in RAY_ADDRESS"):
        check_reachable("auto", running=lambda: ())
    assert time.monotonic() - t0 < 5.0


def test_cli_auto_with_a_stale_record_exits_2_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The review's case, run as a user runs it: before, ``ray.init`` retried the dead address for minutes."""
    pytest.importorskip("ray")
    from ray._private import services

    record, port = _stale_cluster_file(tmp_path, monkeypatch)
    if services.find_gcs_addresses():
        pytest.skip("a Ray runs on this machine: Ray would join it, whatever the record says")
    env = child_env()
    argv = ["simulate", "--scenario", str(SCENARIO), "--num-requests", "10", "--executor", "ray:auto"]
    done = subprocess.run(
        [sys.executable, "-m", "specwise", *argv], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stdout == "" and done.stderr.count("\n") == 1
    assert f"nothing answers at 127.0.0.1:{port}" in done.stderr and str(record) in done.stderr


def test_local_spec_opens_a_local_pool() -> None:
    with open_executor(LOCAL, 3) as executor:
        assert isinstance(executor, LocalExecutor) and executor.max_workers == 3 and executor.keep_pool


def _pid(x: int) -> tuple[int, int]:
    time.sleep(0.02)
    return x, os.getpid()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a pool needs 2 cores here (one job or one core runs in-process)")
def test_a_kept_pool_serves_every_map_until_closed() -> None:
    """open_executor's local executor keeps one pool for its block: the same workers run every map (a fresh pool
    per map forks new ones each time, what bench/pool_reuse.py times), and leaving the block shuts it down."""
    with open_executor(LOCAL, 2) as executor:
        assert isinstance(executor, LocalExecutor)
        first = executor.map(_pid, list(range(6)))
        pool = executor._pool
        second = executor.map(_pid, list(range(6)))
        assert [x for x, _ in first] == [x for x, _ in second] == list(range(6))  # job order, both maps
        assert executor._pool is pool and pool is not None
        assert {p for _, p in second} <= {p for _, p in first}  # no new workers: the first map's
        assert os.getpid() not in {p for _, p in first}
        workers = list(pool._processes.values())
    assert executor._pool is None
    for proc in workers:  # shut down on leaving the block, not left to the interpreter's exit
        proc.join(timeout=5)
        assert not proc.is_alive()
    fresh = LocalExecutor(2)
    a, b = fresh.map(_pid, list(range(4))), fresh.map(_pid, list(range(4)))
    assert fresh._pool is None and not {p for _, p in a} & {p for _, p in b}  # a pool per map, each shut down
    # a closed kept executor starts a new pool on its next map
    executor.map(_pid, [0, 1])
    assert executor._pool is not None
    executor.close()
    assert executor._pool is None


def _fail_on_two(x: int) -> int:
    if x == 2:
        raise ValueError("job 2")
    return x


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a pool needs 2 cores here")
def test_a_kept_pool_is_dropped_when_a_map_fails() -> None:
    """An error in a job stops the kept pool's workers (as a fresh pool's) and the next map starts a new pool."""
    executor = LocalExecutor(2, keep_pool=True)
    with pytest.raises(ValueError, match="job 2"):
        executor.map(_fail_on_two, [0, 1, 2, 3])
    assert executor._pool is None
    assert executor.map(_fail_on_two, [0, 1, 3]) == [0, 1, 3]
    executor.close()


def test_a_kept_pool_is_as_wide_as_its_widest_map(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sized as a fresh pool would be (one worker per job and core), not at every core at once: a 2-job map on a
    4-core machine starts 2 workers, a 4-job map then a pool of 4, and a 2-job map after it reuses that one."""
    monkeypatch.setattr("specwise.executors.local.os.cpu_count", lambda: 4)
    executor = LocalExecutor(None, keep_pool=True)
    try:
        executor.map(_pid, [0, 1])
        narrow = executor._pool
        assert narrow is not None and executor._pool_workers == 2
        executor.map(_pid, [0, 1, 2, 3])
        wide = executor._pool
        assert wide is not None and wide is not narrow and executor._pool_workers == 4
        executor.map(_pid, [0, 1])
        assert executor._pool is wide
    finally:
        executor.close()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a pool needs 2 cores here")
def test_a_kept_pool_started_by_an_ended_thread_is_not_reused() -> None:
    """Code review s59: the workers' death signal follows the thread that started them; a kept pool started in a
    thread that has ended was broken (BrokenProcessPool) for the next map. A map from another thread starts its own."""
    import threading

    executor = LocalExecutor(2, keep_pool=True)
    try:
        worker = threading.Thread(target=executor.map, args=(_pid, [0, 1, 2]))
        worker.start()
        worker.join(30)
        assert executor.map(_pid, [0, 1, 2]) and [x for x, _ in executor.map(_pid, [3, 4])] == [3, 4]
    finally:
        executor.close()
