"""Per candidate: memory plan, simulated speedup curve, best k or a k-by-batch-size schedule, rule checks;
then a ranking and one recommendation. Every reason carries the evidence it used."""

from __future__ import annotations

import logging
import math
import shlex
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from specwise.advisor import rules
from specwise.advisor.band_rule import band_verdict, interval_verdict
from specwise.advisor.commands import measure_plan, serve_command
from specwise.advisor.config_target import ConfigTarget, config_target, noted, resolved_names
from specwise.advisor.evidence import Evidence, attribute_methods, refuse_unused, resolve_evidence, window_note
from specwise.advisor.inputs import AdviseInputs, Candidate
from specwise.advisor.schedule import batch_at, k_at, schedule_checks, schedule_for, schedule_words
from specwise.advisor.temperature import temperature_curves
from specwise.catalog import resolve_model
from specwise.compat.pair import served_vocab_finding, served_with_heterogeneous_vocab
from specwise.contracts.advice import (
    Advice,
    CandidateAdvice,
    CandidateMemory,
    EvidenceUsed,
    NearbyEvidence,
    SamplingNoise,
    ScheduleCheck,
)
from specwise.contracts.bench import BenchDoc
from specwise.contracts.bench_formats import read_bench
from specwise.contracts.document import Fields
from specwise.contracts.profile import ProfileDoc
from specwise.contracts.sweep import P80_SPEEDUP_ERROR, SweepResult
from specwise.engines import Engine, Speculation, get_engine
from specwise.engines.base import LOOPBACK
from specwise.engines.vllm import PROMQL_ACCEPTANCE_LENGTH, PROMQL_ACCEPTANCE_RATE
from specwise.engines.vllm_kv_cache import kv_cache_refusal
from specwise.engines.vllm_versions import eagle3_target_refusal, head_tp_refusal, heterogeneous_vocab_refusal
from specwise.errors import SpecwiseError
from specwise.executors import Executor
from specwise.executors.local import LocalExecutor
from specwise.memory.vllm_rules import draft_slots_refusal
from specwise.perfmodel.factory import PredictorChoice, calibration_gap
from specwise.perfmodel.profiles import published_fit
from specwise.scenario.build import build_scenario, enough_requests, few_requests_warning, measured_worth_saying
from specwise.scenario.model import Scenario, ScenarioSpec
from specwise.scenario.parse import past_positions_note
from specwise.study.decide import crossover, decide, falls_below
from specwise.study.replicates import CAPACITY_NEAR, capacity_replicates, edge_loads, sampling_noise, with_mean
from specwise.study.sweep import run_sweep
from specwise.units import fmt_about, fmt_beside, fmt_rate, fmt_ratio, fmt_x
from specwise.validate.nearest import StaleFit, nearby_evidence, query_for

log = logging.getLogger(__name__)

COMPATIBILITY_RULE = "draft/target compatibility"  # its failure: vLLM refuses or mis-loads the draft
INCOMPATIBLE = f"rule '{COMPATIBILITY_RULE}' fails: "  # how an unsupported candidate's reason begins when it is that
VERDICT_ORDER = {"enable": 4, "enable_below": 3, "measure_first": 2, "disable": 1, "does_not_fit": 0, "unsupported": 0}
Progress = Callable[[str, int, int], None]


def _stage(progress: Progress | None, stage: str) -> Callable[[int, int], None]:
    """An executor's (done, total) progress callback that reports ``stage`` to ``progress`` (nothing if None)."""

    def tick(done: int, total: int) -> None:
        if progress:
            progress(stage, done, total)

    return tick


def scenario_for(
    inputs: AdviseInputs,
    c: Candidate,
    evidence: Sequence[Evidence],
    engine_checks: bool = True,
    predictor: PredictorChoice | None = None,
) -> Scenario:
    """The candidate as a simulate scenario: the inputs' deployment and sweep, its speculation, and each
    workload with the acceptance its evidence gives -- built directly, no file round trip. ``engine_checks`` off:
    sized only (a candidate the engine cannot run, for the record). ``predictor``: another step-time model than the
    deployment's (None: its own). The GPU is the inputs', resolved once for every candidate (:attr:`AdviseInputs.gpu`;
    a copy of the inputs with another predictor would resolve it again)."""
    dep = inputs.deployment if predictor is None else replace(inputs.deployment, predictor=predictor)
    spec = ScenarioSpec(
        name=f"{inputs.name}:{c.label}",
        file=inputs.file,
        deployment=dep,
        speculation=c.speculation,
        classes=tuple(
            w.with_acceptance(e.model, e.proposal_rate) for w, e in zip(inputs.workloads, evidence, strict=True)
        ),
        sweep=replace(inputs.sweep, k_values=c.speculation.k_values),
        decision_metric=inputs.decision_metric,
        where_speculation=f"[[candidate]] {c.label!r}",
        engine_checks=engine_checks,
        deployable_only=False,
        notes=inputs.notes,
    )
    return build_scenario(spec, lambda: inputs.gpu)


@dataclass(frozen=True)
class _Verdict:
    verdict: str
    k: int  # the config's num_speculative_tokens: the largest k of a schedule the engine takes, else k at the load
    reason: str
    simulated: str = ""  # the simulated speedup the verdict rests on, in words
    schedule: tuple[tuple[int, int, int], ...] = ()
    schedule_results: tuple[ScheduleCheck, ...] = ()
    headline: str = ""
    schedule_capacity_per_s: float | None = None  # the schedule's saturated run, where it was checked


def _verdict(
    inputs: AdviseInputs,
    sc: Scenario,
    sim: SweepResult,
    engine: Engine,
    label: str,
    noise: SamplingNoise | None,
    edges: Sequence[SamplingNoise] = (),
) -> _Verdict:
    """One rule decides, and the reason, k and schedule come from it. At the operating load: enable when even the
    low end of the predictor's band clears ``min_speedup``; measure_first when the band straddles it (the point
    estimate on either side); disable when even its high end misses. Where the load was simulated more than once
    (``noise``, ``[advise].replicates``; ``sim`` then holds their mean there: ``with_mean``) the band is
    widened by the mean's 90% interval (:func:`~specwise.advisor.band_rule.interval_verdict`). Elsewhere
    (:func:`_paying`): the k-by-batch schedule switches speculation off where the point estimate loses; loads above
    the deployment's capacity are left out (their latencies are two growing queues); ``edges``: the runs at the loads
    either side of where the gain falls below ``min_speedup`` (their means in ``sim``), said where the verdict names
    that load."""
    op, minimum, metric, band = inputs.operating_qps, inputs.min_speedup, sim.decision_metric, sc.models.band
    if (without_band := _bandless_verdict(op, sim, label, minimum, noise)) is not None:
        return without_band
    gains = {q: s for q, s in sim.best_speedup_by_qps.items() if q not in sim.overloaded_qps}
    s_op, k_op = gains[op], sim.best_k_by_qps[op]
    k_measure = noise.k if noise is not None else k_op or sim.top_k(op)
    s_low, s_high = (noise.low, noise.high) if noise is not None else (s_op, s_op)
    low, high = fmt_ratio(s_low * (1 - band), minimum), fmt_ratio(s_high * (1 + band), minimum)  # 1.049 < 1.05
    ev_sim = (
        f"simulated {metric}{' p50' if metric in PERCENTILE_METRICS else ''} speedup {fmt_ratio(s_op, minimum)}x "
        + (f"({noise.words()}) " if noise is not None else "")
        + f"with k={k_measure} (band {low}-{high}x, {sim.predictor}"
        + (" and the sampling noise)" if noise is not None else ")")
    )
    ev_sim += _capacity_edge(sim, op, k_measure)
    rule = interval_verdict(s_low, s_high, band, minimum)
    noise_words = _noise_decides(
        rule, band_verdict(s_op, band, minimum), sc.sweep.num_requests, len(noise.speedups) if noise else 1
    )
    if rule == "enable" and (capacity_undecided(sim, op, k_measure) or capacity_undecided(sim, op, 0)):
        # whether k (or plain decoding, against which the speedup is taken) keeps up is the simulation's noise
        reason = (
            f"at the operating {op:g} QPS: {ev_sim}{_baseline_edge(sim, op)}; it clears {minimum:g}x, but the "
            "capacity's noise says measure it before enabling it"
        )
        return _Verdict("measure_first", k_measure, reason, ev_sim, headline=_measure_headline(label, k_measure))
    if rule == "enable":
        runs = {n.qps: n for n in (*edges, *([noise] if noise is not None else []))}
        return _paying(inputs, sc, sim, engine, label, gains, ev_sim, runs)
    head = _measure_headline(label, k_measure)
    if s_op >= minimum:
        reason = f"at the operating {op:g} QPS: {ev_sim}; it clears {minimum:g}x, the low end of its band does not"
        return _Verdict("measure_first", k_measure, reason + noise_words, ev_sim, headline=head)
    if rule == "measure_first":
        reason = (
            f"at the operating {op:g} QPS: {ev_sim}; below {minimum:g}x, but the high end of its band clears it: "
            "measure it before deciding"
        )
        return _Verdict("measure_first", k_measure, reason + noise_words, ev_sim, headline=head)
    paying = [q for q, s in gains.items() if s >= minimum]
    reason = f"below {minimum:g}x at the operating {op:g} QPS, even at the high end of its band: {ev_sim}" + (
        f"; it would clear {minimum:g}x at {', '.join(f'{q:g}' for q in paying)} QPS (point estimates)"
        if paying
        else f"; it clears {minimum:g}x at no simulated load the deployment keeps up with"
    )
    schedule = tuple(schedule_for(sim, sc, minimum)) if paying else ()
    return _Verdict("disable", 0, reason, ev_sim, schedule, headline=f"Do not enable {label}")


def _bandless_verdict(
    op: float, sim: SweepResult, label: str, minimum: float, noise: SamplingNoise | None = None
) -> _Verdict | None:
    """The verdict at ``op`` where no band is weighed: a capacity decides it (:func:`_overload_verdict`,
    :func:`_spec_overload_verdict`) or a goodput ratio is undefined (:func:`_goodput_verdict`); None: the band
    decides."""
    return (
        _overload_verdict(op, sim, label)
        or _spec_overload_verdict(op, sim, label, minimum, noise)
        or _goodput_verdict(op, sim, label)
    )


def _noise_decides(rule: str, without: str, num_requests: int, runs: int) -> str:
    """Said where the sampling noise alone makes the verdict measure_first (the band around the mean alone would
    have enabled or disabled): more requests per load, or more runs, narrow it."""
    if rule == without:
        return ""
    return (
        f" -- the simulation's own sampling noise decides that (around its mean alone the band says {without}): "
        f"re-run with [sweep].num_requests above {num_requests} or [advise].replicates above {runs} to narrow it"
    )


def _vetoed(v: _Verdict, checks: Sequence[rules.RuleResult], sc: Scenario, label: str) -> _Verdict:
    """The verdict after the veto rules. A draft vLLM would not load (the pair check fails, as check-pair says) is
    unsupported: nothing it runs, so no simulated speedup to weigh. A head trained for another target loads; its rule
    fails only on an assumed acceptance, and that stays a disable whose fix is to profile the pair, as do the other
    vetoes (the simulated figure kept in the reason)."""
    vetoes = [r for r in checks if r.status == "fail" and r.rule in rules.VETO_RULES]
    pair_fails = any(f.status == "fail" for f in sc.draft_findings)
    incompatible = next((r for r in vetoes if r.rule == COMPATIBILITY_RULE and pair_fails), None)
    if incompatible is not None:
        reason = INCOMPATIBLE + incompatible.message
        return _Verdict("unsupported", 0, reason, headline=f"{label}: {incompatible.message}")
    if v.verdict != "disable" and vetoes:
        reason = "; ".join(f"rule '{r.rule}' fails: {r.message}" for r in vetoes) + f" (despite {v.simulated})"
        return _Verdict("disable", 0, reason, headline=f"Do not enable {label}")
    return v


def _too_few_requests(v: _Verdict, sc: Scenario, sim: SweepResult, op: float, label: str) -> _Verdict:
    """An enabling verdict from a sweep too small to decide on (fewer than
    :data:`~specwise.scenario.build.FEW_REQUESTS` requests measured per cell, after the warmup) is at most
    measure_first: the predictor's band does not include the sampling noise of a few requests' percentiles (a single
    request per load turned n-gram's "measure first" into "enable" on summarize-low-qps). Other verdicts stand."""
    n, warm = sc.sweep.num_requests, sc.sweep.warmup_fraction
    if v.verdict not in ("enable", "enable_below") or few_requests_warning(n, warmup_fraction=warm) is None:
        return v
    k = sim.best_k_by_qps[op] or sim.top_k(op)
    measured, needed = measured_worth_saying(n, warm), enough_requests(warm)
    counted = f"{n} simulated" if measured is None else f"{measured} measured (of {n} simulated, after the warmup)"
    plural = (measured or n) > 1
    few = f"{counted} request{'s' if n > 1 else ''} per load {'are' if plural else 'is'} too few to decide on"
    reason = (
        f"{few} (the band does not include their sampling noise): re-run with [sweep].num_requests = "
        f"{needed} or more, or measure it; the simulation alone says: {v.reason}"
    )
    head = f"Re-run with [sweep].num_requests = {needed} or more, or measure {label} (k={k}): {few}"
    return _Verdict("measure_first", k, reason, v.simulated, headline=head)


def _direction_unreliable(v: _Verdict, sc: Scenario, sim: SweepResult, op: float, label: str) -> _Verdict:
    """An enabling verdict from a predictor whose held-back record often puts a speedup on the wrong side of 1
    (:func:`~specwise.perfmodel.factory.direction_notes`: SGLang's published fit, a GPU of another segment) is at
    most measure_first: a band of relative error clearing ``min_speedup`` says nothing when the predictor cannot
    tell a slowdown from a speedup there. Other verdicts stand (disable is the safe side)."""
    caveat = sc.models.direction_caveat
    if v.verdict not in ("enable", "enable_below") or not caveat:
        return v
    k = sim.best_k_by_qps[op] or sim.top_k(op)
    reason = f"{caveat}; the simulation alone says: {v.reason}"
    return _Verdict("measure_first", k, reason, v.simulated, headline=_measure_headline(label, k))


def _measure_headline(label: str, k: int) -> str:
    return f"Measure {label} (k={k}) on your server before enabling it"


def _paying(
    inputs: AdviseInputs,
    sc: Scenario,
    sim: SweepResult,
    engine: Engine,
    label: str,
    gains: Mapping[float, float],
    ev_sim: str,
    runs: Mapping[float, SamplingNoise] | None = None,
) -> _Verdict:
    """The verdict for a candidate whose band's low end clears ``min_speedup`` at the operating load; ``gains``:
    the point estimates at the loads the deployment keeps up with. The schedule sets k = 0 where the point
    estimate loses; it "switches speculation off" there only if the engine takes it, k is 0 at those loads' mean
    batch sizes, and the schedule simulated there does not lose to no speculation. Loads where only the band is
    unsure are named, not switched off. ``runs``: the loads simulated more than once, by load (their means are
    ``gains``); where both loads either side of the named edge are, the reason says so and where their 90%
    intervals put it (:func:`_edge_words`)."""
    op, minimum, band = inputs.operating_qps, inputs.min_speedup, sc.models.band
    k_op = sim.best_k_by_qps[op]
    failing = sorted(q for q, s in gains.items() if s < minimum)
    unsure = sorted(q for q, s in gains.items() if s * (1.0 - band) < minimum <= s)
    unsure_words = (
        f"; at {', '.join(f'{q:g}' for q in unsure)} QPS only the point estimate clears {minimum:g}x (the low end of "
        "the band does not): measure there if you run there"
        if unsure
        else ""
    )
    # Pays everywhere: one k and no schedule -- setting num_speculative_tokens_per_batch_size makes vLLM downgrade full
    # CUDA graphs to PIECEWISE for the whole engine (vllm/config/vllm.py _maybe_override_dynamic_sd_cudagraph_mode).
    if not failing:
        reason = (
            f"clears {minimum:g}x at every simulated load up to {max(gains):g} QPS"
            + (" (the highest load the deployment keeps up with)" if sim.overloaded_qps else "")
            + f"{unsure_words or ', even at the low end of the band'}; at the operating {op:g} QPS: {ev_sim}"
        )
        return _Verdict("enable", k_op, reason, ev_sim, headline=f"Enable {label} with k={k_op}")
    schedule = tuple(schedule_for(sim, sc, minimum))
    carried = bool(schedule) and not engine.schedule_notes(schedule, k_op)
    checks, capacity = schedule_checks(sc, sim, schedule, failing, inputs.replicates) if carried else ((), None)
    dropped = _unserved(checks, failing)
    if dropped:  # a schedule that cannot serve a load speculation pays at is not written: a static k is
        carried, checks, capacity = False, (), None
    k = max([k_op, *(b[2] for b in schedule)]) if carried else k_op
    checked = "; simulated with the schedule: " + ", ".join(c.words() for c in checks) if checks else ""
    off = carried and all(k_at(schedule, batch_at(sim, q, sc.max_num_seqs)) == 0 for q in failing)
    losing = [c for c in checks if c.qps in failing and c.below_one]
    even = [c for c in checks if c.qps in failing and c.about_one]
    above, below = [q for q in failing if q > op], [q for q in failing if q < op]
    misses = ", ".join(f"{q:g} QPS ({gains[q]:.2f}x)" for q in failing)
    reason = f"pays at the operating {op:g} QPS: {ev_sim}; predicted below {minimum:g}x at {misses}"
    reason += (dropped or _schedule_words(off, losing, even, schedule, carried, checked)) + unsure_words
    off = off and not losing  # the schedule removes the loss, not just part of it
    if not above and off:
        head = f"Enable {label} with k={k} and the k-by-batch-size schedule that switches it off at low load"
        return _Verdict("enable", k, reason, ev_sim, schedule, checks, f"{head} ({schedule_words(schedule)})", capacity)
    if not above:
        reason += f": measure at your real mix of loads (it loses at {', '.join(f'{q:g}' for q in below)} QPS)"
        return _Verdict("measure_first", k_op, reason, ev_sim, headline=_measure_headline(label, k_op))
    where = "at low load and under load" if below else "under load"
    edge, capped = _edge(sim, gains, minimum, above[0], capacity if carried else None)
    if not off:
        reason += f"; the edge is {capped}" if capped else _edge_words(sim, gains, minimum, above[0], runs or {})
    head = (
        f"Enable {label} with k={k} and the k-by-batch-size schedule that switches it off {where} "
        f"({schedule_words(schedule)})"
        if off
        else f"Enable {label} with k={k} only while the load stays "
        + (f"above ~{below[-1]:g} and " if below else "")
        + f"below ~{fmt_about(edge)} QPS"
        + (" (the k-by-batch-size schedule in the config cuts the loss there, not all of it)" if carried else "")
    )
    return _Verdict("enable_below", k, reason, ev_sim, schedule, checks, head, capacity)


def _edge(
    sim: SweepResult, gains: Mapping[float, float], minimum: float, first: float, schedule_capacity: float | None
) -> tuple[float, str]:
    """The load an "enable below ~X QPS" names, and why where it is a capacity: where the gain falls below
    ``minimum`` between the last load that clears it and ``first``, the first that misses it
    (:func:`~specwise.study.decide.falls_below`). Where no k keeps up with ``first``, the gain drops at once where
    the last k stops keeping up (to capacity / load: the queue grows), not along a line: the edge is then no further
    than the largest capacity with speculation; nor further than the capacity of the k-by-batch-size schedule the
    config carries (``schedule_capacity``). Review s60 read "below ~9.7 QPS" for a schedule that serves 9.3 req/s
    and k's that serve at most 9.4."""
    edge, why = falls_below(gains, minimum, first), ""
    served = [c for k, c in sim.capacity_per_s_by_k.items() if k > 0]
    if first in sim.capacity_bound_qps and served and max(served) < edge:
        edge, why = max(served), f"the most any k serves with speculation ({fmt_rate(max(served))} req/s)"
    if schedule_capacity is not None and schedule_capacity < edge:
        edge, why = schedule_capacity, f"what the config's schedule serves ({fmt_rate(schedule_capacity)} req/s)"
    return edge, why


def _edge_words(
    sim: SweepResult,
    gains: Mapping[float, float],
    minimum: float,
    first: float,
    runs: Mapping[float, SamplingNoise],
) -> str:
    """Where the load an "enable below ~X QPS" names (:func:`~specwise.study.decide.falls_below`, between the
    last load below ``first`` and ``first``, the first that misses ``minimum``) rests on loads simulated more than
    once: their runs, and the edge interpolated between their 90% intervals' low ends and between their high ends --
    how far the runs' noise moves it -- or that those intervals do not place it between the two loads. A load where
    no k keeps up counts as known: its speedup is a capacity's bound (capacity / load), not a draw of that load.
    "" where either load is one draw, or neither was simulated more than once."""
    last = max(q for q in gains if q < first)
    ends: list[tuple[float, float]] = []
    parts = []
    for q in (last, first):
        if q in sim.capacity_bound_qps:
            ends.append((gains[q], gains[q]))
            parts.append(f"{q:g} QPS (at most {fmt_ratio(gains[q], minimum)}x: no k keeps up there)")
        elif (n := runs.get(q)) is not None:
            ends.append((n.low, n.high))
            parts.append(
                f"{q:g} QPS ({fmt_ratio(n.mean, minimum)}x, the mean of {len(n.speedups)} runs, 90% interval "
                f"{n.low:.2f}-{n.high:.2f}x)"
            )
        else:
            return ""
    if last not in runs and first not in runs:
        return ""
    early = crossover([last, first], [ends[0][0], ends[1][0]], minimum)
    late = crossover([last, first], [ends[0][1], ends[1][1]], minimum)
    words = f"; the edge interpolated between {' and '.join(parts)}"
    outside = [f"below {last:g} QPS"] if early is None else []
    outside += [f"beyond {first:g} QPS"] if late is None else []
    if early is None or late is None:
        across = f"an interval reaches across {minimum:g}x"
        return words + f": within those intervals it may lie {' or '.join(outside)} ({across})"
    return words + f": ~{fmt_about(early)}-{fmt_about(late)} QPS within those intervals"


def _unserved(checks: Sequence[ScheduleCheck], failing: Collection[float]) -> str:
    """Why the k-by-batch-size schedule is not written ("" where it is): its saturated run serves less than a load
    where speculation pays (review s60: the schedule's one capacity run, near a k's mean of several, could fall below
    a paying load, and the advice then enabled a schedule whose queue grows there)."""
    short = [c for c in checks if c.overloaded and c.qps not in failing]
    if not short:
        return ""
    where = ", ".join(f"{c.qps:g}" for c in short)
    return (
        f"; no k-by-batch-size schedule: the one simulated serves {fmt_rate(short[0].capacity_per_s or 0.0)} req/s, "
        f"below {where} QPS where speculation pays, so the config keeps one k"
    )


def _schedule_words(
    off: bool,
    losing: Sequence[ScheduleCheck],
    even: Sequence[ScheduleCheck],
    schedule: Sequence[tuple[int, int, int]],
    carried: bool,
    checked: str,
) -> str:
    """What the k-by-batch-size schedule does at the losing loads, in words; ``even``: those where it is below 1x
    only within its runs' noise (:attr:`~specwise.contracts.advice.ScheduleCheck.about_one`)."""
    if off:
        words = f"; the k-by-batch-size schedule sets k=0 at those loads' mean batch sizes{checked}"
        if losing:
            words += (
                f" -- still below 1x at {', '.join(f'{c.qps:g}' for c in losing)} QPS: where k=0 the draft still "
                "holds its memory (a smaller KV cache)"
                + (
                    ", so the schedule serves less than plain decoding and its queue grows"
                    if any(c.overloaded for c in losing)
                    else ", and the batch size swings around its mean"
                )
            )
        if even:
            words += f" (even with no speculation: {'; '.join(c.even_words() for c in even)})"
        return words
    if not schedule:
        return "; they run at the same batch size as paying loads, so no k-by-batch-size schedule tells them apart"
    if not carried:
        return "; this engine version cannot take the k-by-batch-size schedule as simulated (see the note)"
    return f"; the k-by-batch-size schedule does not reach k=0 at every such load's mean batch size{checked}"


def _overload_verdict(op: float, sim: SweepResult, label: str) -> _Verdict | None:
    """At an operating load above the deployment's capacity without speculation (its queue grows without bound:
    :mod:`specwise.sim.saturation`) a latency speedup compares two growing queues, so the verdict is about
    capacity (requests/s served once saturated). A k whose capacity is above the load is measure_first: it runs at
    the edge of its capacity, inside the predictor's band -- measure it, or add replicas. Otherwise disable: no k
    fixes the load; the reason quotes both capacities and the replicas each needs -- speculation's worth is a
    question for the load per replica, where advise should be re-run (no k schedule: the one the sweep gives is
    built on loads above capacity). None: the baseline keeps up."""
    base, served = sim.baseline_at(op), sim.sustainable_qps
    if base is None or not base.overloaded or not served:
        return None
    ks = [k for k in sim.k_values if k and sim.sustainable_qps_with(k)]
    cannot = f"at {op:g} QPS this deployment cannot keep up"
    head = f"Do not enable {label}: this deployment cannot keep up with {op:g} QPS"
    rate = fmt_rate(served)
    edge = _baseline_edge(sim, op)
    if not ks:
        reason = f"{cannot} (it serves ~{rate} req/s): add replicas or lower the load{_capacity_runs_words(sim)}"
        reason += edge
        return _Verdict("disable", 0, reason, headline=head)
    k = max(ks, key=lambda k: sim.sustainable_qps_with(k) or 0.0)
    with_k = sim.sustainable_qps_with(k) or served
    simulated = f"capacity ~{rate} req/s without speculation, ~{fmt_rate(with_k)} with k={k}"
    row = sim.row(op, k)
    if row is not None and (not row.overloaded or capacity_undecided(sim, op, k)):
        # k keeps up on its capacity's mean, or its interval holds the load (review s58b B1: it disabled there)
        reason = (
            f"{cannot} without speculation (it serves ~{rate} req/s); with k={k} it serves ~{fmt_rate(with_k)}, "
            f"at the edge of its capacity{_capacity_edge(sim, op, k)}: measure it on your server, or add replicas "
            f"(at least {math.ceil(op / served)} without speculation){_capacity_runs_words(sim)}{edge}"
        )
        measure = f"Measure {label} (k={k}) on your server: without it this deployment cannot keep up with {op:g} QPS"
        return _Verdict("measure_first", k, reason, simulated, headline=measure)
    reason = (
        f"{cannot} (it serves ~{rate} req/s without speculation, ~{fmt_rate(with_k)} with k={k}): add replicas "
        f"(at least {math.ceil(op / served)} without speculation, {math.ceil(op / with_k)} with) or lower the load; "
        f"{_capacity_change(with_k / served)} -- re-run advise at the load per replica{_capacity_runs_words(sim)}"
        f"{edge}"
    )
    return _Verdict("disable", 0, reason, simulated, headline=head)


CAPACITY_EDGE = 0.05  # a load this close to a capacity (relative): which side it is on is within the runs' noise


def _capacity_edge(sim: SweepResult, op: float, k: int) -> str:
    """Said where the operating load is inside the 90% interval of ``k``'s capacity (its mean over several saturated
    runs: :func:`capacity_undecided`), or, for a capacity of one run, within :data:`CAPACITY_EDGE` of it: whether k
    keeps up is then a matter of the saturated runs' noise (evidence-llama31-8b-eagle-rtx3090 at 4 QPS, k=2 at
    3.93-4.10 req/s as the mean of five runs at seeds 0-4: measure first at one seed, disable at four) -- and a server
    there runs at the edge of what it serves, speculating or not."""
    capacity = sim.sustainable_qps_with(k)
    if not k or not capacity:
        return ""
    if capacity_undecided(sim, op, k):
        lo, hi = sim.capacity_interval_by_k[k]
        runs = sim.capacity_runs_by_k.get(k, 0)
        return (
            f"; {op:g} QPS is inside the 90% interval of k={k}'s capacity (~{fmt_beside(capacity, op, 1)} req/s, the "
            f"mean of {runs} saturated runs: {lo:.2f}-{hi:.2f}): whether it keeps up is within the simulation's noise"
        )
    if k in sim.capacity_interval_by_k or abs(op / capacity - 1.0) > CAPACITY_EDGE:
        return ""
    return (
        f"; {op:g} QPS is within {abs(op / capacity - 1.0):.0%} of k={k}'s capacity (~{fmt_beside(capacity, op, 1)} "
        "req/s): whether it keeps up is within the simulation's noise"
    )


def _baseline_edge(sim: SweepResult, op: float) -> str:
    """Said where the operating load is inside the 90% interval of plain decoding's capacity (the mean of several
    saturated runs): the deployment is at the edge of what it serves, and whether it keeps up without speculation
    is within the simulation's noise (the verdict stays one about capacity: add replicas, or re-run at the load per
    replica)."""
    if not capacity_undecided(sim, op, 0):
        return ""
    lo, hi = sim.capacity_interval_by_k[0]
    return (
        f"; {op:g} QPS is inside the 90% interval of its capacity without speculation ({lo:.2f}-{hi:.2f} req/s): "
        "whether it keeps up without speculation is within the simulation's noise, at the edge of what it serves"
    )


def capacity_undecided(sim: SweepResult, op: float, k: int) -> bool:
    """Whether ``op`` lies inside the 90% interval of ``k``'s capacity (k = 0: plain decoding's; the mean of its
    saturated runs, where there were several): whether it keeps up with the load is then within the simulation's
    noise, so advise neither enables there (it may overload) nor disables on that capacity alone (it may keep up)
    -- it says measure first, or disable where the speedup loses either way. Only the sampling noise: the
    predictor's own error on a step time is not in the interval."""
    iv = sim.capacity_interval_by_k.get(k)
    return iv is not None and iv[0] <= op <= iv[1]


def _capacity_runs_words(sim: SweepResult) -> str:
    """How the capacities quoted were measured, where more than one saturated run each."""
    runs = sim.capacity_runs_by_k
    if not runs:
        return ""
    names = [("plain decoding's" if k == 0 else f"k={k}'s") for k in sorted(runs)]
    counts = sorted(set(runs.values()))
    return (
        f" ({' and '.join(names)} capacit{'ies' if len(names) > 1 else 'y'} the mean of "
        f"{'/'.join(map(str, counts))} saturated runs: a simulated load is within {CAPACITY_NEAR:.0%} of "
        f"{'them' if len(names) > 1 else 'it'})"
    )


def _capacity_change(ratio: float) -> str:
    percent = round(100 * (ratio - 1))
    return "speculation leaves capacity unchanged" if percent == 0 else f"speculation changes capacity by {percent:+d}%"


def _rule_input(
    inputs: AdviseInputs,
    c: Candidate,
    sc: Scenario,
    evidence: Sequence[Evidence],
    k: int,
    gains: Mapping[float, float],
    overloaded: Sequence[float] = (),
    undefined: Sequence[float] = (),
) -> rules.RuleInput:
    return rules.RuleInput(
        c.method,
        sc.target,
        sc.draft,
        sc.memory_plan,
        evidence,
        [w.temperature for w in inputs.workloads],
        k,
        c.drafting,
        inputs.deployment.quantization,
        c.speculation.draft_quantization,
        gains,
        inputs.min_speedup,
        sc.draft_findings,
        sc.models.band,
        overloaded,
        undefined,
    )


def _speculation(c: Candidate, sc: Scenario, k: int, schedule: Sequence[tuple[int, int, int]]) -> Speculation:
    return Speculation(
        method=c.method,
        k=k,
        draft=c.speculation.draft,
        draft_tp=c.speculation.draft_tp,
        target_tp=sc.tp,
        prompt_lookup=c.speculation.prompt_lookup,
        schedule=tuple(schedule),
        drafting=c.drafting,
        draft_quantization=c.speculation.draft_quantization,
        heterogeneous_vocab=served_vocab_finding(sc.draft_findings) is not None,
    )


def _package_notes(c: Candidate) -> list[str]:
    if not c.method.needs_package:
        return []
    return [
        f"vLLM runs {c.method.name} only with the {c.method.needs_package} package installed (pip install "
        f"{c.method.needs_package}): without it the server fails at start with an ImportError "
        "(vllm/config/speculative.py _validate_suffix_decoding)"
    ]


def _refusal(inputs: AdviseInputs, c: Candidate, engine: Engine) -> str | None:
    """Why the engine the config is for cannot run ``c`` (None: it can): a method it lacks, an EAGLE-3 head for a
    target its vLLM refuses one for (:func:`~specwise.engines.vllm_versions.eagle3_target_refusal`), or a draft whose
    attention heads do not divide over the GPUs the engine splits it across (:meth:`Engine.draft_split_refusal`), or
    an EAGLE head asked to run split on V0 (:func:`~specwise.engines.vllm_versions.head_tp_refusal`), or an fp8 KV
    cache that sends the server to V0 (:func:`~specwise.engines.vllm_kv_cache.kv_cache_refusal`)."""
    said = engine.refusal(c.method, c.speculation.draft, c.drafting)
    if said is None and engine.name == "vllm":
        version = getattr(engine, "version", None)
        said = head_tp_refusal(version, c.method.name, c.speculation.draft_tp)
        if said is None and c.method.name == "eagle3":
            target = resolve_model(inputs.deployment.target)  # resolved before any candidate: no error here
            said = eagle3_target_refusal(version, c.method.name, target.model_type)
        if said is None:
            dep = inputs.deployment
            said = kv_cache_refusal(version, dep.kv_cache_dtype, inputs.gpu, c.method.name)
            said = said or draft_slots_refusal(version, c.method.name, dep.max_num_batched_tokens, dep.max_num_seqs)
    if said is not None or not c.method.has_weights or not c.speculation.draft:
        return said
    heads = _draft_heads(c.speculation.draft)
    if heads is None:
        return None
    spec = Speculation(c.method, 1, c.speculation.draft, c.speculation.draft_tp, inputs.deployment.tp)
    return engine.draft_split_refusal(spec, heads)


def fitting_scenario(inputs: AdviseInputs, c: Candidate, evidence: Sequence[Evidence]) -> tuple[Scenario, list[str]]:
    """The candidate's scenario with the k values whose memory plan fits (the activation reserve grows with k,
    memory/planner.py): the largest ones dropped one by one until the plan fits, and a note naming them. When even
    the smallest k does not fit, its plan (the closest miss) is the one reported."""
    sc = scenario_for(inputs, c, evidence)
    ks = [k for k in c.speculation.k_values if k > 0]
    dropped: list[int] = []
    while not sc.memory_plan.fits and len(ks) > 1:
        dropped.insert(0, ks.pop())
        sc = scenario_for(inputs, replace(c, speculation=replace(c.speculation, k_values=(0, *ks))), evidence)
    if not dropped:
        return sc, []
    if not sc.memory_plan.fits:
        return sc, [f"does not fit at any k (k={ks[0]} is the closest miss)"]
    return sc, [
        f"k={', '.join(map(str, dropped))} dropped: with them the draft's activation reserve does not fit in memory; "
        f"k up to {ks[-1]} fits"
    ]


NOT_CALIBRATED = "not evaluated: "  # the reason of a candidate the calibration cannot price


def _uncalibrated(inputs: AdviseInputs, c: Candidate) -> str | None:
    """Why the calibration given cannot price ``c`` (None: it can, or no calibration is used): its run never measured
    this method's proposer. The candidate is then not evaluated; the others still are."""
    gap = calibration_gap(inputs.deployment.predictor, c.method, c.speculation.draft)
    return None if gap is None else f"{NOT_CALIBRATED}{gap}"


def _sized(
    inputs: AdviseInputs, c: Candidate, evidence: Sequence[Evidence], engine: Engine
) -> tuple[Candidate, Scenario, list[str], str | None]:
    """The candidate's scenario, the notes on its k values, and why it is not simulated (None: it is). A candidate
    the engine cannot run, or the calibration cannot price, is sized for the record only: a draft whose heads do not
    divide the TP on one GPU, and a missing proposer cost with the published fit (its memory plan needs no price)."""
    uncalibrated = _uncalibrated(inputs, c)
    refused = _refusal(inputs, c, engine) or uncalibrated
    if refused is None:
        sc, k_notes = fitting_scenario(inputs, c, evidence)
        return c, _served_vocabulary(sc, c, engine), k_notes, None
    # on one GPU where the engine would split it (an MTP head runs with the target's layers, at its TP)
    one = inputs.deployment.tp if c.method.name == "mtp" else 1
    c = replace(c, speculation=replace(c.speculation, draft_tp=c.speculation.draft_tp or one))
    own = inputs.deployment.predictor  # one the calibration cannot price is sized with the published fit
    fit = None if uncalibrated is None else PredictorChoice(engine=own.engine, engine_version=own.engine_version)
    return c, scenario_for(inputs, c, evidence, engine_checks=False, predictor=fit), [], refused


def _served_vocabulary(sc: Scenario, c: Candidate, engine: Engine) -> Scenario:
    """A draft model whose vocabulary differs from the target's by padding only, on a vLLM that takes
    ``use_heterogeneous_vocab`` (0.26 to 0.33, greedy drafting): no refusal -- the key goes into its config
    (:func:`~specwise.compat.pair.served_with_heterogeneous_vocab`)."""
    if engine.name != "vllm":
        return sc
    if heterogeneous_vocab_refusal(getattr(engine, "version", None), c.method.name, c.drafting) is not None:
        return sc
    return replace(sc, draft_findings=served_with_heterogeneous_vocab(sc.draft_findings))  # unchanged without one


@dataclass(frozen=True)
class Prepared:
    """A candidate built and sized, before any simulation: its evidence, scenario, notes and refusal (if any)."""

    candidate: Candidate
    scenario: Scenario
    evidence: list[Evidence]
    notes: tuple[str, ...]
    k_notes: list[str]
    refused: str | None


def prepare_candidate(
    inputs: AdviseInputs, c: Candidate, profiles: Sequence[ProfileDoc], benches: Sequence[BenchDoc], engine: Engine
) -> Prepared:
    """Everything about a candidate that needs no simulation: so a mistake in the scenario's last candidate (an
    unknown draft) is refused before the first one is simulated."""
    notes: list[str] = []
    evidence = resolve_evidence(inputs, c, profiles, benches, notes)
    if (window := window_note(c, evidence)) is not None:
        notes.append(window)
    c, sc, k_notes, refused = _sized(inputs, c, evidence, engine)
    return Prepared(c, sc, evidence, tuple(notes + _package_notes(c)), k_notes, refused)


def evaluate_candidate(
    inputs: AdviseInputs,
    prepared: Prepared,
    engine: Engine,
    executor: Executor | None = None,
    progress: Progress | None = None,
) -> CandidateAdvice:
    c, sc, evidence, refused = prepared.candidate, prepared.scenario, prepared.evidence, prepared.refused
    notes, k_notes = list(prepared.notes), prepared.k_notes
    plan = sc.memory_plan
    unfit = CandidateAdvice(
        candidate=c.label,
        method=c.method.name,
        draft=c.speculation.draft,
        drafting=c.drafting,
        memory=CandidateMemory.from_json(Fields(plan.to_dict(), "memory plan")),  # the contract, typed
        evidence=_evidence_used(evidence),
        warnings=tuple(notes + k_notes) + sc.warnings,
        decision_metric=sc.decision_metric,
        verdict="does_not_fit",
        k=0,
        reason="does not fit in memory with the draft: " + "; ".join(plan.problems),
        rules=tuple(rules.check_all(_rule_input(inputs, c, sc, evidence, 1, {}))) if not plan.fits else (),
        headline=f"{c.label} does not fit in memory with the draft",
    )
    if refused is not None:
        return replace(unfit, verdict="unsupported", reason=refused, rules=(), headline=f"{c.label}: {refused}")
    if not plan.fits:
        return unfit

    sim, sampling, edges = _simulated(inputs, sc, c.label, executor, progress)
    v = _verdict(inputs, sc, sim, engine, c.label, sampling, edges)
    checks = rules.check_all(
        _rule_input(
            inputs,
            c,
            sc,
            evidence,
            # the k judged: the verdict's, else the best speculative one at the load (a disable's k is 0; the rules
            # then spoke of k = 1, which the candidate may not even offer), else 1
            max(v.k, sim.best_k_by_qps[inputs.operating_qps]) or sim.top_k(inputs.operating_qps) or 1,
            sim.best_speedup_by_qps,
            sim.overloaded_qps,
            tuple(q for q in sim.best_speedup_by_qps if sim.speedup_undefined(q)),
        )
    )
    v = _vetoed(v, checks, sc, c.label)
    v = _too_few_requests(v, sc, sim, inputs.operating_qps, c.label)
    v = _direction_unreliable(v, sc, sim, inputs.operating_qps, c.label)
    spec = None
    if v.verdict in ("enable", "enable_below", "measure_first"):
        spec = engine.speculative_config(_speculation(c, sc, v.k, v.schedule))
    evidence_used, past = past_positions(unfit.evidence, v.k)
    return replace(
        unfit,
        evidence=evidence_used,
        verdict=v.verdict,
        k=v.k,
        reason=v.reason,
        # the scenario's, where the k runs past the acceptance's positions, where the sweep left a calibrated range
        warnings=tuple(notes + k_notes) + past + sim.warnings,
        rules=tuple(checks),
        schedule=v.schedule,
        schedule_results=v.schedule_results,
        speedup_at_operating_qps=(
            _speedup_at(sim, inputs.operating_qps) if v.verdict not in ("disable", "unsupported") else None
        ),
        sim=sim
        if v.schedule_capacity_per_s is None
        else replace(sim, schedule_capacity_per_s=v.schedule_capacity_per_s),
        speculative_config=spec,
        headline=v.headline,
        sampling=sampling if v.verdict != "unsupported" else None,
        edge_sampling=edges if v.verdict != "unsupported" else (),
    )


def _simulated(
    inputs: AdviseInputs, sc: Scenario, label: str, executor: Executor | None, progress: Progress | None
) -> tuple[SweepResult, SamplingNoise | None, tuple[SamplingNoise, ...]]:
    """The candidate's sweep (each k's capacity repeated where a load is near it); the operating load's runs with
    their mean in it where the verdict is a band's (:func:`_operating_noise`); and the runs at the loads either side
    of where the gain falls below ``min_speedup`` above it (:func:`_edge_noise`), their means in it too."""

    cells = run_sweep(sc, executor, progress=_stage(progress, f"simulate {label}"))
    cells += capacity_replicates(
        sc, cells, inputs.replicates, executor, _stage(progress, f"replicate {label}'s capacity")
    )
    sim = decide(sc, cells)
    sampling = _operating_noise(inputs, sc, sim, label, executor, progress)
    if sampling is not None and inputs.operating_qps not in sim.capacity_bound_qps:  # a bound stays the bound
        sim = with_mean(sim, sampling)
    sim, edges = _edge_noise(inputs, sc, sim, label, executor, progress)
    return sim, sampling, edges


def _operating_noise(
    inputs: AdviseInputs,
    sc: Scenario,
    sim: SweepResult,
    label: str,
    executor: Executor | None,
    progress: Progress | None,
) -> SamplingNoise | None:
    """The replicates of the k :func:`_verdict` weighs at the operating load (the one-draw best, else the fastest
    that loses); none where the verdict is not a band's: a load a capacity decides, or a goodput undefined."""
    op = inputs.operating_qps
    undecided = _undecided_overload_k(op, sim)  # its runs weigh whether it loses either way
    if _bandless_verdict(op, sim, label, inputs.min_speedup) is not None and undecided is None:
        return None
    k = undecided or sim.best_k_by_qps[op] or sim.top_k(op)
    if not k:
        return None

    return sampling_noise(sc, sim, op, k, inputs.replicates, executor, _stage(progress, f"replicate {label}"))


def _edge_noise(
    inputs: AdviseInputs,
    sc: Scenario,
    sim: SweepResult,
    label: str,
    executor: Executor | None,
    progress: Progress | None,
) -> tuple[SweepResult, tuple[SamplingNoise, ...]]:
    """``sim`` with the means of ``[advise].replicates`` runs at the loads either side of where its gain first
    falls below ``min_speedup`` above the operating load (:func:`~specwise.study.replicates.edge_loads`), and those
    runs. The load an "enable below ~X QPS" names is interpolated between the two; on one draw each it moved with
    the seed. Where the means move the edge to another pair of loads, that pair is replicated too (at most every
    load once). Each load's k: its best, else the fastest that loses there (as at the operating load). Run whatever
    the verdict turns out to be: the means also place the k-by-batch-size schedule's k = 0 (``schedule_for`` switches
    speculation off where the point estimate loses), which is decided after them."""
    op, done, edges = inputs.operating_qps, {inputs.operating_qps}, []
    tick = _stage(progress, f"replicate {label} at its edge")

    while inputs.replicates > 1 and (loads := edge_loads(sim, op, inputs.min_speedup, done)):
        for q in loads:
            done.add(q)
            k = sim.best_k_by_qps[q] or sim.top_k(q)
            noise = sampling_noise(sc, sim, q, k, inputs.replicates, executor, tick) if k else None
            if noise is not None:
                edges.append(noise)
                sim = with_mean(sim, noise)
    return sim, tuple(sorted(edges, key=lambda n: n.qps))


def _evidence_used(evidence: Sequence[Evidence]) -> tuple[EvidenceUsed, ...]:
    """The evidence as the advice reports it: its first 8 per-position rates, and how many positions it covers."""
    return tuple(
        EvidenceUsed(
            e.workload, e.kind, e.source, e.model.per_position(8), e.proposal_rate, e.match_rate_assumed, e.positions
        )
        for e in evidence
    )


_PAST_HOW = {"measured": "was measured", "profiled": "was profiled", "given": "is given"}


def past_positions(evidence: Sequence[EvidenceUsed], k: int) -> tuple[tuple[EvidenceUsed, ...], tuple[str, ...]]:
    """The evidence of a candidate reported at ``k``, and a warning per workload whose rates were measured, profiled
    or given for fewer draft positions (simulate's own, :func:`past_positions_note`): past them the model reuses
    the last position's conditional rate, an assumption; such evidence's source says so ("measured to k=4,
    extrapolated beyond"). k is not capped: the simulation priced k with that assumption, and the user is told."""
    out, notes = [], []
    for e in evidence:
        note = past_positions_note(e.workload, e.positions, k, _PAST_HOW.get(e.kind, "is given"), f"measure at k={k}")
        if note is None:
            out.append(e)
            continue
        notes.append(note)
        out.append(replace(e, source=f"{e.source} -- {e.label(k)}"))
    return tuple(out), tuple(notes)


def _rank_key(r: CandidateAdvice, op: float) -> tuple[int, float, int, float]:
    """Verdict, then the simulated speedup at the operating load ``op`` (a disabled candidate's too, though its row
    quotes none), then fewer failed rules, then capacity at its k (what tells candidates apart where no speedup is
    simulated: an operating load above capacity)."""
    failed = sum(1 for rule in r.rules if rule.status == "fail")
    capacity = (r.sim.sustainable_qps_with(r.k) if r.k else r.sim.sustainable_qps) if r.sim is not None else None
    speedup = _speedup_at(r.sim, op) if r.sim is not None else None  # the replicates' mean where there are some
    return (VERDICT_ORDER[r.verdict], speedup or 0.0, -failed, capacity or 0.0)


def _disable_headline(op: float, ranked: Sequence[CandidateAdvice], written: ConfigTarget | None = None) -> str:
    """Said first when no candidate can help: none can run on the engine the config is written for (``written``,
    named with why it is that one), or the load itself is more than the deployment serves."""
    if all(r.verdict == "unsupported" for r in ranked):
        incompatible = sum(1 for r in ranked if r.reason.startswith(INCOMPATIBLE))
        if incompatible == len(ranked):
            return "No candidate's draft can serve this target as proposed (why below): change the draft or the method"
        uncalibrated = sum(1 for r in ranked if r.reason.startswith(NOT_CALIBRATED))
        on, fix = (written.engine_words(), written.fix()) if written else ("this engine", "change the engine version")
        if not uncalibrated:
            other = "the draft or the method" if incompatible else "the method"
            return f"No candidate can run on {on} as proposed (why below): {fix}, or change {other}"
        return (
            "No candidate can be evaluated as proposed (why below): the calibration did not measure the proposer of "
            f"{uncalibrated} and {on} cannot run the other {len(ranked) - uncalibrated}; calibrate a method it "
            f"runs, or {fix}"
            if uncalibrated < len(ranked)
            else "No candidate can be evaluated (why below): the calibration did not measure their proposers"
        )
    sims = [r.sim for r in ranked if r.sim is not None]
    if sims and all((b := sim.baseline_at(op)) is not None and b.overloaded for sim in sims):
        if all(capacity_undecided(sim, op, 0) for sim in sims):  # review s58b: the reason says it may keep up
            return f"This deployment is at the edge of what it serves at {op:g} QPS: add replicas or lower the load"
        return f"This deployment cannot keep up with {op:g} QPS: add replicas or lower the load"
    return "Do not enable speculative decoding for this load"


def _speedup_at(sim: SweepResult, qps: float) -> float | None:
    """The best speedup at ``qps``; none is quoted for a load the baseline cannot keep up with, nor where no k
    can (a queue that grows has no steady-state latency). A disabled candidate's row quotes none either: it runs
    at k = 0, and the best k's speedup is in its reason."""
    base = sim.baseline_at(qps)
    if (base is not None and base.overloaded) or _no_k_keeps_up(sim, qps) or sim.speedup_undefined(qps):
        return None  # undefined: a goodput ratio to none without speculation
    return sim.best_speedup_by_qps[qps]


def _no_k_keeps_up(sim: SweepResult, qps: float) -> bool:
    rows = [r for r in sim.results if r.qps == qps and r.k]
    return bool(rows) and all(r.overloaded for r in rows)


def _undecided_overload_k(op: float, sim: SweepResult) -> int | None:
    """The k :func:`_spec_overload_verdict` weighs where no k keeps up on the capacities' means but the best k's
    interval holds the load (None elsewhere): its speedup there is then replicated, as at a load the band decides."""
    if not _no_k_keeps_up(sim, op) or not sim.sustainable_qps:
        return None
    k = _best_capacity_k(op, sim)
    return k if capacity_undecided(sim, op, k) else None


def _best_capacity_k(op: float, sim: SweepResult) -> int:
    return max((r.k for r in sim.results if r.qps == op and r.k), key=lambda k: sim.sustainable_qps_with(k) or 0.0)


def _spec_overload_verdict(
    op: float, sim: SweepResult, label: str, minimum: float, noise: SamplingNoise | None = None
) -> _Verdict | None:
    """At a load the deployment keeps up with only without speculation, every k's queue grows without bound:
    speculation loses there whatever a finite run's latencies say -- disable, in capacities. Where the load is
    inside the 90% interval of the best k's capacity (:func:`capacity_undecided`), that k may keep up: measure
    first, unless its simulated speedup there loses even at the high end of the band (then it loses either way:
    disable; review s58b B3): weighed on ``noise``, the mean of its runs and their 90% interval, where given (one
    draw turned that verdict with the seed)."""
    base = sim.sustainable_qps
    if not _no_k_keeps_up(sim, op) or not base:
        return None
    k = _best_capacity_k(op, sim)
    with_k = sim.sustainable_qps_with(k) or 0.0
    served = fmt_rate(with_k, op)  # 3.996 req/s beside 4 QPS is not "~4.0"
    simulated = f"capacity ~{fmt_rate(base)} req/s without speculation, ~{served} with k={k}"
    row = sim.row(op, k)
    runs = noise if noise is not None and noise.k == k and noise.qps == op else None
    speedup = runs.mean if runs is not None else row.speedup(sim.decision_metric) if row is not None else None
    low, high = (runs.low, runs.high) if runs is not None else (speedup, speedup)
    kept_up = (
        f"; where it keeps up, simulated {fmt_x(speedup)}"
        + (f" ({runs.words()})" if runs is not None else "")
        + f" (band {_band_words(low, high, sim.band, minimum)})"
    )
    undecided = capacity_undecided(sim, op, k) and low is not None and high is not None
    if undecided and interval_verdict(low or 0.0, high or 0.0, sim.band, minimum) != "disable":
        reason = (
            f"at {op:g} QPS the deployment keeps up without speculation (it serves ~{fmt_rate(base)} req/s); with "
            f"k={k} it serves ~{served} req/s{_capacity_edge(sim, op, k)}: if it does not, the queue grows without "
            f"bound{kept_up}: measure it on your server before enabling it"
        )
        return _Verdict("measure_first", k, reason, simulated, headline=_measure_headline(label, k))
    both = kept_up + ", below it even at its high end" if undecided else ""
    reason = (
        f"at {op:g} QPS the deployment keeps up without speculation (it serves ~{fmt_rate(base)} req/s) but with no k "
        f"(at best ~{served} req/s, k={k}): with speculation the queue would grow without bound; "
        f"{_capacity_change(with_k / base)}{_capacity_runs_words(sim)}{_capacity_edge(sim, op, k)}{both}"
    )
    return _Verdict("disable", 0, reason, simulated, headline=f"Do not enable {label}: with it, {op:g} QPS overloads")


def _band_words(low: float | None, high: float | None, band: float, minimum: float) -> str:
    """The band around [low, high] (one speedup, or the runs' 90% interval), as :func:`_verdict` quotes it."""
    if low is None or high is None:
        return "-"
    return f"{fmt_ratio(low * (1 - band), minimum)}-{fmt_ratio(high * (1 + band), minimum)}x"


PERCENTILE_METRICS = ("e2e", "tpot")  # a latency's p50; throughput and goodput are rates, with no percentile


def _goodput_verdict(op: float, sim: SweepResult, label: str) -> _Verdict | None:
    """Judged on goodput, at an operating load where plain decoding serves no request within the SLOs: a speedup
    over zero means nothing (``best_speedup_by_qps`` holds 0 there), so no band applies. A k that serves some within
    them is measure_first -- the SLOs are met only by what the prediction says of its latency, inside its band; none
    is disable: no configuration meets the SLOs at this load, speculation does not change that. None: plain decoding
    has goodput here, or the metric is another."""
    if sim.decision_metric != "goodput" or not sim.speedup_undefined(op):
        return None
    row = sim.only_speculation_has_goodput(op)
    if row is None:
        reason = (
            f"at the operating {op:g} QPS no request meets the SLOs, with or without speculation (simulated goodput 0 "
            "at every k): the SLOs are out of this deployment's reach at this load; speculation does not change that"
        )
        return _Verdict("disable", 0, reason, headline=f"Do not enable {label}: no configuration meets the SLOs")
    k = row.k or 0
    simulated = f"simulated goodput {row.goodput_per_s or 0.0:.2f} req/s with k={k}, none without speculation"
    reason = (
        f"at the operating {op:g} QPS plain decoding meets the SLOs for no request and k={k} for some "
        f"({simulated}; {sim.predictor}): no speedup ratio to quote, and whether the SLOs are met rests on latencies "
        "inside the predictor's band -- measure it before enabling"
    )
    return _Verdict("measure_first", k, reason, simulated, headline=_measure_headline(label, k))


def _evaluated(
    inputs: AdviseInputs,
    prepared: Sequence[Prepared],
    eng: Engine,
    executor: Executor | None,
    processes: int | None,
    progress: Progress | None,
) -> list[CandidateAdvice]:
    """Each candidate's advice, its simulations on ``executor`` (None: one local pool of ``processes`` for every
    candidate's maps, shut down after them)."""
    own = None if executor is not None else LocalExecutor(processes, keep_pool=True)
    try:
        return [evaluate_candidate(inputs, p, eng, executor or own, progress) for p in prepared]
    finally:
        if own is not None:
            own.close()


def advise(
    inputs: AdviseInputs,
    profile_paths: Sequence[Path] = (),
    bench_paths: Sequence[Path] = (),
    processes: int | None = None,
    progress: Progress | None = None,
    engine: str | None = None,
    host: str = LOOPBACK,
    engine_version: str | None = None,
    executor: Executor | None = None,
    launch_file: str | None = None,
) -> Advice:
    """The decision for ``inputs``; ``host`` is the address the generated serve command binds (loopback unless
    the operator asks otherwise: ``0.0.0.0`` in a pod); ``engine`` the serving engine whose commands are written
    (None: the scenario's ``[deployment].engine``); ``engine_version`` the vLLM version the config is for
    (None: the scenario's ``[deployment].engine_version`` from 0.8.2 on, else the current one, and the serve notes
    say so: :class:`ConfigTarget`), which decides how a k-by-batch-size schedule is written and which methods it
    runs. The sweeps run on ``executor`` (default: one local pool of ``processes`` for them all). ``launch_file``:
    where a "measure first" launch file is written (``--write-launch``; default ``SCENARIO.measure.toml``), so the
    bench names it."""
    inputs = resolved_names(inputs)
    profiles = [ProfileDoc.read(p) for p in profile_paths]
    benches = attribute_methods([read_bench(p) for p in bench_paths], inputs.candidates)
    refuse_unused(profiles, benches, inputs.candidates, inputs.deployment.target)
    name = engine or inputs.deployment.engine  # default: the scenario's [deployment]
    if engine_version is not None and name == "vllm":  # the vLLM the config is for is the one simulated
        dep = inputs.deployment
        predictor = replace(dep.predictor, engine_version=engine_version)
        inputs = replace(inputs, deployment=replace(dep, engine_version=engine_version, predictor=predictor))
    written = config_target(inputs, name, engine_version)
    eng = get_engine(name, written.version if written is not None else None)
    gaps = [calibration_gap(inputs.deployment.predictor, c.method, c.speculation.draft) for c in inputs.candidates]
    if gaps and all(gaps):  # no candidate can be priced: nothing to weigh
        raise SpecwiseError("; ".join(dict.fromkeys(g for g in gaps if g)))
    prepared = [prepare_candidate(inputs, c, profiles, benches, eng) for c in inputs.candidates]
    results = _evaluated(inputs, prepared, eng, executor, processes, progress)
    # candidates that tie on every key keep their labels' order, not the scenario's (a stable sort over a sorted list)
    by_label = sorted(results, key=lambda r: str(r.candidate))
    ranked = sorted(by_label, key=lambda r: _rank_key(r, inputs.operating_qps), reverse=True)
    top = ranked[0]
    if top.verdict in ("enable", "enable_below"):
        decision, headline = top.verdict, top.headline
        reason, recommended, spec = top.reason, top.candidate, top.speculative_config
    elif top.verdict == "measure_first":
        decision, recommended, spec = "measure_first", None, None
        headline, reason = top.headline, top.reason
    else:
        decision, headline = "disable", _disable_headline(inputs.operating_qps, ranked, written)
        recommended, spec = None, None
        reason = "; ".join(f"{r.candidate}: {r.reason}" for r in ranked)
        if all(r.verdict == "unsupported" for r in ranked):
            decision = "unsupported"  # not "speculation loses": nothing proposed can run on this engine
    first = next((r for r in results if r.sim is not None), None)
    return Advice(
        scenario=inputs.name,
        target=inputs.deployment.target,
        gpu=inputs.gpu.name,  # a GPU file's card, not its path
        tp=inputs.deployment.tp,
        operating_qps=inputs.operating_qps,
        min_speedup=inputs.min_speedup,
        decision=decision,
        headline=headline,
        recommended=recommended,
        reason=reason,
        assumed_acceptance_for=tuple(sorted({e.workload for e in top.evidence if e.assumed})),
        ranking=tuple(r.candidate for r in ranked),
        candidates=tuple(results),
        serve=noted(serve_command(inputs, top, spec, eng, host), written, simulated=first is not None),
        acceptance_vs_temperature=tuple(temperature_curves(inputs, profiles)),
        monitoring={
            "acceptance_rate_promql": PROMQL_ACCEPTANCE_RATE,
            "acceptance_length_promql": PROMQL_ACCEPTANCE_LENGTH,
        },
        measure=measure_plan(inputs, top, eng, launch_file, engine_version) if decision == "measure_first" else None,
        predictor=first.sim.predictor if first and first.sim else "",
        band=first.sim.band if first and first.sim else 0.0,
        band_source=first.sim.band_source if first and first.sim else "",
        band_statistic=first.sim.band_statistic if first and first.sim else P80_SPEEDUP_ERROR,
        nearby_evidence=_nearby_evidence(inputs, first.sim.predictor) if first and first.sim else None,
    )


def _nearby_evidence(inputs: AdviseInputs, predictor: str) -> NearbyEvidence | None:
    """The published fit's error on the held-back measurements most like this deployment (its stored replay;
    another predictor's error there is not stored: None)."""
    if not predictor.startswith("published-fit"):
        return None
    dep = inputs.deployment
    q = query_for(dep.engine, inputs.gpu, dep.target, dep.tp, [c.method.name for c in inputs.candidates])
    try:
        return nearby_evidence(q, published_fit(), f"specwise validate --like {shlex.quote(inputs.file)}")
    except StaleFit as exc:  # an installation whose fit file predates its evidence: said in the log, not fatal
        log.warning("%s", exc)
        return None


def _draft_heads(draft: str | None) -> int | None:
    try:
        return resolve_model(draft).attention.num_heads if draft else None
    except SpecwiseError:
        return None
