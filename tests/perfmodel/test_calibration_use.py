"""A calibration file reaches simulate, advise and monitor: the calibrated law replaces the published fit, every
output names it, and a file that does not match the scenario is refused in one line."""

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
[speculation]
method = "ngram"
k = [0, 4]
acceptance = 0.6
[sweep]
qps = [1, 4]
num_requests = 40
[[workload]]
name = "w"
prompt_tokens = 200
output_tokens = 60
"""


def _calibration(path: Path, method: str = "ngram", changes: dict[str, object] | None = None) -> Path:
    cal = CalibrationDoc(
        run_id="toy",
        law=StepLaw(per_kv_token_s=1e-7, per_batched_token_s=5e-3, constant_s=0.3, free_batched_tokens=48),
        fit_points=10,
        fit_relative_rms_error=0.1,
        draft_cost_scale={"spec": 0.04},
        rows=(CalibrationRow("spec", 0, 1.0, 0.3, 0.31, 1.2, 1.1, -0.1),),
        base_config="baseline",
        configs=(CalibratedConfig("baseline", None, None, 0), CalibratedConfig("spec", method, None, 4)),
        engine_version="0.32.0",
        hardware="CPU: test, 2 cores",
        target="meta-llama/Llama-3.1-8B-Instruct",
    )
    path.write_text(json.dumps({**cal.to_json(), **(changes or {})}))
    return path


def _simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    assert main(["simulate", "--scenario", str(scenario), "--json", "--processes", "1", *extra]) == 0
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


def test_calibration_changes_the_simulation_and_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fitted = _simulate(tmp_path, capsys)
    cal = _calibration(tmp_path / "cal.json")
    calibrated = _simulate(tmp_path, capsys, "--calibration", str(cal))
    assert fitted["predictor"]["name"].startswith("published-fit")  # type: ignore[index]
    assert calibrated["predictor"]["name"] == f"calibrated: {cal}"  # type: ignore[index]
    base_f = fitted["baseline"]["by_qps"][0]["tpot_p50_s"]  # type: ignore[index]
    base_c = calibrated["baseline"]["by_qps"][0]["tpot_p50_s"]  # type: ignore[index]
    assert base_c > 50 * base_f  # a ~0.3 s CPU step instead of a few ms on the H100
    # the replay (8%) is of the level the law was fitted to: the band is never below the law's 10% RMS fit error
    assert calibrated["predictor"]["relative_error_p80"] == pytest.approx(0.1)  # type: ignore[index]
    source = calibrated["predictor"]["source"]  # type: ignore[index]
    assert source.startswith("the calibrated run toy's step-time fit") and "in-sample replay 8%" in source
    # a CPU calibration pricing an H100 deployment is said with the results
    assert any("ran on CPU: test, 2 cores, not H100" in w for w in calibrated["warnings"])  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"target": "HuggingFaceTB/SmolLM2-135M"}, "measured HuggingFaceTB/SmolLM2-135M, but this deployment serves"),
        ({"engine": "sglang"}, "measured sglang, but this deployment runs vllm"),
        ({"predictor": {"per_kv_token_s": 0, "per_batched_token_s": 0, "constant_s": -1}}, "constant_s: -1"),
        ({"predictor": {"per_kv_token_s": 0, "per_batched_token_s": 0, "constant_s": 0}}, "every coefficient is 0"),
    ],
)
def test_a_calibration_of_another_server_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, object], said: str
) -> None:
    """A step-time law is one model on one engine; an edited file cannot make steps take negative or no time."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    cal = _calibration(tmp_path / "cal.json", changes=changes)
    assert main(["simulate", "--scenario", str(scenario), "--calibration", str(cal)]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err


def test_a_draft_models_cost_is_not_reused_for_another_draft(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        SCENARIO.replace('method = "ngram"', 'method = "draft_model"\ndraft = "meta-llama/Llama-3.2-1B-Instruct"')
    )
    configs: list[dict[str, object]] = [
        {"name": "baseline", "method": None, "model": None, "k": 0},
        {"name": "spec", "method": "draft_model", "model": "Qwen/Qwen2.5-0.5B-Instruct", "k": 4},
    ]
    cal = _calibration(tmp_path / "cal.json", changes={"configs": configs})
    assert main(["simulate", "--scenario", str(scenario), "--calibration", str(cal)]) == 2
    assert "calibrated the draft Qwen/Qwen2.5-0.5B-Instruct" in capsys.readouterr().err
    configs[1]["model"] = "/models/Llama-3.2-1B-Instruct"  # the same draft from a local directory
    cal = _calibration(tmp_path / "cal.json", changes={"configs": configs})
    assert main(["simulate", "--scenario", str(scenario), "--calibration", str(cal), "--json", "--processes", "1"]) == 0
    capsys.readouterr()


def test_calibration_without_the_method_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    cal = _calibration(tmp_path / "cal.json", method="draft_model")
    assert main(["simulate", "--scenario", str(scenario), "--calibration", str(cal)]) == 2
    err = capsys.readouterr().err
    assert "no speculative configuration with method ngram" in err and len(err.strip().splitlines()) == 1
    assert main(["simulate", "--scenario", str(scenario), "--predictor", "calibrated"]) == 2
    assert "needs --calibration" in capsys.readouterr().err


def test_calibration_in_the_scenario_and_in_monitor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _calibration(tmp_path / "cal.json")
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.replace('gpu = "H100"', 'gpu = "H100"\ncalibration = "cal.json"'))
    assert main(["simulate", "--scenario", str(scenario), "--json", "--processes", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["predictor"]["name"].startswith("calibrated")
    from specwise.monitor.predicted import slowdown_model
    from specwise.scenario import load_scenario

    model = slowdown_model(load_scenario(scenario))
    assert model.predictor.startswith("calibrated")
    # on the calibrated CPU law a decode step costs the same from 1 to 48 batched tokens: k=4 verification is
    # nearly free at batch 8, so speculation with AL 2 halves the time per token
    assert model.tpot_ratio(8, 2.0) < 0.6
