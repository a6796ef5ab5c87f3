"""Common practitioner rules of thumb for speculative decoding as individual checks: pass / warn / fail, with
evidence (the rules themselves are advice, not measurements; where a rule has a measured source it is named).

Each check is a pure function of a :class:`RuleInput`; none decides alone -- the simulated speedup does -- but
each says what an operator should know before enabling speculation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from specwise.advisor.evidence import Evidence
from specwise.compat.pair import Finding, served_vocab_finding
from specwise.contracts.advice import RuleCheck
from specwise.engines.vllm import PROMQL_ACCEPTANCE_LENGTH, PROMQL_ACCEPTANCE_RATE
from specwise.memory.planner import MemoryPlan
from specwise.methods import Method
from specwise.specs.model import ModelSpec
from specwise.study.decide import falls_below
from specwise.units import fmt_about

RuleResult = RuleCheck  # pass | warn | fail, with the evidence it used


@dataclass(frozen=True)
class RuleInput:
    method: Method
    target: ModelSpec
    draft: ModelSpec | None
    plan: MemoryPlan
    evidence: Sequence[Evidence]
    temperatures: Sequence[float]
    k: int
    drafting: str
    target_quantization: str
    draft_quantization: str
    best_speedup_by_qps: Mapping[float, float]  # empty when not simulated
    min_speedup: float
    draft_findings: Sequence[Finding] = ()  # the pair check's findings (compat/pair.py), the method's fit first
    band: float = 0.0  # the predictor's relative error band on a speedup (the verdict tests its low end)
    overloaded_qps: Sequence[float] = ()  # loads the deployment cannot keep up with (no steady state to compare)
    undefined_qps: Sequence[float] = ()  # loads with no speedup to quote (goodput: none without speculation)


def compatibility(x: RuleInput) -> RuleResult:
    """What vLLM would refuse or mis-load (compat/pair.py, as ``specwise check-pair`` says it): a different
    vocabulary or tokenizer, a head that cannot read the target's hidden states, a draft of the wrong kind for the
    method. A head trained for another target loads, but its acceptance is nobody's prior: it fails unless the
    acceptance used was measured for this pair."""
    name = "draft/target compatibility"
    if not x.draft_findings:
        return RuleResult(name, "pass", f"{x.method.name} has no draft checkpoint to check against the target", "-")
    ev = "; ".join(f"{f.check} {f.status}" for f in x.draft_findings)
    fails = [f.message for f in x.draft_findings if f.status == "fail"]
    if fails:
        return RuleResult(name, "fail", "vLLM would refuse or mis-load this draft: " + "; ".join(fails), ev)
    foreign = [f.message for f in x.draft_findings if f.check == "head" and f.status == "warn"]
    if foreign and any(e.kind == "assumed" for e in x.evidence):
        return RuleResult(
            name,
            "fail",
            f"{foreign[0]}; the acceptance used is a prior for a head on its own target, so the simulated gain "
            "does not apply: profile this pair (specwise profile) and pass --profile",
            ev,
        )
    if foreign:
        return RuleResult(name, "warn", foreign[0] + " (the acceptance used was measured for this pair)", ev)
    served = served_vocab_finding(x.draft_findings)
    if served is not None:  # a padding-only vocabulary difference, on a vLLM that takes the key (advisor/decision.py)
        return RuleResult(name, "warn", served.message, ev)
    return RuleResult(name, "pass", "vocabulary, tokenizer and the method's draft kind agree (as check-pair says)", ev)


def size_ratio(x: RuleInput) -> RuleResult:
    name = "draft:target size ratio"
    if x.draft is None or x.method.proposer != "draft_model":
        return RuleResult(name, "pass", f"{x.method.name} has no separate draft model to size", "-")
    ratio = x.target.active_params / max(1, x.draft.total_params)
    ev = (
        f"target {x.target.active_params / 1e9:.2f}B active params, draft {x.draft.total_params / 1e9:.2f}B: "
        f"1:{ratio:.1f}"
    )
    if ratio < 4:
        return RuleResult(name, "fail", "the draft is too large: its steps eat the gain (common advice: 1:8-1:12)", ev)
    if ratio < 8:
        message = "larger than the common 1:8-1:12 advice; a smaller draft may win if its AL holds"
        return RuleResult(name, "warn", message, ev)
    if ratio > 12:
        return RuleResult(
            name,
            "pass",
            "smaller than 1:12: cheap to run; smaller drafts often win when AL holds "
            "(SpecDecode-Bench); the simulated speedup decides",
            ev,
        )
    return RuleResult(name, "pass", "within the common 1:8-1:12 advice", ev)


ACCEPTANCE_RULE = "acceptance"
LOW_AL = 1.3  # tokens a step emits below which a drafting network is not paid for (a rule of thumb)
LOW_RATE = 0.5  # the practitioner's rule of thumb for the acceptance rate


def acceptance_level(x: RuleInput) -> RuleResult:
    """Each class's acceptance at k. AL (tokens per step, a lookup's matchless steps included) below ``min_speedup``
    in every class fails whatever the method: a speculative step never costs less than a plain one, so per step AL
    bounds the gain (a class that gains is not vetoed by one that does not: review s45d). Below
    :data:`LOW_AL` it fails for a method that runs a draft network -- its passes cost every step -- and warns for a
    lookup, which costs little per step, so that its simulated speedup decides (review s45c: an assumed n-gram AL of
    1.26 said "disable" beside a simulated 1.23x); an acceptance rate below :data:`LOW_RATE` warns. The lowest AL and
    the lowest rate are each judged on the class that has it."""
    rows = []
    seen: list[tuple[float, float, str]] = []
    for e in x.evidence:
        rate, al = e.model.acceptance_rate(x.k), _tokens_per_step(e, x.k)
        per_match = (
            f", per match {e.model.mean_acceptance_length(x.k):.2f} in {e.proposal_rate:.0%} of steps"
            if e.proposal_rate < 1.0
            else ""
        )
        rows.append(f"{e.workload}: rate {rate:.2f}, AL {al:.2f}{per_match} ({e.kind})")
        seen.append((rate, al, e.workload))
    ev = f"at k={x.k}: " + "; ".join(rows)
    assert seen
    _, low_al, al_class = min(seen, key=lambda t: t[1])
    low_rate, rate_al, rate_class = min(seen, key=lambda t: t[0])
    high_al = max(al for _, al, _ in seen)
    if high_al < x.min_speedup:  # a speculative step never costs less than a plain one: per step, the gain <= AL
        return RuleResult(
            ACCEPTANCE_RULE,
            "fail",
            f"every class emits under {x.min_speedup:g} tokens per step (at most {high_al:.2f}): even free drafting "
            f"and verification could not make a step {x.min_speedup:g}x as productive (only a queue shortened near "
            "capacity could gain more)",
            ev,
        )
    if low_al < LOW_AL and x.method.has_weights:
        return RuleResult(
            ACCEPTANCE_RULE,
            "fail",
            f"class {al_class!r} gains almost nothing per step (AL {low_al:.2f}, under {LOW_AL}) to pay for the "
            "draft's passes",
            ev,
        )
    if low_al < LOW_AL:
        return RuleResult(
            ACCEPTANCE_RULE,
            "warn",
            f"class {al_class!r} gains little per step (AL {low_al:.2f}, under {LOW_AL}); a lookup costs little per "
            "step, so the simulated speedup decides",
            ev,
        )
    if low_rate < LOW_RATE:
        return RuleResult(
            ACCEPTANCE_RULE,
            "warn",
            f"class {rate_class!r} accepts {low_rate:.2f} of draft tokens: below the rule-of-thumb {LOW_RATE}, but the "
            f"rate falls with k by definition -- AL {rate_al:.2f} tokens/step and the simulated speedup matter more",
            ev,
        )
    return RuleResult(
        ACCEPTANCE_RULE, "pass", f"every class accepts at least {LOW_RATE} of draft tokens and AL >= {LOW_AL}", ev
    )


def _tokens_per_step(e: Evidence, k: int) -> float:
    """Tokens a decode step emits on average: 1 + the match rate x the accepted tokens per draft (a lookup drafts
    only on a match; vLLM's AL counts drafts only)."""
    return 1.0 + e.proposal_rate * (e.model.mean_acceptance_length(k) - 1.0)


def temperature(x: RuleInput) -> RuleResult:
    name = "temperature"
    hot = [t for t in x.temperatures if t > 0]
    ev = f"class temperatures {sorted(set(x.temperatures))}; drafting {x.drafting}"
    if not hot:
        return RuleResult(name, "pass", "all traffic is greedy (T=0): acceptance is an exact-match rate", ev)
    msg = f"traffic at T up to {max(hot):g} lowers acceptance"
    if x.drafting == "greedy" and x.method.samples_from_a_distribution:
        msg += "; vLLM drafts greedily (accept p(argmax q)): profile draft_sample_method=probabilistic too"
    assumed = [e for e in x.evidence if e.kind == "assumed"]
    if assumed:
        msg += "; the acceptance used is an ASSUMED prior -- run specwise profile at these temperatures"
    return RuleResult(name, "warn", msg, ev)


def saturation(x: RuleInput) -> RuleResult:
    """The simulated speedup across the swept loads, against ``min_speedup``: a loss at loads ABOVE every paying one
    is the saturation the vLLM 2024 spec-decode blog measured (1.4-1.8x slower at high QPS); a loss at loads below
    a paying one is not, and is said as the curve shows it; where the point estimate pays everywhere, a load at which
    the band's low end does not is a warning, whatever the load (so the rule is named for the curve, not for high
    load: review s45c)."""
    name = "speedup across loads"
    every = sorted(x.best_speedup_by_qps.items())
    if not every:
        return RuleResult(name, "warn", "not simulated (the candidate does not fit)", "-")
    ev = "best simulated speedup by QPS: " + ", ".join(
        f"{q:g}: "
        + ("undefined" if q in x.undefined_qps else f"{s:.2f}x")
        + (" (overloaded)" if q in x.overloaded_qps else "")
        for q, s in every
    )
    # a growing queue's latency ratio is no speedup, nor is a ratio to no goodput
    gains = [(q, s) for q, s in every if q not in x.overloaded_qps and q not in x.undefined_qps]
    if not gains and x.undefined_qps:
        return RuleResult(
            name,
            "warn",
            f"no speedup to judge: without speculation no request meets the SLOs at {qs(x.undefined_qps)} QPS",
            ev,
        )
    if not gains:
        return RuleResult(
            name, "warn", f"the deployment cannot keep up at any simulated load ({qs(x.overloaded_qps)})", ev
        )
    losing = [q for q, s in gains if s < x.min_speedup]
    if len(losing) == len(gains):
        return RuleResult(name, "fail", f"speculation never gains {x.min_speedup:g}x at any simulated load", ev)
    if losing:
        return RuleResult(name, "warn", _losses(gains, losing, x.min_speedup), ev)
    (q_lo, s_lo), (q_hi, s_hi) = gains[0], gains[-1]
    if s_hi < 0.5 * s_lo:
        return RuleResult(
            name,
            "warn",
            f"the gain falls from {s_lo:.2f}x at {q_lo:g} QPS to {s_hi:.2f}x at {q_hi:g} QPS: verification competes "
            "with other requests as the GPU fills",
            ev,
        )
    unsure = [(q, s * (1 - x.band)) for q, s in gains if s * (1 - x.band) < x.min_speedup]
    if unsure:
        lows = ", ".join(f"{q:g} QPS ({lo:.2f}x)" for q, lo in unsure)
        return RuleResult(
            name,
            "warn",
            f"the point estimate clears {x.min_speedup:g}x at every simulated load, but the low end of the "
            f"+-{x.band:.0%} band does not at {lows}",
            ev,
        )
    return RuleResult(name, "pass", f"clears {x.min_speedup:g}x at every simulated load", ev)


def qs(loads: Sequence[float]) -> str:
    return ", ".join(f"{q:g}" for q in loads)


def _losses(gains: Sequence[tuple[float, float]], losing: Sequence[float], minimum: float) -> str:
    paying = [q for q, s in gains if s >= minimum]
    low = [q for q in losing if q < min(paying)]
    high = [q for q in losing if q > max(paying)]
    middle = [q for q in losing if q not in low and q not in high]
    parts = []
    if low:
        parts.append(
            f"below {minimum:g}x at LOW load ({qs(low)} QPS) while it pays at {qs(paying)} QPS: not saturation -- "
            "the simulated gain rises with load there"
        )
    if middle:
        parts.append(f"below {minimum:g}x at {qs(middle)} QPS, between loads where it pays")
    if high:
        cross = fmt_about(falls_below(dict(gains), minimum, high[0]))
        parts.append(
            f"stops paying (< {minimum:g}x) between {max(paying):g} and {high[0]:g} QPS (~{cross}, interpolated): "
            "verification competes with other requests for a saturated GPU"
        )
    return "; ".join(parts)


def memory(x: RuleInput) -> RuleResult:
    name = "VRAM for both models"
    p = x.plan
    ev = (
        f"per GPU: budget {p.budget_bytes_per_gpu / 2**30:.1f} GiB, target weights "
        f"{p.target.weight_bytes_per_gpu / 2**30:.1f} GiB, draft weights "
        f"{(p.draft.weight_bytes_per_gpu if p.draft else 0) / 2**30:.1f} GiB; "
        f"KV tokens {p.kv_cache_tokens:,} with the draft vs "
        f"{p.kv_cache_tokens_without_draft:,} without; max concurrent seqs {p.max_concurrent_seqs} vs "
        f"{p.max_concurrent_seqs_without_draft}"
    )
    if not p.fits:
        return RuleResult(name, "fail", "does not fit: " + "; ".join(p.problems), ev)
    lost = 1 - p.kv_cache_tokens / max(1, p.kv_cache_tokens_without_draft)
    if lost > 0.25:
        return RuleResult(
            name,
            "warn",
            f"the draft costs {lost:.0%} of the KV cache (less concurrency, earlier preemption under load)",
            ev,
        )
    if p.draft is None:  # a lookup proposer (n-gram, suffix) has no weights and no KV cache of its own
        return RuleResult(name, "pass", "fits; no draft model: the KV cache is the target's alone", ev)
    return RuleResult(name, "pass", f"fits; the draft costs {lost:.0%} of the KV cache", ev)


def quantization(x: RuleInput) -> RuleResult:
    name = "quantisation"
    tq, dq = x.target_quantization.lower(), x.draft_quantization.lower()
    ev = f"target {tq}, draft {dq}"
    if any(s in tq for s in ("int4", "awq", "gptq", "w4")):
        return RuleResult(
            name,
            "warn",
            "an INT4 target verifies with shifted probabilities: acceptance drops "
            "noticeably (vLLM PR #41745) -- profile with --quantize target=int4 before trusting "
            "an unquantised acceptance",
            ev,
        )
    if any(s in dq for s in ("int4", "awq", "gptq", "w4")):
        return RuleResult(name, "warn", "an INT4 draft may lose acceptance; INT8 is the safe choice", ev)
    if any(s in dq for s in ("int8", "w8")):
        message = "INT8 draft with a BF16 target: generally safe (common advice; profile to be sure)"
        return RuleResult(name, "pass", message, ev)
    return RuleResult(name, "pass", "no quantisation risk to acceptance", ev)


def mixed_workload(x: RuleInput) -> RuleResult:
    name = "mixed workloads"
    als = [(e.workload, _tokens_per_step(e, x.k)) for e in x.evidence]
    ev = ", ".join(f"{w} AL {a:.2f}" for w, a in als)
    temps = set(x.temperatures)
    if len(als) < 2:
        return RuleResult(name, "pass", "one class of traffic", ev)
    spread = max(a for _, a in als) - min(a for _, a in als)
    if spread > 0.75 or (len(temps) > 1 and max(temps) - min(temps) >= 0.5):
        lo = min(als, key=lambda t: t[1])[0]
        return RuleResult(
            name,
            "warn",
            f"acceptance differs widely across classes (AL spread {spread:.2f}); class "
            f"{lo!r} drags the average: route it to a deployment without speculation or split "
            "traffic per class",
            ev,
        )
    return RuleResult(name, "pass", f"classes accept alike (AL spread {spread:.2f})", ev)


def monitoring(x: RuleInput) -> RuleResult:
    return RuleResult(
        "monitoring",
        "pass",
        "watch acceptance under real load (specwise monitor --url http://HOST:PORT/metrics)",
        f"acceptance rate: {PROMQL_ACCEPTANCE_RATE}; mean acceptance length: {PROMQL_ACCEPTANCE_LENGTH}",
    )


# A failure of these overrides a simulated gain: the simulation cannot see what they see.
VETO_RULES = ("draft/target compatibility", ACCEPTANCE_RULE, "VRAM for both models")

RULES: tuple[Callable[[RuleInput], RuleResult], ...] = (
    compatibility,
    size_ratio,
    acceptance_level,
    temperature,
    saturation,
    memory,
    quantization,
    mixed_workload,
    monitoring,
)


def check_all(x: RuleInput) -> list[RuleResult]:
    return [rule(x) for rule in RULES]


def summary(results: Sequence[RuleResult]) -> dict[str, int]:
    return {s: sum(r.status == s for r in results) for s in ("pass", "warn", "fail")}
