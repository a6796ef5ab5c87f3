"""A draft vLLM would refuse or mis-load is never enabled: the compatibility rule fails with check-pair's reason,
advise exits 1, and the terminal prints the candidate's warnings (review items A1, C1)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specwise.acceptance.model import AcceptanceModel
from specwise.advisor import rules
from specwise.advisor.evidence import Evidence
from specwise.catalog import resolve_draft, resolve_gpu, resolve_model
from specwise.cli import main
from specwise.compat.pair import check_pair, method_fit
from specwise.memory import MemoryPlanRequest, plan_memory
from specwise.methods import get_method
from specwise.specs.model import ModelSpec

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
LLAMA8B = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
LLAMA_HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"


def _spec(name: str) -> ModelSpec:
    choice, _ = resolve_draft(name, LLAMA8B)
    assert choice.spec is not None
    return choice.spec


@pytest.mark.parametrize(
    ("method", "draft", "status", "says"),
    [
        ("draft_model", LLAMA_HEAD, "fail", "is an eagle3 head, not a language model"),
        ("eagle3", "meta-llama/Llama-3.2-1B-Instruct", "fail", "is a full language model, not an eagle3 head"),
        ("eagle", LLAMA_HEAD, "fail", 'use method = "eagle3"'),
        ("eagle3", LLAMA_HEAD, "pass", "as method eagle3 needs"),
        ("draft_model", "meta-llama/Llama-3.2-1B-Instruct", "pass", "a language model"),
    ],
)
def test_method_fit_checks_the_drafts_kind(method: str, draft: str, status: str, says: str) -> None:
    f = method_fit(method, _spec(draft))
    assert f.status == status and says in f.message


def _rule_input(method: str, draft: str, kind: str = "assumed") -> rules.RuleInput:
    choice, trained_for = resolve_draft(draft, LLAMA8B)
    assert choice.spec is not None
    plan = plan_memory(
        MemoryPlanRequest(target=LLAMA8B, gpu=resolve_gpu("H100-SXM-80GB"), tp=1, draft=choice, max_model_len=8192)
    )
    report = check_pair(LLAMA8B, choice.spec, head_trained_for=trained_for)
    findings = (method_fit(method, choice.spec), *report.findings)
    ev = [Evidence("chat", kind, "test", AcceptanceModel.iid(0.8))]
    return rules.RuleInput(
        get_method(method), LLAMA8B, choice.spec, plan, ev, [0.0], 3, "greedy", "auto", "auto", {}, 1.05, findings
    )


def test_compatibility_rule_fails_what_check_pair_fails() -> None:
    r = rules.compatibility(_rule_input("draft_model", "Qwen/Qwen3-0.6B"))
    assert r.status == "fail" and "different vocabularies" in r.message and "vocab fail" in r.evidence
    assert "draft/target compatibility" in rules.VETO_RULES
    assert rules.compatibility(_rule_input("eagle3", LLAMA_HEAD)).status == "pass"


def test_a_head_for_another_target_fails_on_a_prior_and_warns_when_measured() -> None:
    """Llama-3-70B's EAGLE head on Llama-3.1-70B: same vocabulary and hidden size, so vLLM loads it, but it was
    trained for the other target: no prior applies to it, measured acceptance does."""
    target = resolve_model("meta-llama/Llama-3.1-70B-Instruct")
    choice, trained_for = resolve_draft("yuhuili/EAGLE-LLaMA3-Instruct-70B", target)
    assert choice.spec is not None
    report = check_pair(target, choice.spec, head_trained_for=trained_for)
    findings = (method_fit("eagle", choice.spec), *report.findings)
    assert report.compatible and any(f.check == "head" and f.status == "warn" for f in findings)
    x = replace(
        _rule_input("eagle3", LLAMA_HEAD),
        method=get_method("eagle"),
        target=target,
        draft=choice.spec,
        draft_findings=findings,
    )
    assumed = rules.compatibility(x)
    assert assumed.status == "fail" and "trained for" in assumed.message and "profile" in assumed.message
    measured = rules.compatibility(replace(x, evidence=[Evidence("chat", "profiled", "t", AcceptanceModel.iid(0.8))]))
    assert measured.status == "warn"


@pytest.mark.parametrize(
    ("scenario", "says"),
    [
        ("llama8b-qwen-draft", "different vocabularies"),
        ("llama8b-qwen-eagle3-head", "different vocabularies"),
        ("eagle3-method-full-lm", "is a full language model, not an eagle3 head"),
        ("draft-model-method-eagle3-head", "is an eagle3 head, not a language model"),
    ],
)
def test_advise_vetoes_what_vllm_refuses(scenario: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--scenario", str(SCENARIOS / f"{scenario}.toml"), "--processes", "1", "--wide"]) == 1
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    # vLLM would not load the draft: the candidate is unsupported, and no simulated speedup is weighed against it
    assert "No candidate's draft can serve this target as proposed" in out and "unsupported" in out
    assert "rule 'draft/target compatibility' fails" in out and "despite" not in out
    assert says in out and "--speculative-config" not in out
    assert "warning (" in out and "): draft/target: " in out  # the candidate's warnings, in the terminal too


def test_a_head_for_another_target_is_disabled_not_unsupported(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM loads a head trained for another target (check-pair: compatible); only its assumed acceptance is
    nobody's prior. Review: it was called unsupported ("no candidate's draft can serve this target"), the opposite
    of the rule's own fix (profile the pair)."""
    assert main(["advise", "--scenario", str(SCENARIOS / "foreign-head.toml"), "--processes", "1", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    (cand,) = doc["candidates"]
    assert doc["decision"] == "disable" and cand["verdict"] == "disable"
    assert "profile this pair" in cand["reason"] and "can serve this target" not in doc["headline"]
