"""A separate draft model on vLLM 0.17 to 0.27 gives up one token slot per sequence in every step
(``VllmConfig._set_max_num_scheduled_tokens``: ``max_num_batched_tokens - max_num_seqs``; review s48a F4): the
simulation schedules that many, and a budget that leaves none is refused, in simulate and in advise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.engines.vllm_versions import VllmVersion
from specwise.errors import SpecwiseError
from specwise.memory.vllm_rules import draft_slots_refusal, scheduled_tokens
from specwise.scenario import parse_scenario
from specwise.study.sweep import run_cell
from tests.readme_examples import ROOT

V = VllmVersion.parse


@pytest.mark.parametrize(
    ("version", "method", "left"),
    [
        ("0.16.0", "draft_model", 8192),
        ("0.17.0", "draft_model", 7936),
        ("0.26.0", "draft_model", 7936),
        ("0.27.1", "draft_model", 7936),  # not read: taken as 0.26
        ("0.28.0", "draft_model", 8192),
        ("0.24.0", "eagle3", 8192),
        ("0.24.0", "ngram", 8192),
    ],
)
def test_the_tokens_a_step_schedules(version: str, method: str, left: int) -> None:
    assert scheduled_tokens(V(version), method, 8192, 256) == left
    assert scheduled_tokens(None, "draft_model", 8192, 256) == 8192  # the current vLLM


def test_a_budget_that_leaves_nothing_is_refused_with_the_fix() -> None:
    said = draft_slots_refusal(V("0.20.0"), "draft_model", 512, 512) or ""
    assert "leaves 0 tokens" in said and "raise max_num_batched_tokens" in said
    assert draft_slots_refusal(V("0.20.0"), "draft_model", 513, 512) is None
    assert draft_slots_refusal(V("0.28.0"), "draft_model", 512, 512) is None


def _scenario(version: str | None, seqs: int = 256, budget: int = 512) -> dict[str, Any]:
    dep: dict[str, Any] = {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB", "max_model_len": 8192}
    dep |= {"max_num_seqs": seqs, "max_num_batched_tokens": budget}
    if version is not None:
        dep["engine_version"] = version
    return {
        "name": "draft-slots",
        "deployment": dep,
        "speculation": {
            "method": "draft_model",
            "draft": "meta-llama/Llama-3.2-1B-Instruct",
            "k": [0, 2],
            "acceptance": 0.7,
        },
        "sweep": {"qps": [4.0], "num_requests": 120, "seed": 0},
        "workload": [
            {
                "name": "chat",
                "prompt_tokens": {"dist": "lognormal", "mean": 300, "cv": 0.5, "min": 16, "max": 2000},
                "output_tokens": {"dist": "lognormal", "mean": 200, "cv": 0.4, "min": 16, "max": 800},
            }
        ],
    }


def test_the_simulation_schedules_what_that_vllm_schedules() -> None:
    """256 sequences beside a 512-token budget: 0.24 schedules 256 tokens a step, 0.28 all 512 -- the same
    requests end later on 0.24, and only the speculating run moves."""
    old, new = parse_scenario(_scenario("0.24.0")), parse_scenario(_scenario("0.28.0"))
    assert (old.scheduled_tokens_with_spec, new.scheduled_tokens_with_spec) == (256, 512)
    assert any("512 - 256 = 256 tokens" in w for w in old.warnings)
    assert not any("token slot per sequence" in w for w in new.warnings)
    spec_old, spec_new = run_cell(old, 4.0, 2).summary.overall, run_cell(new, 4.0, 2).summary.overall
    assert spec_old.ttft_s.p50 > spec_new.ttft_s.p50
    base_old, base_new = run_cell(old, 4.0, 0).summary.overall, run_cell(new, 4.0, 0).summary.overall
    assert base_old.ttft_s.p50 == base_new.ttft_s.p50


def test_simulate_refuses_and_advise_marks_unsupported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SpecwiseError, match=r"\[deployment\].max_num_batched_tokens: vLLM 0.20.0 keeps one"):
        parse_scenario(_scenario("0.20.0", seqs=512, budget=512))
    text = (ROOT / "tests/advise/scenarios/qwen3-8b-a100-draft.toml").read_text()
    extra = 'max_num_seqs = 512\nmax_num_batched_tokens = 512\nengine_version = "0.20.0"\n'
    path = tmp_path / "s.toml"
    path.write_text(text.replace("[deployment]\n", f"[deployment]\n{extra}", 1))
    rc = main(["advise", str(path), "--json", "--processes", "1"])
    (cand,) = json.loads(capsys.readouterr().out)["candidates"]
    assert rc == 1 and cand["verdict"] == "unsupported" and "leaves 0 tokens" in cand["reason"]
