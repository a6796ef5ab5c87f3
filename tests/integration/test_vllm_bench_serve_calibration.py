"""The real ``vllm bench serve --save-result --save-detailed`` (vLLM's CPU build in .venv-vllm) against specwise's
mock server -- a baseline (one token per step, no speculation) and an n-gram-like speculating one (k = 4, three
tokens per step, slower steps) at two request rates each -- calibrated with ``specwise calibrate`` and used by
``simulate --calibration`` (slow; needs `make vllm models` for the vllm CLI and the SmolLM2 tokenizer)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from tests.integration.engine import ENV, MODEL, PYTHON, require_engine
from tests.perfmodel.test_calibration_use import SCENARIO

pytestmark = [pytest.mark.slow, pytest.mark.integration]
SPEC = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}
BASELINE = MockBehaviour(ttft_s=0.01, chunk_interval_s=0.01, tokens_per_chunk=1, num_speculative_tokens=0)
SPECULATING = MockBehaviour(ttft_s=0.01, chunk_interval_s=0.014, tokens_per_chunk=3, num_speculative_tokens=4)
RATES = (8, 32)


@pytest.fixture(scope="module", autouse=True)
def _engine() -> None:
    require_engine(MODEL / "tokenizer.json")


def vllm_bench_serve(url: str, result: Path, rate: float, spec: dict[str, Any] | None, *extra: str) -> None:
    """One ``vllm bench serve`` run appended to ``result`` (the fixture's command, see its README)."""
    argv = [
        *(str(PYTHON.parent / "vllm"), "bench", "serve", "--backend", "openai", "--base-url", url),
        *("--endpoint", "/v1/completions", "--model", "meta-llama/Llama-3.1-8B-Instruct"),
        *("--tokenizer", str(MODEL), "--dataset-name", "random", "--random-input-len", "32"),
        *("--random-output-len", "16", "--num-prompts", "12", "--request-rate", str(rate)),
        *("--max-concurrency", "8", "--seed", "0", "--append-result", "--save-detailed"),
        *("--result-filename", str(result), *extra),
        *(("--metadata", "speculative_config=" + json.dumps(spec)) if spec else ()),
    ]
    env = {**os.environ, **ENV, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def record(result: Path) -> None:
    """Baseline and speculating runs at each rate, appended to one file."""
    for behaviour, spec in ((BASELINE, None), (SPECULATING, SPEC)):
        with MockServer(behaviour) as server:
            for rate in RATES:
                vllm_bench_serve(server.url, result, rate, spec)


def test_calibration_from_vllm_bench_serve_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = tmp_path / "vllm-detailed.json"
    record(result)
    runs = [json.loads(line) for line in result.read_text().splitlines() if line.strip()]
    assert len(runs) == 4 and all(len(r["itls"]) == 12 for r in runs)

    cal_path = tmp_path / "cal.json"
    assert main(["calibrate", str(result), "--out", str(cal_path), "--json", "--max-num-seqs", "8"]) == 0
    out = json.loads(capsys.readouterr().out)
    cal = out["calibration"]
    assert cal["source"] == "vllm bench serve" and cal["source_files"] == [str(result)]
    assert cal["assumed"]["max_num_batched_tokens"] == 8192 and "max_num_seqs" not in cal["assumed"]
    assert [c["name"] for c in cal["configs"]] == ["baseline", "ngram"]
    # the mock's baseline step is 10 ms whatever the batch: the fitted law says so, within the client's jitter
    law = cal["predictor"]
    assert 0.008 < law["constant_s"] + law["per_kv_token_s"] * 8 * 40 < 0.02
    spec_rows = [r for r in cal["rows"] if r["config"] == "ngram"]
    assert len(spec_rows) == 2 and all(r["measured_speedup_tpot"] > 1.5 for r in spec_rows)
    assert cal["max_abs_speedup_error"] < 0.2  # the replay predicts the measured speedups

    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    base = ["simulate", "--scenario", str(scenario), "--json", "--processes", "1"]
    assert main(base) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert main([*base, "--calibration", str(cal_path)]) == 0
    calibrated = json.loads(capsys.readouterr().out)
    assert calibrated["predictor"]["name"] == f"calibrated: {cal_path}"
    assert calibrated["baseline"]["by_qps"][0]["tpot_p50_s"] != fitted["baseline"]["by_qps"][0]["tpot_p50_s"]
    assert main(["simulate", "--scenario", str(scenario), "--calibration", str(cal_path)]) == 0
    assert "the calibrated run vllm-detailed" in " ".join(capsys.readouterr().out.split())
