"""A calibration prices the candidates whose proposer it measured; the others are not evaluated, and say why
(review 11 #7: one uncalibrated candidate used to refuse the whole scenario)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.contracts.calibration import CalibratedConfig, CalibrationDoc, CalibrationRow, StepLaw

SCENARIO = """
[deployment]
target = "meta-llama/Llama-3.1-8B-Instruct"
gpu = "H100"
max_model_len = 4096
[advise]
operating_qps = 1
[sweep]
qps = [1]
num_requests = 40
[[workload]]
name = "w"
prompt_tokens = 200
output_tokens = 60
[[candidate]]
method = "ngram"
k = [0, 4]
acceptance = 0.6
"""

DRAFT = """
[[candidate]]
method = "draft_model"
draft = "meta-llama/Llama-3.2-1B-Instruct"
k = [0, 4]
acceptance = 0.6
"""


def _calibration(path: Path) -> Path:
    cal = CalibrationDoc(
        run_id="toy",
        law=StepLaw(per_kv_token_s=1e-8, per_batched_token_s=2e-5, constant_s=0.006),
        fit_points=10,
        fit_relative_rms_error=0.05,
        draft_cost_scale={"spec": 0.01},
        rows=(CalibrationRow("spec", 0, 1.0, 0.01, 0.01, 1.2, 1.2, 0.0),),
        base_config="baseline",
        configs=(CalibratedConfig("baseline", None, None, 0), CalibratedConfig("spec", "ngram", None, 4)),
        hardware="H100-SXM-80GB",
        target="meta-llama/Llama-3.1-8B-Instruct",
    )
    path.write_text(json.dumps(cal.to_json()))
    return path


def test_the_calibrated_candidate_is_evaluated_and_the_other_is_marked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO + DRAFT)
    cal = _calibration(tmp_path / "cal.json")
    rc = main(["advise", "--scenario", str(scenario), "--calibration", str(cal), "--json", "--processes", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert rc in (0, 1)  # the usual exit codes of a decision, not a refusal (2)
    by = {c["method"]: c for c in doc["candidates"]}
    assert by["ngram"]["verdict"] != "unsupported" and by["ngram"]["sim"] is not None
    other = by["draft_model"]
    assert other["verdict"] == "unsupported" and other["sim"] is None
    assert other["reason"].startswith(f"not evaluated: calibration {cal}: no speculative configuration with method")
    assert "specwise calibrate" in other["reason"]
    assert doc["predictor"]["name"] == f"calibrated: {cal}"


def test_no_calibrated_candidate_is_still_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.split("[[candidate]]")[0] + DRAFT)
    cal = _calibration(tmp_path / "cal.json")
    assert main(["advise", "--scenario", str(scenario), "--calibration", str(cal), "--processes", "1"]) == 2
    err = capsys.readouterr().err
    assert "no speculative configuration with method draft_model" in err and len(err.strip().splitlines()) == 1


def test_the_headline_says_why_when_neither_is_evaluated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review 11 leftover: vLLM 0.12 cannot run the draft model the calibration measured, and the calibration did not
    measure the n-gram candidate the engine could run. Every candidate is 'unsupported', but not all for the engine:
    the headline used to say only "No candidate can run on this engine"."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO + DRAFT)
    cal = tmp_path / "cal.json"
    _calibration(cal)
    doc = json.loads(cal.read_text())
    doc["configs"] = [
        {"name": "baseline", "method": None, "model": None, "k": 0},
        {"name": "spec", "method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "k": 4},
    ]
    cal.write_text(json.dumps(doc))
    argv = ["advise", "--scenario", str(scenario), "--calibration", str(cal), "--json", "--processes", "1"]
    assert main([*argv, "--vllm-version", "0.12"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert {c["method"]: c["verdict"] for c in out["candidates"]} == {
        "ngram": "unsupported",
        "draft_model": "unsupported",
    }
    assert out["headline"].startswith("No candidate can be evaluated as proposed")
    assert "did not measure the proposer of 1 and vLLM 0.12.0 cannot run the other 1" in out["headline"]


def test_a_calibration_of_another_vllm_version_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review 14: the calibrated vLLM's version was not compared with the one the config is for (--vllm-version)."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    cal = tmp_path / "cal.json"
    doc = json.loads(_calibration(cal).read_text())
    cal.write_text(json.dumps({**doc, "engine_version": "0.6.3"}))
    argv = ["advise", "--scenario", str(scenario), "--calibration", str(cal), "--json", "--processes", "1"]
    assert main([*argv, "--vllm-version", "0.15.1"]) in (0, 1)
    [ngram] = json.loads(capsys.readouterr().out)["candidates"]
    [said] = [w for w in ngram["warnings"] if "ran vLLM" in w]
    assert said.startswith(f"calibration {cal} ran vLLM 0.6.3 (V0), but this deployment runs vLLM 0.15.1 (V1): V0")
