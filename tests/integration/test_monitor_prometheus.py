"""--prometheus mode against a real Prometheus server (Debian's `prometheus`, started here on loopback scraping
specwise's mock vLLM exporter every second): the same acceptance as scraping the server directly."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from specwise.cli import main
from specwise.loadgen.launcher import free_port
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.monitor.loop import scrape
from specwise.monitor.prometheus_source import discover_instances, fleet_window
from specwise.monitor.window import window_stats
from tests.integration.prometheus import running_prometheus

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_prometheus_mode_equals_direct_scrape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with (
        MockServer(MockBehaviour(ttft_s=0.0, chunk_interval_s=0.0, tokens_per_chunk=3)) as mock,
        running_prometheus(tmp_path, [mock.url.removeprefix("http://")]) as url,
    ):
        instance = mock.url.removeprefix("http://")
        assert discover_instances(url) == [instance]
        before = scrape(mock.url + "/metrics", 5)
        for i in range(40):
            body = {"model": "m", "prompt": "x", "max_tokens": 7 + i % 9}
            httpx.post(mock.url + "/v1/completions", json=body, timeout=10)
        after = scrape(mock.url + "/metrics", 5)
        direct = window_stats(before, after, 10.0)
        deadline = time.monotonic() + 30
        while True:  # Prometheus' latest sample lags by up to one scrape interval
            seen = httpx.get(url + "/api/v1/query", params={"query": "vllm:spec_decode_num_drafts_total"}).json()
            if float(seen["data"]["result"][0]["value"][1]) == mock.state.drafts or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        [row] = fleet_window(url, 60.0, time.time()).replicas
        assert direct.acceptance_rate is not None and direct.acceptance_rate > 0
        assert (row.instance, row.model_name) == (instance, "mock")
        assert row.acceptance_rate == pytest.approx(direct.acceptance_rate, rel=1e-9)
        assert row.mean_acceptance_length == pytest.approx(direct.mean_acceptance_length, rel=1e-9)

        # the CLI path: the replica reported under Prometheus' name for it
        capsys.readouterr()
        assert main(["monitor", "--prometheus", url, "--once", "--json", "--instance", instance]) in (0, 1)
        doc = json.loads(capsys.readouterr().out)
        assert [r["instance"] for r in doc["replicas"]] == [instance]
        assert doc["models"][0]["model_name"] == "mock"


def test_cli_prometheus_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    assert main(["monitor", "--prometheus", f"http://127.0.0.1:{port}", "--once"]) == 2
    err = capsys.readouterr().err.strip()
    assert "Prometheus query failed" in err and len(err.splitlines()) == 1
    assert main(["monitor", "--prometheus", "http://x:9090", "--url", "http://y/metrics", "--once"]) == 2
    assert "not both" in capsys.readouterr().err
