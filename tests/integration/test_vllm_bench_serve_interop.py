"""The real ``vllm bench serve`` (vLLM's CPU build in .venv-vllm) against specwise's mock server, its
``--save-result`` file fed to ``advise --bench``: the acceptance source turns from ASSUMED to measured, with vLLM's
own counts (slow; needs `make vllm models` for the vllm CLI and the SmolLM2 tokenizer)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from tests.advise.test_bench_formats_evidence import SCENARIO
from tests.integration.engine import ENV, MODEL, PYTHON, require_engine

pytestmark = [pytest.mark.slow, pytest.mark.integration]
SPEC = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 4}


@pytest.fixture(scope="module", autouse=True)
def _engine() -> None:
    require_engine(MODEL / "tokenizer.json")


def _vllm_bench_serve(url: str, result: Path) -> None:
    argv = [
        *(str(PYTHON.parent / "vllm"), "bench", "serve", "--backend", "openai", "--base-url", url),
        *("--endpoint", "/v1/completions", "--model", "meta-llama/Llama-3.1-8B-Instruct"),
        *("--tokenizer", str(MODEL), "--dataset-name", "random", "--random-input-len", "32"),
        *("--random-output-len", "60", "--num-prompts", "40", "--request-rate", "20", "--max-concurrency", "8"),
        *("--seed", "0", "--save-result", "--result-filename", str(result)),
        *("--metadata", "speculative_config=" + json.dumps(SPEC)),
    ]
    env = {**os.environ, **ENV, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def _advise(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    assert main(["advise", "--scenario", str(scenario), "--json", "--processes", "1", *extra]) in (0, 1)
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_vllm_bench_serve_result_is_measured_evidence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = tmp_path / "vllm-result.json"
    with MockServer(MockBehaviour(ttft_s=0.005, chunk_interval_s=0.002)) as server:
        _vllm_bench_serve(server.url, result)
        counted = (server.state.drafts, server.state.draft_tokens, server.state.accepted)
    saved = json.loads(result.read_text())
    assert (saved["spec_decode_num_drafts"], saved["spec_decode_draft_tokens"]) == counted[:2]
    assert saved["spec_decode_accepted_tokens"] == counted[2]
    assert saved["spec_decode_acceptance_rate"] == pytest.approx(100 * counted[2] / counted[1])  # vLLM: percent

    before = _advise(tmp_path, capsys)["candidates"][0]["evidence"][0]
    after = _advise(tmp_path, capsys, "--bench", str(result))["candidates"][0]["evidence"][0]
    assert before["kind"] == "assumed"
    assert after["kind"] == "measured" and f"{counted[0]:,} drafts" in after["source"]
    # every step of the mock emits 3 tokens (k = 4): positions 1 and 2 accepted, 3 and 4 never
    assert after["per_position"][0] == pytest.approx(1.0) and after["per_position"][2:4] == [0.0, 0.0]
    assert 0.9 < after["per_position"][1] <= 1.0
