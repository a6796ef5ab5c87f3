"""Issue 15 against the real Prometheus (Debian's ``prometheus``) scraping two specwise mock vLLM servers every
second: one accepts 1 of its 4 draft tokens per step (acceptance ~0.23), one accepts up to 4 (~0.8).

* the rules from ``specwise export prometheus-rules --for 2s`` loaded into Prometheus: ``SpecDecodeLowAcceptance``
  fires for the low-acceptance replica, within a bounded time, and never for the healthy one;
* ``monitor --prometheus --once --json``: per-instance rows whose acceptance rate and AL are the mocks' own
  counter-delta ratios, and a per-model roll-up equal to the sum of the rows (vLLM's definitions over the sums).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from specwise.cli import main
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.monitor.fleet import FAMILIES
from specwise.monitor.store import MonitorStore
from tests.integration.prometheus import running_prometheus

pytestmark = [pytest.mark.slow, pytest.mark.integration]
LOW, HEALTHY = 2, 5  # tokens per verification step of each mock (k=4): 1 and 4 drafts accepted


class Fleet:
    def __init__(self, prom: str, low: MockServer, healthy: MockServer, workdir: Path) -> None:
        self.prom, self.low, self.healthy, self.workdir = prom, low, healthy, workdir
        self.started = time.monotonic()

    @staticmethod
    def instance(mock: MockServer) -> str:
        return mock.url.removeprefix("http://")

    def drive(self, requests: int) -> None:
        """``requests`` completions to each mock, both at once."""

        def load(mock: MockServer) -> None:
            with httpx.Client(timeout=10) as client:
                for i in range(requests):
                    body = {"model": "mock", "prompt": "x", "max_tokens": 9 + i % 7}
                    client.post(mock.url + "/v1/completions", json=body).raise_for_status()

        threads = [threading.Thread(target=load, args=(m,)) for m in (self.low, self.healthy)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)


@pytest.fixture
def fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Fleet]:
    rules = tmp_path / "specwise-rules.yml"
    assert main(["export", "prometheus-rules", "--for", "2s", "--out", str(rules)]) == 0
    fast = dict(ttft_s=0.0, chunk_interval_s=0.0)
    with (
        MockServer(MockBehaviour(tokens_per_chunk=LOW, **fast)) as low,  # type: ignore[arg-type]
        MockServer(MockBehaviour(tokens_per_chunk=HEALTHY, **fast)) as healthy,  # type: ignore[arg-type]
        running_prometheus(tmp_path, [Fleet.instance(low), Fleet.instance(healthy)], [rules]) as prom,
    ):
        capsys.readouterr()
        yield Fleet(prom, low, healthy, tmp_path)


def _alerts(prom: str) -> list[dict[str, object]]:
    body = httpx.get(prom + "/api/v1/alerts", timeout=5).json()
    alerts: list[dict[str, object]] = body["data"]["alerts"]
    return alerts


def test_low_acceptance_alert_fires_in_real_prometheus(fleet: Fleet) -> None:
    started = time.monotonic()
    fleet.drive(30)
    firing_s = None
    seen: list[dict[str, object]] = []
    while time.monotonic() - started < 90:
        seen += _alerts(fleet.prom)
        firing = [a for a in seen if a["state"] == "firing" and a["labels"]["alertname"] == "SpecDecodeLowAcceptance"]  # type: ignore[index]
        if firing:
            firing_s = time.monotonic() - started
            break
        fleet.drive(2)  # keep the counters moving, as a live server's would
        time.sleep(0.5)
    assert firing_s is not None, f"no SpecDecodeLowAcceptance within 90 s; alerts seen: {seen[-4:]}"
    print(f"SpecDecodeLowAcceptance firing {firing_s:.1f} s after the traffic started")
    instances = {a["labels"]["instance"] for a in seen if a["labels"]["alertname"] == "SpecDecodeLowAcceptance"}  # type: ignore[index]
    assert instances == {fleet.instance(fleet.low)}, "the healthy replica must never alert"
    assert all(a["labels"]["model_name"] == "mock" for a in seen)  # type: ignore[index]


def _caught_up(fleet: Fleet) -> None:
    """Wait until Prometheus' latest samples show the mocks' counters as they are now (traffic has stopped)."""
    want = {fleet.instance(m): float(m.state.drafts) for m in (fleet.low, fleet.healthy)}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = httpx.get(
            fleet.prom + "/api/v1/query", params={"query": "vllm:spec_decode_num_drafts_total"}, timeout=5
        ).json()["data"]["result"]
        if {r["metric"]["instance"]: float(r["value"][1]) for r in rows} == want:
            return
        time.sleep(0.3)
    pytest.fail("prometheus never caught up with the mocks' counters")


def test_monitor_fleet_rollup_equals_the_mocks_counters(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    # increase() extrapolates a window's last sample to its end (up to one scrape interval): with ~25 s of
    # samples in the window that is under 5% per replica, and alike for every counter of a replica
    time.sleep(max(0.0, 20.0 - (time.monotonic() - fleet.started)))
    fleet.drive(40)
    _caught_up(fleet)
    time.sleep(1.5)  # one more scrape at the final values: the window's last sample is flat
    code = main(["monitor", "--prometheus", fleet.prom, "--once", "--json", "--window", "120", "--lookback", "2m"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1  # the low-acceptance replica alerts
    assert doc["queries"] == 2 * len(FAMILIES)  # each family, once for the window and once (query_range) for history
    rows = {r["instance"]: r for r in doc["replicas"]}
    own = {fleet.instance(m): m.state for m in (fleet.low, fleet.healthy)}
    assert set(rows) == set(own)
    for instance, st in own.items():
        r = rows[instance]
        with capsys.disabled():
            print(
                f"{instance}: mock drafts/draft/accepted {st.drafts}/{st.draft_tokens}/{st.accepted}; Prometheus "
                f"increase {r['drafts']:.2f}/{r['draft_tokens']:.2f}/{r['accepted_tokens']:.2f}; "
                f"acceptance {r['acceptance_rate']:.4f} AL {r['mean_acceptance_length']:.4f}"
            )
        # increase() extrapolates the last sample to the window's end: counts scale alike, the ratios are exact
        scale = r["drafts"] / st.drafts
        assert 1.0 <= scale < 1.06
        assert r["draft_tokens"] == pytest.approx(st.draft_tokens * scale, rel=1e-9)
        assert r["accepted_tokens"] == pytest.approx(st.accepted * scale, rel=1e-9)
        assert r["acceptance_rate"] == pytest.approx(st.accepted / st.draft_tokens, rel=1e-9)
        assert r["mean_acceptance_length"] == pytest.approx(1 + st.accepted / st.drafts, rel=1e-9)
        k = fleet.low.behaviour.num_speculative_tokens
        assert r["accepted_per_position"] == pytest.approx([p * scale for p in st.accepted_per_pos[:k]], rel=1e-9)
    [model] = doc["models"]
    assert model["model_name"] == "mock" and model["replicas"] == 2
    for key in ("drafts", "draft_tokens", "accepted_tokens"):
        assert model[key] == pytest.approx(sum(r[key] for r in rows.values()), rel=1e-12)
    assert model["acceptance_rate"] == pytest.approx(model["accepted_tokens"] / model["draft_tokens"], rel=1e-12)
    pooled = sum(s.accepted for s in own.values()) / sum(s.draft_tokens for s in own.values())
    with capsys.disabled():
        print(f"pooled acceptance: monitor {model['acceptance_rate']:.4f}, mocks' own counters {pooled:.4f}")
    assert model["acceptance_rate"] == pytest.approx(pooled, abs=0.01)
    assert model["worst"][0]["instance"] == fleet.instance(fleet.low)
    assert [a["instance"] for a in doc["alerts"] if a["rule"] == "low_acceptance_rate"] == [fleet.instance(fleet.low)]
    assert doc["history"] and doc["history"][-1]["models"][0]["model_name"] == "mock"

    # the terminal view names the replicas as Prometheus does, with the roll-up first
    assert main(["monitor", "--prometheus", fleet.prom, "--once", "--window", "120"]) == 1
    out = capsys.readouterr().out
    assert "fleet via" in out and fleet.instance(fleet.low) in out and "#instance=" not in out

    # loop mode: --lookback back-fills windows from before the monitor started into the history database, and the
    # low replica's alert opens at a back-filled time
    db = fleet.workdir / "monitor.sqlite"
    started = time.time()
    argv = ["monitor", "--prometheus", fleet.prom, "--lookback", "1m", "--interval", "1", "--window", "10"]
    assert main([*argv, "--duration", "1.5", "--db", str(db)]) == 1
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    opened = [e for e in events if e["event"] == "alert" and e["rule"] == "low_acceptance_rate"]
    assert [e["url"] for e in opened] == [fleet.instance(fleet.low)]
    assert opened[0]["at"] < started
    store = MonitorStore(db, 86400.0)
    try:
        ends = [t for t, _ in store.windows(fleet.instance(fleet.low))]
    finally:
        store.close()
    assert min(ends) < started - 20 and max(ends) >= started
