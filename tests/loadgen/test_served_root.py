"""``bench`` records which checkpoint a server loaded for the model it was asked for (GET /v1/models, vLLM's card
``root``), so that a run against a server that serves its target under an alias (``vllm serve
--served-model-name``) is still matched to that target by ``advise --bench``; a server that does not say costs
nothing."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.loadgen.client import ClientConfig, served_root
from specwise.loadgen.mock_server import MockBehaviour, MockServer

ROOT = "/models/Llama-3.1-8B-Instruct"


def _cfg(url: str, model: str) -> ClientConfig:
    return ClientConfig(base_url=url, model=model, endpoint="completions", api_key_env=None, request_timeout_s=5.0)


def test_the_root_of_the_served_models_card() -> None:
    with MockServer(MockBehaviour(model_name="llama", model_root=ROOT)) as server:
        assert served_root(_cfg(server.url, "llama")) == ROOT
        assert served_root(_cfg(server.url, "another")) is None  # no card of that name


def test_a_server_that_does_not_say_gives_none() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert served_root(_cfg(f"http://127.0.0.1:{port}", "llama"), timeout_s=2.0) is None


def test_bench_writes_it_and_advise_matches_the_alias_by_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Served as 'llama', loaded from a Llama-3.1-8B-Instruct directory: advise takes the run as that target's.
    Without the root the same run is refused (tests/advise/test_bench_formats_evidence.py)."""
    from tests.advise.test_bench_formats_evidence import SCENARIO

    with MockServer(MockBehaviour(model_name="llama", model_root=ROOT, ttft_s=0.003, chunk_interval_s=0.001)) as s:
        argv = ["bench", "--url", s.url, "--model", "llama", "--rates", "40", "--requests-per-level", "6"]
        spec = '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'
        argv += ["--max-tokens", "16", "--db", str(tmp_path / "b.sqlite"), "--speculative-config", spec, "--json"]
        assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == "llama" and doc["model_root"] == ROOT
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(doc))
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    code = main(["advise", "--scenario", str(scenario), "--bench", str(bench), "--json", "--processes", "1"])
    advice = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    (evidence,) = next(c for c in advice["candidates"] if c["method"] == "eagle3")["evidence"]
    assert evidence["kind"] == "measured", evidence
