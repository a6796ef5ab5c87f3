"""Calibration files that are easy to get wrong are refused with what to do (review 11 #12): an older specwise's file,
a vllm bench serve result given as one, an implausible proposer cost, a malformed --engine-version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.perfmodel.test_calibration_use import SCENARIO, _calibration

from specwise.cli import main

ROOT = Path(__file__).resolve().parents[2]
VLLM_RESULTS = ROOT / "tests" / "fixtures" / "vllm_bench_serve"


def _simulate_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], calibration: Path) -> str:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    assert main(["simulate", "--scenario", str(scenario), "--calibration", str(calibration)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_an_older_specwise_calibration_says_how_to_redo_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """bench/results/vllm_qwen_bench.json carries an ngram-k4 proposer cost but no configs: not "none recorded"."""
    err = _simulate_error(tmp_path, capsys, ROOT / "bench" / "results" / "vllm_qwen_bench.json")
    assert "was written by an older specwise: it records no configurations" in err
    assert "specwise bench --calibrate-run RUN_ID" in err and "specwise calibrate" in err


def test_a_vllm_bench_serve_result_is_not_a_calibration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One result per line (--append-result), saved with --save-detailed: the input of specwise calibrate."""
    path = VLLM_RESULTS / "baseline-and-ngram-on-mock-detailed.json"
    err = _simulate_error(tmp_path, capsys, path)
    assert f"{path}: a vllm bench serve result, not a calibration" in err
    assert f"specwise calibrate {path} --out cal.json" in err


def test_a_result_without_per_request_timings_is_not_offered_to_calibrate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 14 #13: a result saved without --save-detailed cannot be fitted; the refusal says to re-run with it,
    not to run specwise calibrate on this file (which would refuse it in turn)."""
    path = VLLM_RESULTS / "eagle3-on-mock.json"
    err = _simulate_error(tmp_path, capsys, path)
    assert f"{path}: a vllm bench serve result, not a calibration, and saved without --save-detailed" in err
    assert "re-run vllm bench serve with --save-result --save-detailed" in err
    assert f"specwise calibrate {path}" not in err


def test_an_implausible_proposer_cost_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cal = _calibration(tmp_path / "cal.json", changes={"draft_cost_scale": {"spec": 1e9}})
    assert "draft_cost_scale: spec: above 10" in _simulate_error(tmp_path, capsys, cal)


def test_another_documents_schema_reads_grammatically(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cal = _calibration(tmp_path / "cal.json", changes={"schema": "other/1"})
    assert "is an other document, expected specwise.calibration" in _simulate_error(tmp_path, capsys, cal)


def test_calibrate_refuses_a_malformed_engine_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = VLLM_RESULTS / "baseline-and-ngram-on-mock-detailed.json"
    out = tmp_path / "cal.json"
    assert main(["calibrate", str(source), "--out", str(out), "--engine-version", "banana"]) == 2
    assert "--engine-version: 'banana': expected a version like" in capsys.readouterr().err and not out.exists()
    assert main(["calibrate", str(source), "--out", str(out), "--engine-version", "v0.32.0"]) == 0
    assert json.loads(out.read_text())["engine_version"] == "v0.32.0"


@pytest.mark.parametrize("argv", [["simulate"], ["advise"], ["export", "prometheus-rules"]])
def test_the_calibration_flag_names_both_ways_to_make_one(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "a calibration file from specwise calibrate" in text and "specwise bench --launch --calibrate" in text


def test_another_models_calibration_names_both_ways_to_redo_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cal = _calibration(tmp_path / "cal.json", changes={"target": "HuggingFaceTB/SmolLM2-135M"})
    err = _simulate_error(tmp_path, capsys, cal)
    assert "specwise calibrate on vllm bench serve --save-detailed results" in err and "--calibrate)" in err


ADVISE = """
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
name = "ng"
method = "ngram"
k = [0, 4]
"""


def _without(path: Path, *keys: str) -> Path:
    data = json.loads(path.read_text())
    path.write_text(json.dumps({k: v for k, v in data.items() if k not in keys}))
    return path


def test_a_calibration_without_its_target_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without ``target`` no deployment's model could be checked against the law's: it priced any model, exit 0."""
    for n, cal in enumerate(
        (
            _without(_calibration(tmp_path / "gone.json"), "target"),
            _calibration(tmp_path / "null.json", changes={"target": None}),
            _calibration(tmp_path / "empty.json", changes={"target": " "}),
        )
    ):
        err = _simulate_error(tmp_path, capsys, cal)
        assert f"error: {cal}: target: missing: the calibration does not say which model it measured" in err, n
    scenario = tmp_path / "a.toml"  # and advise, where the audit found it
    scenario.write_text(ADVISE)
    assert main(["advise", str(scenario), "--calibration", str(tmp_path / "gone.json")]) == 2
    assert f"{tmp_path / 'gone.json'}: target: missing" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"engine_version": "abc"}, "engine_version: 'abc': expected a version like 0.15 or 0.10.1"),
        ({"engine_version": ""}, "engine_version: '': expected a version like"),
        ({"engine": "trt"}, "engine: expected one of vllm, sglang, llama.cpp, got 'trt'"),
        ({"server": "x"}, "server: expected an object, got str"),
        ({"server": {"max_num_seqs": 0, "max_num_batched_tokens": 8192}}, "server.max_num_seqs: 0: must be at least 1"),
    ],
)
def test_an_impossible_server_record_is_refused_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, object], says: str
) -> None:
    cal = _calibration(tmp_path / "cal.json", changes=changes)
    assert f"error: {cal}: {says}" in _simulate_error(tmp_path, capsys, cal)


def test_a_calibration_without_its_schema_says_the_schema_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It lists configs, as a specwise bench result without a schema does: it was taken for one."""
    cal = _without(_calibration(tmp_path / "cal.json"), "schema")
    err = _simulate_error(tmp_path, capsys, cal)
    assert (
        f'error: {cal}: schema: missing: every calibration specwise writes says "schema": "specwise.calibration/1"'
        in err
    )
    assert "bench result" not in err


def test_the_valid_calibration_these_are_made_from_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    for changes in ({}, {"engine_version": "v0.24.0rc1"}, {"engine": "vllm", "engine_version": None}):
        cal = _calibration(tmp_path / "cal.json", changes=changes)
        assert main(["simulate", "--scenario", str(scenario), "--calibration", str(cal), "--json"]) == 0
        capsys.readouterr()


@pytest.mark.parametrize("doc", [{}, {"drafts": [], "target": "t", "gpu": "H100", "tp": 4}, {"results": []}])
def test_a_json_that_is_no_calibration_is_not_called_an_old_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, object]
) -> None:
    """Review s59 F4: drafts --json given as --calibration was "written by an older specwise"."""
    path = tmp_path / "other.json"
    path.write_text(json.dumps(doc))
    err = _simulate_error(tmp_path, capsys, path)
    assert f"{path}: not a specwise calibration" in err and "older specwise" not in err
    assert "specwise bench --calibrate-run RUN_ID" in err
