"""Scenario values vLLM or the report cannot honour are refused with the field named (exit 2), not simulated
(review 5)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.scenario import parse_scenario

BASE: dict[str, Any] = {
    "name": "refused",
    "deployment": {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB", "max_model_len": 8192},
    "speculation": {"method": "ngram", "k": [0, 2, 4], "acceptance": 0.6},
    "sweep": {"qps": [1.0], "num_requests": 20},
    "workload": [{"name": "chat", "prompt_tokens": 500, "output_tokens": 100}],
}


def _with(section: str, **values: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data[section].update(values)
    return data


def _toml(deployment: str = "") -> str:
    """A scenario file for the tests that run the CLI: BASE's deployment (with ``deployment``'s extra lines), an
    n-gram sweep at 1 QPS and one chat class."""
    return (
        '[deployment]\ntarget = "meta-llama/Llama-3.1-8B-Instruct"\ngpu = "H100-SXM-80GB"\nmax_model_len = 8192\n'
        + deployment
        + '[speculation]\nmethod = "ngram"\nk = [0, 2]\nacceptance = 0.6\n[sweep]\nqps = [1.0]\nnum_requests = 20\n'
        '[[workload]]\nname = "chat"\nprompt_tokens = 500\noutput_tokens = 100\n'
    )


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (_with("deployment", max_num_batched_tokens=1), r"max_num_batched_tokens: must be at least max_num_seqs"),
        (_with("speculation", k=[0]), r"\[speculation\]\.k: k needs a value >= 1"),
        (_with("speculation", draft_tp=1), r"\[speculation\]\.draft_tp: method ngram has no draft model"),
        (_with("speculation", draft_quantization="int4"), r"draft_quantization: method ngram has no draft model"),
        ({**BASE, "workload": [*BASE["workload"], *BASE["workload"]]}, r"name 'chat' is used twice"),
    ],
)  # fmt: skip
def test_refused(data: dict[str, Any], says: str) -> None:
    with pytest.raises(SpecwiseError, match=says):
        parse_scenario(data)


def test_the_base_scenario_is_accepted() -> None:
    assert parse_scenario(copy.deepcopy(BASE)).sweep.k_values == (0, 2, 4)


def test_goodput_without_an_slo_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before: every cell '-', "speculation does not pay at any simulated rate", exit 0
    path = tmp_path / "s.toml"
    path.write_text(_toml())
    assert main(["simulate", "--scenario", str(path), "--metric", "goodput"]) == 2
    err = capsys.readouterr().err
    assert "--metric goodput" in err and "no slo_ttft_s or slo_tpot_s" in err


def test_k_past_the_given_positions_is_said() -> None:
    # review 5: per_position = [0.8] with k up to 4 extrapolated positions 2-4 silently
    data = _with("speculation", per_position=[0.8])
    del data["speculation"]["acceptance"]
    warnings = parse_scenario(data).warnings
    assert any("acceptance is given for 1 draft position(s); position(s) 2-4 reuse" in w for w in warnings)
    full = _with("speculation", per_position=[0.8, 0.6, 0.5, 0.4])
    del full["speculation"]["acceptance"]
    assert not any("draft position" in w for w in parse_scenario(full).warnings)


@pytest.mark.parametrize("predictor", ["roofline", "published-fit"])
def test_a_predictor_that_does_not_use_the_calibration_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], predictor: str
) -> None:
    """As ``--predictor roofline --calibration X`` is refused: before, ``predictor = "roofline"`` with
    ``calibration = FILE`` simulated on the calibration without a word."""
    from specwise.contracts.calibration import CalibratedConfig, CalibrationDoc, StepLaw

    configs = (CalibratedConfig("baseline", None, None, 0), CalibratedConfig("spec", "ngram", None, 2))
    law = StepLaw(1e-7, 5e-3, 0.01)
    cal = CalibrationDoc(
        "toy", law, 10, 0.1, {"spec": 0.04}, configs=configs, target="meta-llama/Llama-3.1-8B-Instruct"
    )
    (tmp_path / "cal.json").write_text(json.dumps(cal.to_json()))
    path = tmp_path / "s.toml"
    path.write_text(_toml(f'predictor = "{predictor}"\ncalibration = "cal.json"\n'))
    assert main(["simulate", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: [deployment].predictor: {predictor} does not use calibration = 'cal.json'" in err, err
    assert len(err.strip().splitlines()) == 1
    path.write_text(path.read_text().replace(f'predictor = "{predictor}"', 'predictor = "calibrated"'))
    assert main(["simulate", "--scenario", str(path), "--json", "--processes", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["predictor"]["name"] == f"calibrated: {tmp_path / 'cal.json'}"


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (_with("deployment", target=""), "[deployment].target: empty name; give a catalog id"),
        (_with("deployment", target="  "), "[deployment].target: empty name; give a catalog id"),
        (_with("speculation", method="draft_model", draft=""), "[speculation].draft: empty name; give a catalog id"),
    ],
)
def test_an_empty_model_name_names_its_field_once(data: dict[str, Any], said: str) -> None:
    """Review D's leftover: "[deployment].target: model: empty name" named the field and then a generic one."""
    with pytest.raises(SpecwiseError) as caught:
        parse_scenario(data)
    text = str(caught.value)
    assert said in text and "model: empty" not in text and "draft: empty" not in text.replace(said, "")


@pytest.mark.parametrize("version", ["banana", "0.x", "latest"])
def test_an_engine_version_that_is_not_one_is_refused_with_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str
) -> None:
    """The scenario's vLLM release is parsed once (``scenario/build.py`` ``_vllm_version``), before any check reads it:
    a version that is not one names the file and the field and exits 2, never a traceback."""
    path = tmp_path / "s.toml"
    path.write_text(_toml(f'engine_version = "{version}"\n'))
    assert main(["simulate", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: [deployment].engine_version: {version!r}: expected a vLLM version" in err
    assert "Traceback" not in err
