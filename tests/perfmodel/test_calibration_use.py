"""A calibration file reaches simulate, advise and monitor: the calibrated law replaces the published fit, every
output names it, and a file that does not match the scenario is refused in one line."""

from __future__ import annotations

import json
from dataclasses import replace
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


_LAW = {"per_kv_token_s": 1e-7, "per_batched_token_s": 5e-3, "constant_s": 0.3}


def _doc(method: str = "ngram") -> CalibrationDoc:
    return CalibrationDoc(
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


def _calibration(path: Path, method: str = "ngram", changes: dict[str, object] | None = None) -> Path:
    cal = _doc(method)
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
    # ... which is an RMS step-time error, not a percentile: the JSON says which statistic the band is
    assert calibrated["predictor"]["statistic"] == "rms_step_time_fit_error"  # type: ignore[index]
    assert fitted["predictor"]["statistic"] == "p80_abs_rel_speedup_error"  # type: ignore[index]
    source = calibrated["predictor"]["source"]  # type: ignore[index]
    assert source.startswith("the calibrated run toy, relative to its mean step") and "replay error is 8%" in source
    # a CPU calibration pricing an H100 deployment is said with the results
    assert any("ran on CPU: test, 2 cores, not H100" in w for w in calibrated["warnings"])  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"target": "HuggingFaceTB/SmolLM2-135M"}, "measured HuggingFaceTB/SmolLM2-135M, but this deployment serves"),
        ({"engine": "sglang"}, "measured sglang, but this deployment runs vllm"),
        ({"predictor": {"per_kv_token_s": 0, "per_batched_token_s": 0, "constant_s": -1}}, "constant_s: -1"),
        ({"predictor": {"per_kv_token_s": 0, "per_batched_token_s": 0, "constant_s": 0}}, "every coefficient is 0"),
        # review: an RMS error of 5 gave a band of [-3.57, 5.36]; a negative one fell back to another band
        *(
            ({"predictor": {**_LAW, "fit_relative_rms_error": e}}, f"predictor.fit_relative_rms_error: {e!r}: must be")
            for e in (5.0, 1.0, -0.5)
        ),
        ({"predictor": {**_LAW, "constant_s": 1e6}}, "predictor.constant_s: 1000000.0: over 10 s per step"),
        ({"tensor_parallel_size": 0}, "tensor_parallel_size: 0: must be at least 1"),
    ],
)
def test_a_calibration_of_another_server_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, object], said: str
) -> None:
    """A step-time law is one model on one engine; an edited file cannot make steps take negative or no time, nor
    an absurd fixed time, nor carry a fit error that is none or makes the band reach below 0."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    cal = _calibration(tmp_path / "cal.json", changes=changes)
    assert main(["simulate", "--scenario", str(scenario), "--calibration", str(cal)]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and str(cal) in err


@pytest.mark.parametrize(("error", "constant_s"), [(0.0, 0.3), (0.99, 10.0)])
def test_a_fit_error_under_1_and_a_step_up_to_10_s_are_accepted(error: float, constant_s: float) -> None:
    doc = {**_doc().to_json(), "predictor": {**_LAW, "constant_s": constant_s, "fit_relative_rms_error": error}}
    cal = CalibrationDoc.from_json(doc, "cal.json")
    assert cal.fit_relative_rms_error == error and cal.law.constant_s == constant_s


def test_a_calibration_from_another_card_of_the_family_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review: "1 x NVIDIA H100 PCIe" contains "H100", and was used for the H100 SXM without a word."""
    pcie = _calibration(tmp_path / "pcie.json", changes={"hardware": "1 x NVIDIA H100 PCIe"})
    doc = _simulate(tmp_path, capsys, "--calibration", str(pcie))
    said = [w for w in doc["warnings"] if "H100 PCIe" in w]  # type: ignore[attr-defined]
    assert len(said) == 1 and "(the catalog's H100-PCIe-80GB), not H100-SXM-80GB" in said[0], doc["warnings"]
    sxm = _calibration(tmp_path / "sxm.json", changes={"hardware": "1 x NVIDIA H100 80GB HBM3"})
    doc = _simulate(tmp_path, capsys, "--calibration", str(sxm))
    assert not [w for w in doc["warnings"] if "ran on" in w]  # type: ignore[attr-defined]


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


def test_the_calibrated_band_is_called_what_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review 11 #6: the band of a calibration is its RMS step-time fit error, not an "80th percentile error"."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    cal = _calibration(tmp_path / "cal.json")
    assert main(["simulate", "--scenario", str(scenario), "--calibration", str(cal), "--processes", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "speedups +-10% (RMS step-time fit error of the calibrated run toy" in out
    assert "80th percentile" not in out


def _points(num_seqs: int, kv_tokens: float, batched_tokens: float) -> list[dict[str, object]]:
    step = {"config": "baseline", "level": 0, "prefill_tokens": 0.0, "time_s": 0.3, "samples": 5}
    return [
        {**step, "num_seqs": 1, "kv_tokens": 100.0, "batched_tokens": 1.0},
        {**step, "num_seqs": num_seqs, "kv_tokens": kv_tokens, "batched_tokens": batched_tokens},
    ]


def test_a_calibration_used_beyond_the_steps_it_measured_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 11 #5: a law fitted at batch <= 7 prices a deployment that runs up to 256 sequences a step: the band
    is not measured there, and the results say so (terminal and JSON)."""
    cal = _calibration(tmp_path / "cal.json", changes={"points": _points(7, 310.0, 52.0)})
    doc = _simulate(tmp_path, capsys, "--calibration", str(cal))
    said = [w for w in doc["warnings"] if "was measured at" in w]  # type: ignore[attr-defined]
    assert len(said) == 1, doc["warnings"]
    assert "batch <= 7, KV tokens <= 310 and batched tokens <= 52 per step" in said[0]
    assert "batch 256" in said[0] and "batched tokens 8,192" in said[0] and "band is not measured" in said[0]
    # a calibration that measured the deployment's whole range says nothing
    wide = _calibration(tmp_path / "wide.json", changes={"points": _points(256, 1e6, 8192.0)})
    doc = _simulate(tmp_path, capsys, "--calibration", str(wide))
    assert not [w for w in doc["warnings"] if "was measured at" in w or "range is unknown" in w]  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["simulate", "export"])
def test_a_calibration_that_records_no_steps_says_its_range_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Review: ``points: []`` lost the "measured at batch <= N ... beyond the calibrated range" note without a word;
    now the results say the range cannot be checked, where that note would be."""
    cal = _calibration(tmp_path / "cal.json", changes={"points": []})
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    if command == "simulate":
        doc = _simulate(tmp_path, capsys, "--calibration", str(cal))
        said = [w for w in doc["warnings"] if "range is unknown" in w]  # type: ignore[attr-defined]
    else:
        out = tmp_path / "r.yml"
        assert main(["export", "prometheus-rules", "--scenario", str(scenario), "--calibration", str(cal),
                     "--out", str(out)]) == 0  # fmt: skip
        said = [ln for ln in capsys.readouterr().err.splitlines() if "range is unknown" in ln]
    assert len(said) == 1, said
    assert f"calibration {cal} does not record the steps it measured: its range is unknown" in said[0]
    assert "+-10% band is not measured" in said[0]


def test_the_range_check_takes_any_step_such_as_a_live_batch() -> None:
    """The pure check the monitor can call with the batch a live server runs (one axis given, one named)."""
    from specwise.perfmodel.calibration_match import StepRange, calibrated_range, measured_range

    cal = CalibrationDoc.from_json(
        {**json.loads(json.dumps(_doc().to_json())), "points": _points(7, 310.0, 52.0)}, "cal.json"
    )
    assert measured_range(cal) == StepRange(7, 310.0, 52.0)
    checked = calibrated_range(cal, "cal.json")
    assert checked is not None
    (note,) = checked.notes(StepRange(num_seqs=200), "the live server runs")
    assert note.startswith("calibration cal.json was measured at batch <= 7; the live server runs batch 200:")
    assert checked.notes(StepRange(num_seqs=7, kv_tokens=300)) == ()
    assert measured_range(_doc()) is None  # no points recorded: nothing to compare with


def test_the_simulated_steps_are_checked_not_the_deployment_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 11 #5, its leftover: a calibration that measured the steps the light load runs is not said to be
    extrapolated there. The note names the load from which the simulated steps pass its range (and the capacity
    runs, which fill max_num_seqs); export, which simulates nothing, still checks the deployment's limits."""
    from specwise.perfmodel.factory import PredictorChoice
    from specwise.scenario import load_scenario
    from specwise.study.sweep import run_cell

    fast = StepLaw(per_kv_token_s=1e-8, per_batched_token_s=2e-5, constant_s=0.01)  # an H100-like 8B step
    probe = replace(_doc(), law=fast)
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    sc = load_scenario(scenario, PredictorChoice("calibrated", probe, tmp_path / "probe.json"))
    light = [run_cell(sc, 1.0, k).summary for k in (0, 4)]
    heavy = [run_cell(sc, 4.0, k).summary for k in (0, 4)]
    seqs = max(s.peak_seqs for s in light)
    kv = max(s.peak_kv_tokens for s in light)
    batched = max(s.peak_batched_tokens for s in light)
    assert max(s.peak_seqs for s in heavy) > seqs  # 4 QPS runs a larger batch than 1 QPS
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({**probe.to_json(), "points": _points(seqs, kv, batched)}))
    doc = _simulate(tmp_path, capsys, "--calibration", str(cal))
    (said,) = [w for w in doc["warnings"] if "was measured at" in w]  # type: ignore[attr-defined]
    assert f"batch <= {seqs}" in said
    assert "the simulated steps pass it from 4 QPS on and in the capacity runs (up to batch 256" in said, said
    assert "full load" not in said
    # export prices no simulated load: the deployment's limits are what it is checked against
    code = main(["export", "prometheus-rules", "--scenario", str(scenario), "--calibration", str(cal),
                 "--out", str(tmp_path / "r.yml")])  # fmt: skip
    assert code == 0
    err = capsys.readouterr().err
    assert f"was measured at batch <= {seqs}" in err and "at full load this deployment's steps reach batch 256" in err


@pytest.mark.parametrize("command", ["simulate", "advise"])
def test_a_flag_that_replaces_the_scenarios_calibration_says_so(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--predictor roofline`` on a scenario whose ``[deployment]`` names a calibration is simulated with the
    roofline, and the output says what it replaced (first-hour audit 2026-12-07: it was silent, while the same two
    choices in one file or on one command line are refused)."""
    _calibration(tmp_path / "cal.json")
    text = SCENARIO.replace('gpu = "H100"', 'gpu = "H100"\ncalibration = "cal.json"')
    if command == "advise":
        text = text.replace("[speculation]", "[[candidate]]").replace("k = [0, 4]", "k = [4]")
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    assert main([command, str(scenario), "--predictor", "roofline", "--json", "--processes", "1"]) == 0
    out = capsys.readouterr().out
    said = f"simulated with the roofline, not the scenario's [deployment].calibration = '{tmp_path / 'cal.json'}'"
    assert said in out
    assert json.loads(out)["predictor"]["name"].startswith("roofline")
