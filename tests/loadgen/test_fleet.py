"""A fleet behind a router: two mock replicas that accept differently behind a round-robin proxy.

With one ``--metrics-url`` per replica, the level's pooled counts are the sum of each mock's own counters and each
replica's reading is that mock's; with the proxy's /metrics alone, bench says the URL reaches more than one server
(never "restarted"). Loopback only; each run is a few hundred milliseconds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.loadgen.fleet import pool_readings, reaches_many_servers
from specwise.loadgen.mock_server import MockBehaviour, MockServer, MockState
from specwise.loadgen.plan import RunConfig
from tests.router import round_robin


@contextmanager
def _fleet(*behaviours: MockBehaviour) -> Iterator[tuple[str, list[MockServer]]]:
    mocks = [MockServer(b) for b in behaviours]
    for m in mocks:
        m.__enter__()
    try:
        with round_robin([m.url for m in mocks]) as proxy:
            yield proxy, mocks
    finally:
        for m in mocks:
            m.__exit__()


# k = 4 on both; 16 tokens per request. Replica 0: 2-token chunks (1 accepted of 4 per step);
# replica 1: 5-token chunks (all 4 accepted).
_LOW, _HIGH = MockBehaviour(tokens_per_chunk=2), MockBehaviour(tokens_per_chunk=5)


def _bench(tmp_path: Path, proxy: str, metrics: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    argv = ["bench", "--url", proxy, "--model", "mock", "--rates", "200", "--requests-per-level", "12"]
    argv += ["--max-tokens", "16", "--db", str(tmp_path / "f.sqlite"), "--run-id", "fleet", "--json"]
    for url in metrics:
        argv += ["--metrics-url", url]
    assert main(argv) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _own(st: MockState) -> tuple[int, int, int]:
    return st.drafts, st.draft_tokens, st.accepted


def _read(sd: dict[str, Any]) -> tuple[float, float, float]:
    return sd["spec_decode_num_drafts"], sd["spec_decode_draft_tokens"], sd["spec_decode_accepted_tokens"]


def test_per_replica_metrics_pool_to_the_sum_of_each_replicas_counters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _fleet(_LOW, _HIGH) as (proxy, mocks):
        doc = _bench(tmp_path, proxy, [m.url + "/metrics" for m in mocks], capsys)
        own = [_own(m.state) for m in mocks]
    (level,) = doc["levels"]
    assert level["requests"] == 12 and level["failed"] == 0
    assert not level["counter_reset"] and level["scrape_errors"] == []
    replicas = level["replicas"]
    assert [_read(r["spec_decode"]) for r in replicas] == [tuple(map(float, o)) for o in own]
    assert [r["counter_reset"] for r in replicas] == [False, False]
    pooled = level["spec_decode"]
    assert _read(pooled) == tuple(float(a + b) for a, b in zip(*own, strict=True))
    assert own[0][0] > 0 and own[1][0] > 0  # the proxy spread the requests over both
    assert replicas[0]["spec_decode"]["spec_decode_acceptance_rate"] < 0.3  # 1 of 4, and 0 on a 1-token tail
    assert replicas[1]["spec_decode"]["spec_decode_acceptance_rate"] == pytest.approx(1.0)
    drafts, draft_tokens, accepted = _read(pooled)
    assert pooled["spec_decode_acceptance_rate"] == pytest.approx(accepted / draft_tokens)
    assert pooled["spec_decode_acceptance_length"] == pytest.approx(1 + accepted / drafts)


def test_one_metrics_url_through_the_router_is_named_not_called_a_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _fleet(_LOW, _HIGH) as (proxy, _):
        doc = _bench(tmp_path, proxy, [proxy + "/metrics"], capsys)
    (level,) = doc["levels"]
    assert level["spec_decode"] is None and not level["counter_reset"]
    assert any("reaches more than one server" in e for e in level["scrape_errors"])
    assert not any("restart" in e for e in level["scrape_errors"])


def test_a_replica_restart_is_that_replicas_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # replica 1's third /metrics (before, probe, after) first resets its counters: a restart during the level
    with _fleet(_LOW, MockBehaviour(tokens_per_chunk=5, reset_at_scrape=3)) as (proxy, mocks):
        doc = _bench(tmp_path, proxy, [m.url + "/metrics" for m in mocks], capsys)
    (level,) = doc["levels"]
    assert level["counter_reset"]
    assert [r["counter_reset"] for r in level["replicas"]] == [False, True]
    notes = [e for e in level["scrape_errors"] if "restarted" in e]
    assert len(notes) == 1 and notes[0].startswith("replica 1 ")
    assert not any("more than one server" in e for e in level["scrape_errors"])


def test_fleet_text_view_lists_each_replica(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with _fleet(_LOW, _HIGH) as (proxy, mocks):
        argv = ["bench", "--url", proxy, "--model", "mock", "--rates", "200", "--requests-per-level", "6"]
        argv += ["--db", str(tmp_path / "t.sqlite"), "--max-tokens", "16"]
        for m in mocks:
            argv += ["--metrics-url", m.url.replace("http://", "http://u:pw@") + "/metrics"]
        assert main(argv) == 0
    out = capsys.readouterr().out
    assert "replica 0 http://***@127.0.0.1" in out and "replica 1 " in out and "pw" not in out


def test_stored_single_metrics_url_config_still_reads() -> None:
    old = {"url": "http://h:1", "model": "m", "prompts": [], "metrics_url": "http://h:1/metrics"}
    assert RunConfig.from_json(old).metrics_urls == ("http://h:1/metrics",)
    assert RunConfig.from_json({**old, "metrics_url": None}).metrics_urls == ()
    fleet = RunConfig("http://u:p@h:1", "m", (), metrics_urls=("http://u:p@a:1/metrics", "http://b:1/metrics"))
    stored = fleet.redacted().to_json()
    assert stored["metrics_urls"] == ["http://***@a:1/metrics", "http://b:1/metrics"] and "metrics_url" not in stored
    assert RunConfig.from_json(stored).metrics_urls == ("http://***@a:1/metrics", "http://b:1/metrics")


def test_pooling_helpers() -> None:
    assert pool_readings([]) is None
    assert not reaches_many_servers(None, None, None)


def _layout(text: str) -> list[str]:
    """The spec-decode lines of a /metrics page, sample values and timestamps left out."""
    lines = [ln for ln in text.splitlines() if "spec_decode" in ln]
    return [ln if ln.startswith("#") else ln.rpartition(" ")[0] for ln in lines]


def test_mock_metrics_page_is_laid_out_as_vllms() -> None:
    """The mock's counters, their ``_created`` births (per position too) and the labels, line for line as a real
    vLLM 0.32 CPU server with n-gram k=4 wrote them (the fixture); a router's /metrics is told apart by these."""
    vllm = (Path(__file__).resolve().parents[1] / "fixtures" / "vllm_metrics" / "ngram_after.txt").read_text()
    with MockServer(MockBehaviour(model_name="smollm2")) as server:
        mock = server.httpd.metrics_text()
    assert _layout(mock) == _layout(vllm)
    assert sum("_created{" in ln for ln in _layout(mock)) == 7


def test_one_metrics_url_reaching_replicas_under_other_model_names_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Series under other labels are not new to the level: taken as such, one replica's lifetime counts passed for
    the fleet's (replica a's 48 drafts of the 66 made), without a word."""
    low, high = MockBehaviour(tokens_per_chunk=2, model_name="a"), MockBehaviour(tokens_per_chunk=5, model_name="b")
    with _fleet(low, high) as (proxy, _):
        doc = _bench(tmp_path, proxy, [proxy + "/metrics"], capsys)
    (level,) = doc["levels"]
    assert level["spec_decode"] is None and not level["counter_reset"]
    assert any("reaches more than one server" in e for e in level["scrape_errors"])


def test_config_stored_before_the_unit_names_still_reads() -> None:
    """A run stored with ``timeout``/``slo_ttft``/``slo_tpot`` (before they said their unit) resumes with the same
    values under the new names; what is stored now uses the new names only."""
    old = {"url": "http://h:1", "model": "m", "prompts": [], "timeout": 7.5, "slo_ttft": 0.5, "slo_tpot": 0.05}
    config = RunConfig.from_json(old)
    assert (config.request_timeout_s, config.slo_ttft_s, config.slo_tpot_s) == (7.5, 0.5, 0.05)
    stored = config.to_json()
    assert {"timeout", "slo_ttft", "slo_tpot"}.isdisjoint(stored)
    assert RunConfig.from_json(stored) == config


def test_a_run_stored_under_the_old_names_resumes_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench --resume`` of a run stored before the fields said their unit: its timeout and SLOs are the ones
    used (review H #11); the stored configuration still reads back with them."""
    import json

    from specwise.loadgen.mock_server import MockServer
    from specwise.loadgen.plan import PromptItem
    from specwise.loadgen.store import ResultStore

    db = tmp_path / "old.sqlite"
    with MockServer() as server:
        config = RunConfig(
            url=server.url,
            model="mock",
            prompts=(PromptItem("hello there"),) * 4,
            rates=(20.0,),
            requests_per_level=4,
            max_tokens=8,
            metrics_urls=(server.url + "/metrics",),
            request_timeout_s=7.5,
            slo_ttft_s=5.0,
            slo_tpot_s=1.0,
        ).to_json()
        for new, old in (("request_timeout_s", "timeout"), ("slo_ttft_s", "slo_ttft"), ("slo_tpot_s", "slo_tpot")):
            config[old] = config.pop(new)
        store = ResultStore(db)
        store.create_run("old", 0.0, config)
        store.close()
        assert main(["bench", "--url", server.url, "--resume", "old", "--db", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["levels"][0]["requests"] == 4
    assert doc["levels"][0]["goodput_per_s"] is not None  # the stored SLOs were applied
    store = ResultStore(db)
    try:
        stored = store.run_config("old")
    finally:
        store.close()
    back = RunConfig.from_json(stored)
    assert (back.request_timeout_s, back.slo_ttft_s, back.slo_tpot_s) == (7.5, 5.0, 1.0)
