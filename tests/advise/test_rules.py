"""Each practitioner rule on its own: pass / warn / fail with its evidence."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specwise.acceptance.model import AcceptanceModel
from specwise.advisor import rules
from specwise.advisor.evidence import Evidence
from specwise.advisor.priors import prior
from specwise.catalog import resolve_draft, resolve_gpu, resolve_model
from specwise.memory import MemoryPlanRequest, plan_memory
from specwise.methods import get_method

TARGET = resolve_model("meta-llama/Llama-3.1-70B-Instruct")
H100 = resolve_gpu("H100-SXM-80GB")


def _input(
    draft_name: str = "meta-llama/Llama-3.2-1B-Instruct", alphas: tuple[float, ...] = (0.8,), **kw: object
) -> rules.RuleInput:
    choice, _ = resolve_draft(draft_name, TARGET)
    plan = plan_memory(MemoryPlanRequest(target=TARGET, gpu=H100, tp=4, draft=choice, max_model_len=8192))
    ev = [Evidence(f"c{i}", "given", "test", AcceptanceModel.iid(a)) for i, a in enumerate(alphas)]
    base = rules.RuleInput(
        get_method("draft_model"),
        TARGET,
        choice.spec,
        plan,
        ev,
        [0.0] * len(alphas),
        4,
        "greedy",
        "auto",
        "auto",
        {1.0: 2.0, 8.0: 1.5},
        1.05,
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def test_size_ratio() -> None:
    assert rules.size_ratio(_input()).status == "pass"  # 70B : 1.2B ~ 1:57 -> smaller than 1:12, fine
    in_range = rules.size_ratio(_input("meta-llama/Llama-3.1-8B-Instruct"))
    assert in_range.status == "pass" and "1:8.8" in in_range.evidence and "within" in in_range.message
    big = rules.size_ratio(_input(target=resolve_model("meta-llama/Llama-3.1-8B-Instruct")))
    assert big.status == "warn" and "1:6." in big.evidence
    assert rules.size_ratio(_input(draft=TARGET)).status == "fail"


def test_acceptance_level_uses_al_not_only_the_rate() -> None:
    assert rules.acceptance_level(_input(alphas=(0.8,))).status == "pass"
    r = rules.acceptance_level(_input(alphas=(0.6,)))
    assert r.status == "warn" and "AL" in r.message  # rate at k=4 is 0.43, AL 2.3: warn, explained
    assert rules.acceptance_level(_input(alphas=(0.1,))).status == "fail"


def test_a_lookups_low_al_warns_and_the_simulation_decides() -> None:
    """A lookup costs little per step: its AL under 1.3 warns (review s45c: an assumed n-gram AL of 1.26 said
    "disable" beside a simulated 1.23x); a drafting network's fails. The rule is named for what it judges."""
    r = rules.acceptance_level(_input(alphas=(0.2,), method=get_method("ngram")))  # AL 1.25
    assert (r.rule, r.status) == ("acceptance", "warn") and "the simulated speedup decides" in r.message
    # AL 1.02 bounds any speedup at 1.02x: under min_speedup 1.05, a lookup fails too
    bound = rules.acceptance_level(_input(alphas=(0.02,), method=get_method("ngram")))
    assert bound.status == "fail" and "could not make a step 1.05x as productive" in bound.message
    mixed = rules.acceptance_level(_input(alphas=(0.02, 0.6), method=get_method("ngram")))  # one class gains
    assert mixed.status == "warn"
    assert rules.acceptance_level(_input(alphas=(0.1,))).rule == "acceptance" in rules.VETO_RULES


def test_the_lowest_al_is_judged_on_its_own_class() -> None:
    """A class with a higher rate can have the lower AL (a lookup's rare matches): the AL test takes the class with
    the lowest AL, not the one with the lowest rate (review s45c)."""
    rare = Evidence("rare", "given", "test", AcceptanceModel.iid(0.9), proposal_rate=0.08)  # AL 1 + 0.08 x 3.1
    common = Evidence("common", "given", "test", AcceptanceModel.iid(0.45))  # rate lower, AL 1.8
    x = _input(alphas=(0.9, 0.45), evidence=[rare, common])
    r = rules.acceptance_level(x)
    assert r.status == "fail" and "class 'rare'" in r.message


def test_temperature_and_greedy_drafting() -> None:
    assert rules.temperature(_input()).status == "pass"
    r = rules.temperature(_input(temperatures=[0.0, 0.8]))
    assert r.status == "warn" and "probabilistic" in r.message


def test_saturation_leaves_out_loads_the_deployment_cannot_keep_up_with() -> None:
    """Above capacity both queues grow without bound: their latency ratio is not a speedup to judge (review A2)."""
    gains = {1.0: 2.0, 8.0: 1.5, 64.0: 0.7}
    assert rules.saturation(_input(best_speedup_by_qps=gains)).status == "warn"
    r = rules.saturation(_input(best_speedup_by_qps=gains, overloaded_qps=(64.0,)))
    assert r.status == "pass" and "64: 0.70x (overloaded)" in r.evidence
    r = rules.saturation(_input(best_speedup_by_qps={64.0: 0.7}, overloaded_qps=(64.0,)))
    assert r.status == "warn" and "cannot keep up at any simulated load (64)" in r.message


def test_saturation() -> None:
    assert rules.saturation(_input()).status == "pass"
    r = rules.saturation(_input(best_speedup_by_qps={1.0: 2.0, 8.0: 1.2, 32.0: 0.7}))
    assert r.status == "warn" and "32" in r.message
    assert rules.saturation(_input(best_speedup_by_qps={1.0: 1.01})).status == "fail"


def test_memory() -> None:
    assert rules.memory(_input()).status in ("pass", "warn")
    choice, _ = resolve_draft("meta-llama/Llama-3.1-8B-Instruct", TARGET)
    tight = plan_memory(MemoryPlanRequest(target=TARGET, gpu=H100, tp=2, draft=choice, max_model_len=8192))
    r = rules.memory(_input(plan=tight))
    assert r.status == "fail" and "GiB" in r.message


@pytest.mark.parametrize(
    ("target_q", "draft_q", "status"),
    [
        ("auto", "auto", "pass"),
        ("int4", "auto", "warn"),
        ("awq", "int8", "warn"),
        ("auto", "int8", "pass"),
        ("auto", "int4", "warn"),
    ],
)
def test_quantisation(target_q: str, draft_q: str, status: str) -> None:
    assert rules.quantization(_input(target_quantization=target_q, draft_quantization=draft_q)).status == status


def test_mixed_workloads() -> None:
    assert rules.mixed_workload(_input(alphas=(0.8, 0.78))).status == "pass"
    r = rules.mixed_workload(_input(alphas=(0.9, 0.2)))
    assert r.status == "warn" and "c1" in r.message


def test_monitoring_gives_promql() -> None:
    r = rules.monitoring(_input())
    assert "vllm:spec_decode_num_accepted_tokens_total" in r.evidence and "num_drafts_total" in r.evidence


def test_priors_are_labelled_and_fall_with_temperature() -> None:
    cold, hot = prior(get_method("draft_model"), "code", 0.0), prior(get_method("draft_model"), "code", 1.0)
    assert "ASSUMED" in cold.source
    assert hot.model.conditional_at(1) < cold.model.conditional_at(1)
    assert prior(get_method("draft_model"), "code", 1.0, "probabilistic").model.conditional_at(
        1
    ) > hot.model.conditional_at(1)
    # n-gram at T = 0: SpecDecode-Bench's measured per-position rates (Llama-3.1-8B, vLLM 0.10.1, k = 5), per step
    # = the match rate x the per-match rates
    summarize = prior(get_method("ngram"), "summarization", 0.0)
    per_step = [summarize.proposal_rate * r for r in summarize.model.per_position(5)]
    assert [round(r, 4) for r in per_step] == [0.1235, 0.0896, 0.0684, 0.0539, 0.0429]
    assert "CNN/DailyMail" in summarize.source and "ASSUMED" in summarize.source
    code, chat = prior(get_method("ngram"), "code", 0.0), prior(get_method("ngram"), "chat", 0.0)
    assert code.proposal_rate > chat.proposal_rate > summarize.proposal_rate
    assert code.model.mean_acceptance_length(5) > chat.model.mean_acceptance_length(5) > 2.0  # per match


def test_a_rarely_matching_lookup_gains_almost_nothing_per_step() -> None:
    """Review 2: per match AL 4.3, but a match in 2% of steps: 1 + 0.02 x 3.3 = 1.07 tokens per step -- fail."""
    per_match = AcceptanceModel.from_per_position([0.95, 0.9, 0.8, 0.65])
    rare = Evidence("w", "given", "test", per_match, proposal_rate=0.02)
    often = Evidence("w", "given", "test", per_match, proposal_rate=0.9)
    fail = rules.acceptance_level(_input(evidence=[rare], temperatures=[0.0]))
    assert fail.status == "fail" and "AL 1.07" in fail.message and "in 2% of steps" in fail.evidence
    assert rules.acceptance_level(_input(evidence=[often], temperatures=[0.0])).status == "pass"
