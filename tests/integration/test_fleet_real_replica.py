"""Issue 15, bench for fleets with a real replica: a vLLM CPU server (SmolLM2-135M, n-gram k=4) and a specwise mock
(k=4, one of its 4 drafts accepted per step) serving the same model name behind a round-robin router.

* one ``--metrics-url`` per replica: each replica's reading, summed over the levels, is that replica's own counter
  deltas (its /metrics scraped directly before and after the run, parsed by :mod:`specwise.metrics`); each level's
  pooled reading is the sum of the replicas' (vLLM's definitions over the sums); no restart is reported; the two
  replicas accept differently, so the pooling shows;
* the router's /metrics alone: bench names a URL that reaches more than one server (vLLM's ``..._created`` against
  the mock's), never a restart, and reports no acceptance.

Slow (a vLLM server starts, ~1 min on 2 cores); loopback only; every call time-bounded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from specwise.cli import main
from specwise.loadgen.client import ClientConfig, served_root
from specwise.loadgen.launcher import EngineServer, LaunchFile, ServerConfig
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.metrics import parse_exposition, spec_decode_counters
from tests.integration.engine import ENV, EXTRA, MODEL, PYTHON, require_engine
from tests.router import round_robin

pytestmark = [pytest.mark.slow, pytest.mark.integration]
SERVED = "smollm2"
NGRAM = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
K = 4
MAX_TOKENS = 32
PER_LEVEL = 6  # requests per level: 3 to each replica, in turn


@dataclass(frozen=True)
class Fleet:
    proxy: str
    real: str
    mock: MockServer

    @property
    def replicas(self) -> list[str]:
        return [self.real, self.mock.url]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    require_engine()
    launch = LaunchFile(
        model=str(MODEL),
        served_model_name=SERVED,
        python=str(PYTHON),
        configs=(ServerConfig("ngram", NGRAM),),
        extra_args=EXTRA,
        env=ENV,
        startup_timeout_s=300,
    )
    log = tmp_path_factory.mktemp("fleet") / "vllm.log"
    mock = MockBehaviour(ttft_s=0.0, chunk_interval_s=0.0, tokens_per_chunk=2, model_name=SERVED)
    with (
        EngineServer(launch, launch.configs[0], log) as real,
        MockServer(mock) as mocked,
        round_robin([real, mocked.url], timeout_s=120) as proxy,
    ):
        yield Fleet(proxy, real, mocked)


def _counts(url: str) -> tuple[float, ...]:
    """drafts, draft tokens, accepted tokens, then accepted per position: the replica's own counters now."""
    counters = spec_decode_counters(parse_exposition(httpx.get(url + "/metrics", timeout=10).text))
    ((_, c),) = counters.items()  # one model, one engine
    return (c.drafts, c.draft_tokens, c.accepted_tokens, *c.accepted_per_position)


def _bench(fleet: Fleet, tmp_path: Path, metrics: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    argv = ["bench", "--url", fleet.proxy, "--model", SERVED, "--rates", "2,8", "--requests-per-level", str(PER_LEVEL)]
    argv += ["--max-tokens", str(MAX_TOKENS), "--ignore-eos", "--request-timeout", "120", "--json"]
    argv += ["--db", str(tmp_path / "fleet.sqlite"), "--run-id", "fleet"]
    for url in metrics:
        argv += ["--metrics-url", url]
    capsys.readouterr()
    assert main(argv) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _reading(sd: dict[str, Any]) -> tuple[float, ...]:
    """A JSON reading back as counts (per-position rates x drafts; none without drafts)."""
    drafts = sd["spec_decode_num_drafts"]
    per_pos = [r * drafts for r in sd["spec_decode_per_position_acceptance_rates"]] or [0.0] * K
    return (drafts, sd["spec_decode_draft_tokens"], sd["spec_decode_accepted_tokens"], *per_pos)


def _sum(rows: list[tuple[float, ...]]) -> tuple[float, ...]:
    return tuple(sum(col) for col in zip(*rows, strict=True))


def test_each_replica_reads_its_own_counters_and_the_pool_is_their_sum(
    fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = [_counts(url) for url in fleet.replicas]
    doc = _bench(fleet, tmp_path, [url + "/metrics" for url in fleet.replicas], capsys)
    after = [_counts(url) for url in fleet.replicas]
    own = [tuple(a - b for a, b in zip(x, y, strict=True)) for x, y in zip(after, before, strict=True)]
    levels = doc["levels"]
    assert len(levels) == 2
    for level in levels:
        assert level["requests"] == PER_LEVEL and level["failed"] == 0
        assert not level["counter_reset"] and level["scrape_errors"] == []  # no restart, nothing else to say
        assert [r["url"] for r in level["replicas"]] == [url + "/metrics" for url in fleet.replicas]
        assert [r["counter_reset"] for r in level["replicas"]] == [False, False]
        per_replica = [_reading(r["spec_decode"]) for r in level["replicas"]]
        pooled = level["spec_decode"]
        assert _reading(pooled) == pytest.approx(_sum(per_replica))
        drafts, draft_tokens, accepted = _reading(pooled)[:3]
        assert pooled["spec_decode_acceptance_rate"] == pytest.approx(accepted / draft_tokens)
        assert pooled["spec_decode_acceptance_length"] == pytest.approx(1 + accepted / drafts)
    # each replica over the run: its readings summed over the levels are its own counters' deltas
    for i, mine in enumerate(own):
        read = _sum([_reading(level["replicas"][i]["spec_decode"]) for level in levels])
        assert read == pytest.approx(mine), f"replica {i}"
        assert mine[0] > 0 and mine[0] < mine[1] <= K * mine[0], f"replica {i} drafted"  # the router reached both
    rates = [mine[2] / mine[1] for mine in own]
    assert abs(rates[0] - rates[1]) > 0.05, rates  # the real replica accepts unlike the mock: pooling is visible
    mock_rate = (MAX_TOKENS - 2) // 2 / (K * ((MAX_TOKENS - 2) // 2 + 1))  # 2-token steps, then a 1-token tail
    assert rates[1] == pytest.approx(mock_rate)
    with capsys.disabled():  # the numbers for the record (pytest -s)
        print("\nfleet (drafts, draft tokens, accepted; acceptance, AL):", _numbers([*own, _sum(own)]))


def _numbers(rows: list[tuple[float, ...]]) -> str:
    return "; ".join(
        f"{name} {d:g}, {t:g}, {a:g}; {a / t:.3f}, {1 + a / d:.2f}"
        for name, (d, t, a, *_) in zip(("real", "mock", "pooled"), rows, strict=True)
    )


def test_the_routers_metrics_url_is_named_as_reaching_two_servers_not_a_restart(
    fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _bench(fleet, tmp_path, [fleet.proxy + "/metrics"], capsys)
    for level in doc["levels"]:
        assert level["failed"] == 0
        assert level["spec_decode"] is None and not level["counter_reset"] and "replicas" not in level
        assert any("reaches more than one server" in e for e in level["scrape_errors"]), level["scrape_errors"]
        assert not any("restart" in e for e in level["scrape_errors"])


def test_the_real_server_says_which_checkpoint_it_serves_under_its_alias(fleet: Fleet) -> None:
    """vLLM's GET /v1/models card for the served alias names the checkpoint it loaded (``root``): what bench records
    as ``model_root``, so that advise --bench matches an aliased server to the scenario's target."""
    cfg = ClientConfig(
        base_url=fleet.real, model=SERVED, endpoint="completions", api_key_env=None, request_timeout_s=30
    )
    assert served_root(cfg) == str(MODEL)
    assert served_root(replace(cfg, model="not-served")) is None
