"""Measured acceptance is used only for the pair it measured: another target or another n-gram lookup is refused
with its reason shown to the user, never silently applied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specwise.advisor.decision import advise
from specwise.advisor.evidence import names_match
from specwise.advisor.inputs import load_inputs
from specwise.errors import SpecwiseError
from specwise.specs.model import same_model

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "advise"


def _ngram_profile(tmp_path: Path, target: str, lookup: tuple[int, int]) -> Path:
    doc = {
        "schema": "specwise.profile/1",
        "method": "ngram",
        "target": target,
        "draft": None,
        "settings": {"prompt_lookup_min": lookup[0], "prompt_lookup_max": lookup[1]},
        "results": [
            {
                "temperature": 0.0,
                "drafting": "greedy",
                "quantization": {},
                "class": None,
                "alpha_mean": 0.1,
                "per_position_acceptance": [0.08, 0.03, 0.01, 0.0, 0.0, 0.0],
                "by_k": [{"k": 6, "per_position_acceptance": [0.08, 0.03, 0.01, 0.0, 0.0, 0.0]}],
            }
        ],
    }
    path = tmp_path / "ngram-profile.json"
    path.write_text(json.dumps(doc))
    return path


def _ngram(path: Path) -> dict[str, Any]:
    doc = advise(load_inputs(EXAMPLES / "summarize-low-qps.toml"), processes=1, profile_paths=[path]).to_json()
    return next(c for c in doc["candidates"] if c["candidate"] == "ngram")


def test_profile_of_the_same_target_and_lookup_is_used(tmp_path: Path) -> None:
    cand = _ngram(_ngram_profile(tmp_path, "meta-llama/Llama-3.1-70B-Instruct", (2, 4)))
    assert cand["evidence"][0]["kind"] == "profiled"
    assert not any("not used" in w for w in cand["warnings"])


@pytest.mark.parametrize(
    ("target", "lookup", "reason"),
    [
        ("Qwen/Qwen3-8B", (2, 4), "it measured target Qwen/Qwen3-8B, the deployment serves"),
        ("meta-llama/Llama-3.1-8B-Instruct", (2, 4), "it measured target meta-llama/Llama-3.1-8B-Instruct"),
        ("meta-llama/Llama-3.1-70B-Instruct", (1, 3), "its n-gram lookup was 1-3, the candidate's is 2-4"),
    ],
)
def test_profile_of_another_pair_is_refused_with_its_reason(
    tmp_path: Path, target: str, lookup: tuple[int, int], reason: str
) -> None:
    """No candidate can use it: refused (exit 2), not kept as a warning under an ASSUMED headline."""
    path = _ngram_profile(tmp_path, target, lookup)
    with pytest.raises(SpecwiseError) as refused:
        _ngram(path)
    assert str(refused.value).startswith(f"{path}: not used by any candidate (") and reason in str(refused.value)


def test_a_profile_one_candidate_uses_warns_for_the_other(tmp_path: Path) -> None:
    """Two n-gram candidates, the profile's lookup one of theirs: used for it, and the other one says why not."""
    scenario = tmp_path / "two.toml"
    text = (EXAMPLES / "summarize-low-qps.toml").read_text()
    scenario.write_text(
        text
        + '\n[[candidate]]\nname = "ngram-1-3"\nmethod = "ngram"\nk = [0, 4]\n'
        + "prompt_lookup_min = 1\nprompt_lookup_max = 3\n"
    )
    path = _ngram_profile(tmp_path, "meta-llama/Llama-3.1-70B-Instruct", (2, 4))
    doc = advise(load_inputs(scenario), processes=1, profile_paths=[path]).to_json()
    warnings = [w for c in doc["candidates"] for w in c["warnings"]]
    assert any("its n-gram lookup was 2-4, the candidate's is 1-3" in w for w in warnings), warnings


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("meta-llama/Llama-3.2-1B-Instruct", "./models/llama-3.2-1b-instruct", True),
        ("HuggingFaceTB/SmolLM2-135M", "models/smollm2_135m", True),
        ("meta-llama/Llama-3.1-8B-Instruct", "RedHatAI/Llama-3.1-8B-Instruct-FP8", True),
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct", False),
        ("Qwen/Qwen3-8B", "Qwen/Qwen3-0.6B", False),
        ("t", "meta-llama/Llama-3.1-70B-Instruct", False),
        ("llama", "meta-llama/Llama-3.1-8B-Instruct", False),  # a family or a served alias names no checkpoint
        ("Instruct", "meta-llama/Llama-3.1-8B-Instruct", False),
        ("HuggingFaceTB/SmolLM2-135M", "HuggingFaceTB/SmolLM2-1.35B", False),
        (None, "x", False),
    ],
)
def test_names_match_is_not_a_substring_test(a: str | None, b: str, same: bool) -> None:
    assert names_match(a, b) is same
    assert names_match(b, a) is same
    if a is not None:  # one rule for profiles, calibrations, scenarios and the monitor
        assert same_model(a, b) is same and same_model(b, a) is same


def test_a_document_of_a_method_no_candidate_uses_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """Ignoring it would leave the acceptance 'assumed' while the user believes they measured it."""
    from specwise.cli import main

    root = Path(__file__).resolve().parents[2]
    bench = root / "tests" / "fixtures" / "vllm_bench_serve" / "eagle3-on-mock.json"
    args = ["advise", "--scenario", "example:advise/summarize-low-qps", "--processes", "1", "--bench", str(bench)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "eagle3-on-mock.json: the run measured acceptance of eagle3; no candidate of this scenario uses it" in err


def test_a_profile_of_a_method_no_candidate_uses_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from specwise.cli import main

    profile = Path(__file__).resolve().parents[1] / "profiler" / "profile_document_golden.json"  # a draft_model one
    args = ["advise", "--scenario", "example:advise/summarize-high-qps", "--processes", "1", "--profile", str(profile)]
    assert main(args) == 2
    assert "a profile of draft_model; no candidate of this scenario uses it (candidates: ngram)" in (
        capsys.readouterr().err
    )


def _draft_profile(tmp_path: Path, draft: str) -> Path:
    doc = json.loads(_ngram_profile(tmp_path, "meta-llama/Llama-3.1-70B-Instruct", (2, 4)).read_text())
    doc.update(method="draft_model", draft=draft, settings={})
    doc["results"][0]["per_position_acceptance"] = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    path = tmp_path / "draft-profile.json"
    path.write_text(json.dumps(doc))
    return path


def _draft(path: Path) -> dict[str, Any]:
    doc = advise(load_inputs(EXAMPLES / "summarize-low-qps.toml"), processes=1, profile_paths=[path]).to_json()
    return next(c for c in doc["candidates"] if c["candidate"].startswith("draft_model"))


@pytest.mark.parametrize(
    "draft",
    [
        "meta-llama/Llama-3.2-1B",  # the base model: another fine-tune than the candidate's -Instruct
        "HuggingFaceTB/SmolLM2-135M",
        "/models/Llama-3.2-1B-Instruct-draft4",  # a draft cut from it: other weights
    ],
)
def test_a_profile_of_another_draft_is_not_taken_for_the_candidates(tmp_path: Path, draft: str) -> None:
    """It was taken as 'the only profile given' (review s44c: a draft == target profile, acceptance 1.0, priced a
    4-layer draft at 2.27x), or as the same model by a name extending the other's."""
    path = _draft_profile(tmp_path, draft)
    with pytest.raises(SpecwiseError) as refused:
        _draft(path)
    assert f"it measured draft {draft}" in str(refused.value)


@pytest.mark.parametrize(
    "draft", ["meta-llama/Llama-3.2-1B-Instruct", "/models/llama-3.2-1b-instruct", "RedHatAI/Llama-3.2-1B-Instruct-FP8"]
)
def test_a_profile_of_the_same_draft_weights_is_used(tmp_path: Path, draft: str) -> None:
    cand = _draft(_draft_profile(tmp_path, draft))
    assert cand["evidence"][0]["kind"] == "profiled", cand["evidence"]


def test_same_weights_allows_only_storage_suffixes() -> None:
    from specwise.specs.model import same_weights

    assert same_weights("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct-GPTQ-Int4")
    assert same_weights("x/Llama-3.2-1B-Instruct", "y/Llama-3.2-1B-Instruct-quantized.w4a16")
    assert same_weights("bartowski/Llama-3.2-1B-Instruct", "/m/Llama-3.2-1B-Instruct-Q4_K_M")
    assert same_weights("HuggingFaceTB/SmolLM2-135M-Instruct", "/m/SmolLM2-135M-Instruct.Q4_1.gguf")  # llama.cpp's
    assert same_weights("a/Llama-3.2-1B-Instruct", "b/Llama-3.2-1B-Instruct-GPTQ-4bit-128g")
    assert same_weights("meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-1B-Instruct-SpinQuant_INT4_EO8")
    assert same_weights("a/Llama-3.2-1B-Instruct", "b/Llama-3.2-1B-Instruct-IQ4_XS")
    assert not same_weights("meta-llama/Llama-3.1-8B", "NousResearch/Hermes-3-Llama-3.1-8B")  # a prefix: a fine-tune
    assert not same_weights("x/llama-68m", "y/llama-68m-2")
    assert not same_weights("smollm2-135m", "smollm2-135m-draft4")
    assert not same_weights("a/Llama-3.2-1B", "b/Llama-3.2-1B-Instruct")
    assert same_model("a/Llama-3.2-1B", "b/Llama-3.2-1B-Instruct")  # the looser rule, for targets and servers
