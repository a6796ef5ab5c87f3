"""``specwise simulate`` and ``specwise speedup`` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main

SCENARIO = """
name = "cli"
[deployment]
target = "meta-llama/Llama-3.1-8B-Instruct"
gpu = "H100"
[speculation]
method = "eagle3"
draft = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
k = [0, 2, 4]
per_position = [0.8, 0.6, 0.45, 0.3]
[sweep]
qps = [1, 8]
num_requests = 60
[[workload]]
name = "chat"
prompt_tokens = { dist = "lognormal", mean = 400, cv = 0.5, min = 16, max = 4000 }
output_tokens = { dist = "lognormal", mean = 150, cv = 0.5, min = 8, max = 800 }
slo_ttft_s = 1.0
slo_tpot_s = 0.03
"""


def test_speedup_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["speedup", "--alpha", "0.8", "--k", "5", "--cost-ratio", "0.04", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["speedup"] == pytest.approx((1 - 0.8**6) / (0.2 * 1.2))
    assert doc["expected_tokens_per_step"] == pytest.approx((1 - 0.8**6) / 0.2)
    assert main(["speedup", "--alpha", "0.8", "--k", "5", "--cost-ratio", "0.04"]) == 0
    assert "speedup" in capsys.readouterr().out


def test_speedup_names_its_predictor_and_its_error_in_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 16 finding 8: the JSON carries what the text says (the formula, its source, batch 1), and both give
    the formula's error on Leviathan et al.'s Table 4: the number ``specwise validate`` reports."""
    argv = ["speedup", "--alpha", "0.7", "--k", "4", "--cost-ratio", "0.1"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(["validate", "--json", "--family", "vllm-issues"]) == 0
    validated = json.loads(capsys.readouterr().out)["leviathan_table4_max_abs_diff"]
    assert 0 < validated < 0.1
    assert doc["batch_size"] == 1
    predictor = doc["predictor"]
    assert predictor["name"] == "leviathan-iid" and predictor["source"] == "Leviathan et al. 2023, Theorem 3.8"
    assert predictor["formula"] == "(1 - alpha^(k+1)) / ((1 - alpha)(k c + 1))" and "batch 1" in predictor["assumes"]
    assert predictor["error"] == validated and predictor["statistic"] == "max_abs_speedup_error"
    assert "Table 4" in predictor["error_source"]
    assert main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "speedup 1.981x at batch 1 (Leviathan et al. 2023)" in text
    assert (
        f"predictor: leviathan-iid (batch 1, i.i.d. acceptance); error: Leviathan Table 4 max |diff| {validated:.3f}"
        in text
    )


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["speedup", "--alpha", "1.5", "--k", "3", "--cost-ratio", "0.1"], "expected a number in [0, 1]"),
        (["speedup", "--alpha", "0.5", "--k", "-1", "--cost-ratio", "0.1"], "expected an integer in 0..16"),
        (["speedup", "--alpha", "0.5", "--k", "2", "--cost-ratio", "-1"], "expected a number >= 0"),
        (["simulate", "--scenario", "/nonexistent.toml"], "no such scenario file"),
    ],
)
def test_bad_input_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and fragment in err and "Traceback" not in err


def test_simulate_json_contract_and_plots(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    code = main(["simulate", "--scenario", str(scenario), "--json", "--processes", "1", "--plot", str(tmp_path / "p")])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"baseline", "results", "best_k_by_qps", "crossover_qps"} <= set(doc)
    assert len(doc["results"]) == 2 * 3
    row = doc["results"][0]
    for key in ("qps", "k", "tpot_p50_s", "ttft_p50_s", "e2e_p50_s", "output_tokens_per_s", "speedup_tpot"):
        assert key in row
    assert {r["speedup_tpot"] for r in doc["results"] if r["k"] == 0} == {1.0}
    assert set(doc["best_k_by_qps"]) == {"1", "8"}
    for name in ("speedup_vs_qps.png", "speedup_vs_qps.svg", "latency_vs_qps.png"):
        path = tmp_path / "p" / name
        assert path.exists() and path.stat().st_size > 1000
    assert (tmp_path / "p" / "speedup_vs_qps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_simulate_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    assert main(["simulate", "--scenario", str(scenario), "--processes", "1"]) == 0
    out = capsys.readouterr().out
    assert "speedup of E2E latency (p50)" in out and "k=4" in out
    assert main(["simulate", "--scenario", str(scenario), "--processes", "1", "--metric", "tpot", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["decision_metric"] == "tpot"


def test_bad_scenario_via_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.replace("qps = [1, 8]", "qps = [1, -8]"))
    assert main(["simulate", "--scenario", str(scenario)]) == 2
    err = capsys.readouterr().err
    assert "[sweep].qps: rates must be > 0" in err and len(err.strip().splitlines()) == 1


def test_json_has_no_nan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # Every output is one token: TPOT has no samples (NaN inside), which must print as null.
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        SCENARIO.replace(
            'output_tokens = { dist = "lognormal", mean = 150, cv = 0.5, min = 8, max = 800 }', "output_tokens = 1"
        )
    )
    assert main(["simulate", "--scenario", str(scenario), "--json", "--processes", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["results"][0]["tpot_p50_s"] is None
