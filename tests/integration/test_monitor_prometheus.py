"""--prometheus mode against a real Prometheus server (Debian's `prometheus`, started here on loopback scraping
specwise's mock vLLM exporter every second): the same window numbers as scraping the server directly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from specwise.cli import main
from specwise.loadgen.launcher import free_port
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.metrics.exposition import Scrape
from specwise.monitor.loop import scrape
from specwise.monitor.prometheus_source import discover_instances, prometheus_scrape
from specwise.monitor.window import window_stats

pytestmark = [pytest.mark.slow, pytest.mark.integration]
DRAFTS = "vllm:spec_decode_num_drafts_total"


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, MockServer]]:
    exe = shutil.which("prometheus")
    if exe is None:
        if os.environ.get("SPECWISE_REQUIRE_SYSTEM_DEPS") == "1":
            pytest.fail("prometheus is not installed (scripts/install_system_deps.sh)")
        pytest.skip("prometheus is not installed")
    with MockServer(MockBehaviour(ttft_s=0.0, chunk_interval_s=0.0, tokens_per_chunk=3)) as mock:
        target = mock.url.removeprefix("http://")
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"scrape_configs:\n  - job_name: vllm\n    static_configs:\n      - targets: ['{target}']\n"
        )
        port = free_port()
        log = (tmp_path / "prometheus.log").open("wb")
        proc = subprocess.Popen(
            [
                exe,
                f"--config.file={cfg}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(url + "/-/ready", timeout=2).status_code == 200 and discover_instances(url):
                        break
                except Exception:
                    pass
                time.sleep(0.5)
            else:
                pytest.fail("prometheus did not become ready: " + (tmp_path / "prometheus.log").read_text()[-2000:])
            yield url, mock
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            log.close()


def _value(s: Scrape, name: str) -> float:
    return sum(x.value for x in s.named(name))


def _prom_when_caught_up(url: str, instance: str, direct: Scrape) -> Scrape:
    """Prometheus' latest sample lags by up to one scrape interval: wait until it shows what we scraped."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        prom = prometheus_scrape(url, instance)
        if _value(prom, DRAFTS) == _value(direct, DRAFTS):
            return prom
        time.sleep(0.3)
    pytest.fail("prometheus never caught up with the server's counters")


def test_prometheus_mode_equals_direct_scrape(
    prometheus: tuple[str, MockServer], capsys: pytest.CaptureFixture[str]
) -> None:
    url, mock = prometheus
    instance = discover_instances(url)[0]
    assert instance == mock.url.removeprefix("http://")
    metrics = mock.url + "/metrics"
    for i in range(3):  # some history before the window
        httpx.post(mock.url + "/v1/completions", json={"model": "m", "prompt": "x", "max_tokens": 5 + i}, timeout=10)
    before = scrape(metrics, 5)
    before_prom = _prom_when_caught_up(url, instance, before)
    for i in range(40):
        httpx.post(
            mock.url + "/v1/completions", json={"model": "m", "prompt": "x", "max_tokens": 7 + i % 9}, timeout=10
        )
    after = scrape(metrics, 5)
    after_prom = _prom_when_caught_up(url, instance, after)
    direct = window_stats(before, after, 10.0).to_dict()
    via_prom = window_stats(before_prom, after_prom, 10.0).to_dict()
    assert direct["acceptance_rate"] is not None and direct["acceptance_rate"] > 0
    assert via_prom == direct

    # the CLI path: discover the instance, evaluate one window, report it under Prometheus' name for it
    capsys.readouterr()
    assert main(["monitor", "--prometheus", url, "--once", "--json", "--interval", "0.5"]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)
    assert [s["url"] for s in doc["servers"]] == [f"{url}#instance={instance}"]
    assert "stats" in doc["servers"][0]


def test_cli_prometheus_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    assert main(["monitor", "--prometheus", f"http://127.0.0.1:{port}", "--once"]) == 2
    err = capsys.readouterr().err.strip()
    assert "Prometheus query failed" in err and len(err.splitlines()) == 1
    assert main(["monitor", "--prometheus", "http://x:9090", "--url", "http://y/metrics", "--once"]) == 2
    assert "not both" in capsys.readouterr().err
