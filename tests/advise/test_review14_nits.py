"""Review 14-A nits: a decision no candidate was simulated for carries no predictor (null, not a perfect one with
error 0.0), and a lookup proposer's VRAM rule says it has no draft model (not "the draft costs 0%")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "advise"


def test_an_unsupported_decision_names_no_predictor(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = EXAMPLES / "schedule-llama3-70b-qwama.toml"
    # vLLM 0.20 (V1) runs a draft model only at the target's TP 4, which Qwama-0.5B's 14 heads do not divide
    assert main(["advise", "--scenario", str(scenario), "--json", "--processes", "1", "--vllm-version", "0.20"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [c["verdict"] for c in doc["candidates"]] == ["unsupported"]
    assert doc["predictor"] is None


def test_a_simulated_decision_still_names_its_predictor(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = EXAMPLES / "schedule-llama3-70b-qwama.toml"
    assert main(["advise", "--scenario", str(scenario), "--json", "--processes", "1", "--vllm-version", "0.9"]) == 0
    pred = json.loads(capsys.readouterr().out)["predictor"]
    assert pred["name"].startswith("published-fit") and 0 < pred["relative_error_p80"] < 1


def test_a_lookup_candidate_has_no_draft_model_in_its_vram_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--scenario", str(EXAMPLES / "summarize-low-qps.toml"), "--json", "--processes", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rules = {c["candidate"]: {r["rule"]: r["message"] for r in c["rules"]} for c in doc["candidates"]}
    assert rules["ngram"]["VRAM for both models"] == "fits; no draft model: the KV cache is the target's alone"
    draft = next(m for name, m in rules.items() if name.startswith("draft_model"))
    assert draft["VRAM for both models"].startswith("fits; the draft costs ")
