"""Probabilistic drafting (``drafting = "probabilistic"``: draft tokens sampled from the draft's distribution, priced
with the higher sum-min acceptance) is refused by the engines that never draft that way: SGLang drafts the draft's
top-k tokens and llama-server the draft's most probable one. Before, both wrote their usual (greedy) command for a
candidate priced as probabilistic, and ``simulate`` priced an SGLang scenario with a method SGLang lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.engines import get_engine
from specwise.engines.base import Speculation
from specwise.errors import SpecwiseError
from specwise.methods import get_method
from specwise.scenario import parse_scenario
from tests.readme_examples import ROOT

EAGLE3 = get_method("eagle3")
DRAFT = get_method("draft_model")


def test_sglang_refuses_probabilistic_drafting_of_a_sampling_method_only() -> None:
    sglang = get_engine("sglang")
    said = sglang.refusal(EAGLE3, "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "probabilistic")
    assert said is not None and "SGLang drafts its top-k tokens" in said and 'drafting = "greedy"' in said
    assert sglang.refusal(EAGLE3, "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "greedy") is None
    assert sglang.refusal(get_method("ngram"), None, "probabilistic") is None  # proposes fixed tokens: no mode
    with pytest.raises(SpecwiseError, match="SGLang drafts its top-k tokens"):
        sglang.speculative_config(Speculation(EAGLE3, 3, draft="d", drafting="probabilistic"))


def test_llama_server_refuses_probabilistic_drafting_and_says_which_refusal() -> None:
    llama = get_engine("llama.cpp")
    said = llama.refusal(DRAFT, "draft.gguf", "probabilistic")
    assert said is not None and "llama-server drafts the draft's most probable token" in said
    assert llama.refusal(DRAFT, "draft.gguf", "greedy") is None
    with pytest.raises(SpecwiseError, match="most probable token"):  # not "a draft model only, not draft_model"
        llama.speculative_config(Speculation(DRAFT, 4, draft="draft.gguf", drafting="probabilistic"))
    with pytest.raises(SpecwiseError, match="name its checkpoint"):
        llama.speculative_config(Speculation(DRAFT, 4))
    assert llama.speculative_config(Speculation(DRAFT, 4, draft="d.gguf")) == {
        "model_draft": "d.gguf",
        "draft_max": 4,
        "draft_min": 4,
    }


def _sglang_scenario(speculation: dict[str, object]) -> dict[str, object]:
    return {
        "name": "sglang-drafting",
        "deployment": {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB", "engine": "sglang"},
        "speculation": {"k": [0, 3], "acceptance": 0.7, **speculation},
        "sweep": {"qps": [1.0], "num_requests": 50},
        "workload": [{"name": "chat", "temperature": 1.0, "prompt_tokens": 500, "output_tokens": 100}],
    }


def test_simulate_refuses_what_sglang_cannot_run_naming_the_field() -> None:
    with pytest.raises(SpecwiseError, match=r"\[deployment\]\.engine: SGLang has no suffix speculation"):
        parse_scenario(_sglang_scenario({"method": "suffix"}))
    eagle3 = {"method": "eagle3", "draft": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}
    with pytest.raises(SpecwiseError, match=r"\[speculation\]\.drafting: SGLang drafts its top-k tokens"):
        parse_scenario(_sglang_scenario({**eagle3, "drafting": "probabilistic"}))
    assert parse_scenario(_sglang_scenario(eagle3)).memory_plan.fits  # greedy: simulated as before


def test_advise_marks_an_sglang_probabilistic_candidate_unsupported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ROOT / "examples/advise/summarize-low-qps.toml").read_text()
    text = text.replace("[deployment]\n", '[deployment]\nengine = "sglang"\n', 1)
    text = text.replace(
        'draft = "meta-llama/Llama-3.2-1B-Instruct"\n',
        'draft = "meta-llama/Llama-3.2-1B-Instruct"\ndrafting = "probabilistic"\n',
        1,
    )
    path = tmp_path / "s.toml"
    path.write_text(text)
    rc = main(["advise", "--scenario", str(path), "--json", "--processes", "1"])
    doc = json.loads(capsys.readouterr().out)
    by_name = {c["candidate"]: c for c in doc["candidates"]}
    draft = by_name["draft_model:meta-llama/Llama-3.2-1B-Instruct"]
    assert draft["verdict"] == "unsupported" and "top-k" in json.dumps(draft)
    assert by_name["ngram"]["verdict"] not in ("unsupported", "does_not_fit") and rc in (0, 1)
