"""Record real Prometheus HTTP API answers to the monitor's fleet queries (tests/fixtures/prometheus_api/).

Starts Debian's prometheus on loopback scraping two specwise mock vLLM servers every second (one accepting 1 of 4
draft tokens per step, one accepting all 4), sends 30 requests to each, and saves the answers of
``/api/v1/query`` and ``/api/v1/query_range`` for every family query, with the mocks' own counters, verbatim.

    PYTHONPATH=src python scripts/record_prometheus_answers.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.prometheus import running_prometheus  # noqa: E402

from specwise.loadgen.mock_server import MockBehaviour, MockServer  # noqa: E402
from specwise.monitor.fleet import FAMILIES, family_query  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "prometheus_api"


def main() -> None:
    low = MockServer(MockBehaviour(ttft_s=0.0, chunk_interval_s=0.0, tokens_per_chunk=2))
    high = MockServer(MockBehaviour(ttft_s=0.0, chunk_interval_s=0.0, tokens_per_chunk=5))
    with low, high, tempfile.TemporaryDirectory() as tmp:
        targets = [m.url.removeprefix("http://") for m in (low, high)]
        with running_prometheus(Path(tmp), targets) as prom:
            start = time.time()
            for mock in (low, high):
                for i in range(30):
                    body = {"model": "mock", "prompt": "x", "max_tokens": 9 + i % 7}
                    httpx.post(mock.url + "/v1/completions", json=body, timeout=10)
            time.sleep(4)
            end = time.time()
            window = 20.0
            answers: dict[str, object] = {}
            for f in FAMILIES:
                q = family_query(f, window)
                answers[f.key] = {
                    "query": q,
                    "vector": httpx.get(prom + "/api/v1/query", params={"query": q, "time": f"{end:.3f}"}).json(),
                    "matrix": httpx.get(
                        prom + "/api/v1/query_range",
                        params={"query": q, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": "2"},
                    ).json(),
                }
            version = subprocess.run(["prometheus", "--version"], capture_output=True, text=True).stdout
            doc = {
                "provenance": "scripts/record_prometheus_answers.py against " + version.splitlines()[0],
                "window_s": window,
                "time": end,
                "instances": {
                    t: {
                        "drafts": m.state.drafts,
                        "draft_tokens": m.state.draft_tokens,
                        "accepted_tokens": m.state.accepted,
                    }
                    for t, m in zip(targets, (low, high), strict=True)
                },
                "answers": answers,
            }
    (OUT / "fleet_answers.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(OUT / "fleet_answers.json")


if __name__ == "__main__":
    main()
