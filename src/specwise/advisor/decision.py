"""Per candidate: memory plan, simulated speedup curve, best k or a k-by-batch-size schedule, rule checks;
then a ranking and one recommendation. Every reason carries the evidence it used."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from specwise.advisor import rules
from specwise.advisor.evidence import Evidence, attribute_methods, profile_for, resolve_evidence
from specwise.advisor.inputs import AdviseInputs, Candidate
from specwise.advisor.priors import prior
from specwise.contracts.advice import (
    Advice,
    CandidateAdvice,
    EvidenceUsed,
    MeasurePlan,
    ScheduleCheck,
    ServeCommand,
    TemperaturePoint,
)
from specwise.contracts.bench import BenchDoc
from specwise.contracts.bench_formats import read_bench
from specwise.contracts.document import JsonObject
from specwise.contracts.profile import ProfileDoc
from specwise.contracts.sweep import SweepResult
from specwise.engines import Deployment, Engine, Speculation, get_engine
from specwise.engines.base import LOOPBACK, shell
from specwise.engines.vllm import PROMQL_ACCEPTANCE_LENGTH, PROMQL_ACCEPTANCE_RATE, launch_toml
from specwise.executors import Executor
from specwise.executors.local import LocalExecutor
from specwise.scenario.build import build_scenario
from specwise.scenario.model import Scenario, ScenarioSpec
from specwise.study.decide import decide
from specwise.study.sweep import run_cell, run_sweep

VERDICT_ORDER = {"enable": 4, "enable_below": 3, "measure_first": 2, "disable": 1, "does_not_fit": 0}
Progress = Callable[[str, int, int], None]


def scenario_for(inputs: AdviseInputs, c: Candidate, evidence: Sequence[Evidence]) -> Scenario:
    """The candidate as a simulate scenario: the inputs' deployment and sweep, its speculation, and each
    workload with the acceptance its evidence gives -- built directly, no file round trip."""
    spec = ScenarioSpec(
        name=f"{inputs.name}:{c.label}",
        file=inputs.file,
        deployment=inputs.deployment,
        speculation=c.speculation,
        classes=tuple(w.with_acceptance(e.model) for w, e in zip(inputs.workloads, evidence, strict=True)),
        sweep=replace(inputs.sweep, k_values=c.speculation.k_values),
        decision_metric=inputs.decision_metric,
        where_speculation=f"[[candidate]] {c.label!r}",
    )
    return build_scenario(spec)


def batch_at(sim: SweepResult, qps: float, max_num_seqs: int) -> float:
    """Mean running batch at a load, by Little's law on the baseline: QPS x E2E p50 (capped at max_num_seqs)."""
    b = sim.baseline_at(qps)
    e2e = b.e2e_p50_s if b is not None and b.e2e_p50_s == b.e2e_p50_s else 0.0
    return min(float(max_num_seqs), max(1.0, qps * e2e))


def k_schedule(
    batches: Mapping[float, float],
    best_k: Mapping[float, int],
    best_speedup: Mapping[float, float],
    max_num_seqs: int,
    min_speedup: float = 1.0,
) -> list[tuple[int, int, int]]:
    """Bands [start_bs, end_bs, k] (vLLM's num_speculative_tokens_per_batch_size): the best k at each simulated
    load, band edges half-way between the loads' mean batch sizes, k = 0 wherever the best speedup is below
    ``min_speedup``."""
    points = [(batches[q], best_k[q] if best_speedup[q] >= min_speedup else 0) for q in sorted(batches)]
    bands: list[list[int]] = []
    start = 1
    for i, (b, k) in enumerate(points):
        end = max_num_seqs if i == len(points) - 1 else int((b + points[i + 1][0]) / 2)
        end = max(end, start)
        if bands and bands[-1][2] == k:
            bands[-1][1] = end
        else:
            bands.append([start, end, k])
        start = end + 1
        if start > max_num_seqs:
            break
    if bands[-1][1] < max_num_seqs:
        bands[-1][1] = max_num_seqs
    if any(k == 0 for _, k in points) and not any(band[2] == 0 for band in bands):
        return []  # the losing loads run at the same (saturated) batch size as paying ones: no batch rule helps
    return [(a, b, k) for a, b, k in bands]


def _schedule_for(sim: SweepResult, sc: Scenario, min_speedup: float) -> list[tuple[int, int, int]]:
    batches = {q: batch_at(sim, q, sc.max_num_seqs) for q in sc.sweep.qps}
    return k_schedule(batches, sim.best_k_by_qps, sim.best_speedup_by_qps, sc.max_num_seqs, min_speedup)


@dataclass(frozen=True)
class _Verdict:
    verdict: str
    k: int
    reason: str
    simulated: str = ""  # the simulated speedup the verdict rests on, in words
    schedule: tuple[tuple[int, int, int], ...] = ()
    schedule_results: tuple[ScheduleCheck, ...] = ()


def _verdict(inputs: AdviseInputs, sc: Scenario, sim: SweepResult) -> _Verdict:
    """enable (pays at every load, even at the pessimistic end of the predictor's band), enable_below (pays at the
    operating load, with the schedule that turns it off above), measure_first (the predicted speedup clears
    ``min_speedup`` but the pessimistic end of its band does not: measure on a real server), or disable."""
    op, minimum, metric, band = inputs.operating_qps, inputs.min_speedup, sim.decision_metric, sc.models.band
    gains = sim.best_speedup_by_qps
    s_op, k_op = gains[op], sim.best_k_by_qps[op]
    ev_sim = (
        f"simulated {metric} p50 speedup {s_op:.2f}x with k={k_op or sim.top_k(op)} (band {s_op * (1 - band):.2f}-"
        f"{s_op * (1 + band):.2f}x, {sim.predictor})"
    )
    sure = {q: s * (1.0 - band) >= minimum for q, s in gains.items()}
    if all(sure.values()):
        reason = (
            f"clears {minimum:g}x at every simulated load up to {max(gains):g} QPS, even at the low end of the band; "
            f"at the operating {op:g} QPS: {ev_sim}"
        )
        return _Verdict("enable", k_op, reason, ev_sim)
    if sure[op]:
        limit = sim.crossover_qps or min(q for q, s in gains.items() if s * (1.0 - band) < minimum)
        schedule = tuple(_schedule_for(sim, sc, minimum))
        sched_sc = replace(sc, k_schedule=schedule)
        checks = []
        for b in sim.baseline:
            e2e = run_cell(sched_sc, b.qps, None).summary.overall.e2e_s.p50
            checks.append(ScheduleCheck(b.qps, b.e2e_p50_s / e2e if e2e else None))
        reason = (
            f"pays at the operating {op:g} QPS but not above ~{limit:.1f} QPS: {ev_sim}; the k-by-batch-size "
            "schedule switches k to 0 where it stops paying"
        )
        return _Verdict("enable_below", k_op, reason, ev_sim, schedule, tuple(checks))
    if s_op >= minimum:
        reason = f"at the operating {op:g} QPS: {ev_sim}; it clears {minimum:g}x, the low end of its band does not"
        return _Verdict("measure_first", k_op, reason, ev_sim)
    paying = [q for q, s in gains.items() if s >= minimum]
    reason = f"below {minimum:g}x at the operating {op:g} QPS: {ev_sim}" + (
        f"; it would clear {minimum:g}x at {', '.join(f'{q:g}' for q in paying)} QPS"
        if paying
        else f"; it clears {minimum:g}x at no simulated load"
    )
    return _Verdict("disable", 0, reason, ev_sim, tuple(_schedule_for(sim, sc, minimum)) if paying else ())


def _rule_input(
    inputs: AdviseInputs, c: Candidate, sc: Scenario, evidence: Sequence[Evidence], k: int, gains: Mapping[float, float]
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
    )


def evaluate_candidate(
    inputs: AdviseInputs,
    c: Candidate,
    profiles: Sequence[ProfileDoc],
    benches: Sequence[BenchDoc],
    engine: Engine,
    executor: Executor | None = None,
    progress: Progress | None = None,
) -> CandidateAdvice:
    notes: list[str] = []
    evidence = resolve_evidence(inputs, c, profiles, benches, notes)
    sc = scenario_for(inputs, c, evidence)
    plan = sc.memory_plan
    unfit = CandidateAdvice(
        candidate=c.label,
        method=c.method.name,
        draft=c.speculation.draft,
        drafting=c.drafting,
        memory=plan.to_dict(),
        evidence=tuple(EvidenceUsed(e.workload, e.kind, e.source, e.model.per_position(8)) for e in evidence),
        warnings=tuple(notes) + sc.warnings,
        decision_metric=sc.decision_metric,
        verdict="does_not_fit",
        k=0,
        reason="does not fit in memory with the draft: " + "; ".join(plan.problems),
        rules=tuple(rules.check_all(_rule_input(inputs, c, sc, evidence, 1, {}))) if not plan.fits else (),
    )
    if not plan.fits:
        return unfit

    def tick(done: int, total: int) -> None:
        if progress:
            progress(f"simulate {c.label}", done, total)

    sim = decide(sc, run_sweep(sc, executor, progress=tick))
    v = _verdict(inputs, sc, sim)
    checks = rules.check_all(
        _rule_input(
            inputs, c, sc, evidence, max(v.k, sim.best_k_by_qps[inputs.operating_qps], 1), sim.best_speedup_by_qps
        )
    )
    vetoes = [r for r in checks if r.status == "fail" and r.rule in rules.VETO_RULES]
    if v.verdict != "disable" and vetoes:
        reason = "; ".join(f"rule '{r.rule}' fails: {r.message}" for r in vetoes) + f" (despite {v.simulated})"
        v = _Verdict("disable", 0, reason)
    spec = None
    if v.verdict in ("enable", "enable_below", "measure_first"):
        spec = engine.speculative_config(_speculation(c, sc, v.k, v.schedule))
    return replace(
        unfit,
        verdict=v.verdict,
        k=v.k,
        reason=v.reason,
        rules=tuple(checks),
        schedule=v.schedule,
        schedule_results=v.schedule_results,
        speedup_at_operating_qps=sim.best_speedup_by_qps[inputs.operating_qps],
        sim=sim,
        speculative_config=spec,
    )


def advise(
    inputs: AdviseInputs,
    profile_paths: Sequence[Path] = (),
    bench_paths: Sequence[Path] = (),
    processes: int | None = None,
    progress: Progress | None = None,
    engine: str = "vllm",
    host: str = LOOPBACK,
    engine_version: str | None = None,
    executor: Executor | None = None,
) -> Advice:
    """The decision for ``inputs``; ``host`` is the address the generated serve command binds (loopback unless
    the operator asks otherwise: ``0.0.0.0`` in a pod); ``engine_version`` the vLLM version the config is for
    (None: the current one), which decides how a k-by-batch-size schedule is written. The sweeps run on
    ``executor`` (default: a local pool of ``processes``)."""
    profiles = [ProfileDoc.read(p) for p in profile_paths]
    benches = attribute_methods([read_bench(p) for p in bench_paths], inputs.candidates)
    eng = get_engine(engine, engine_version)
    executor = executor or LocalExecutor(processes)
    results = [evaluate_candidate(inputs, c, profiles, benches, eng, executor, progress) for c in inputs.candidates]
    ranked = sorted(results, key=lambda r: (VERDICT_ORDER[r.verdict], r.speedup_at_operating_qps or 0.0), reverse=True)
    top = ranked[0]
    if top.verdict in ("enable", "enable_below"):
        decision = top.verdict
        headline = (
            f"Enable {top.candidate} with k={top.k}"
            if decision == "enable"
            else f"Enable {top.candidate} (k={top.k}) with the k schedule that switches it off under load"
        )
        reason, recommended, spec = top.reason, top.candidate, top.speculative_config
    elif top.verdict == "measure_first":
        decision, recommended, spec = "measure_first", None, None
        headline = f"Measure {top.candidate} (k={top.k}) on your server before enabling it"
        reason = top.reason
    else:
        decision, headline, recommended, spec = (
            "disable",
            "Do not enable speculative decoding for this load",
            None,
            None,
        )
        reason = "; ".join(f"{r.candidate}: {r.reason}" for r in ranked)
    first = next((r for r in results if r.sim is not None), None)
    return Advice(
        scenario=inputs.name,
        target=inputs.deployment.target,
        gpu=inputs.deployment.gpu,
        tp=inputs.deployment.tp,
        operating_qps=inputs.operating_qps,
        min_speedup=inputs.min_speedup,
        decision=decision,
        headline=headline,
        recommended=recommended,
        reason=reason,
        assumed_acceptance_for=tuple(sorted({e.workload for e in top.evidence if e.kind == "assumed"})),
        ranking=tuple(r.candidate for r in ranked),
        candidates=tuple(results),
        serve=_serve(inputs, top, spec, eng, host),
        acceptance_vs_temperature=tuple(temperature_curves(inputs, profiles)),
        monitoring={
            "acceptance_rate_promql": PROMQL_ACCEPTANCE_RATE,
            "acceptance_length_promql": PROMQL_ACCEPTANCE_LENGTH,
        },
        measure=_measure_plan(inputs, top) if decision == "measure_first" else None,
        predictor=first.sim.predictor if first and first.sim else "",
        band=first.sim.band if first and first.sim else 0.0,
        band_source=first.sim.band_source if first and first.sim else "",
    )


def _measure_plan(inputs: AdviseInputs, top: CandidateAdvice) -> MeasurePlan:
    """The launch file and bench command that measure ``top`` against no speculation at the scenario's loads."""
    dep, plan = inputs.deployment, top.memory
    d = Deployment(
        model=dep.target,
        tp=int(plan["tp"]),
        gpu_memory_utilization=float(plan["gpu_memory_utilization"]),
        max_model_len=int(plan["max_model_len"]),
        max_num_seqs=dep.max_num_seqs,
    )
    cand = next(c for c in inputs.candidates if c.label == top.candidate)
    spec = Speculation(
        method=cand.method,
        k=top.k,
        draft=cand.speculation.draft,
        draft_tp=cand.speculation.draft_tp,
        target_tp=int(plan["tp"]),
        prompt_lookup=cand.speculation.prompt_lookup,
        drafting=cand.drafting,
        draft_quantization=cand.speculation.draft_quantization,
    )
    name = f"{top.method}-k{top.k}"
    rates = ",".join(
        f"{q:g}" for q in sorted({inputs.operating_qps, *inputs.sweep.qps}) if q <= 2 * inputs.operating_qps
    )
    toml = launch_toml(d, name, spec)
    stem = Path(inputs.file).stem
    command = (
        f"specwise bench --launch {stem}.measure.toml --rates {rates} --requests-per-level 200 "
        f"--prompts YOUR_PROMPTS.jsonl --calibrate --json > {stem}.bench.json && "
        f"specwise advise --scenario {inputs.file} --bench {stem}.bench.json"
    )
    return MeasurePlan(top.candidate, toml, command)


def _serve(
    inputs: AdviseInputs, top: CandidateAdvice, spec: JsonObject | None, engine: Engine, host: str = LOOPBACK
) -> ServeCommand:
    """The serve command for the decision, sized by the top candidate's memory plan."""
    plan = top.memory
    dep = inputs.deployment
    argv = engine.serve_argv(
        Deployment(
            model=dep.target,
            tp=int(plan["tp"]),
            gpu_memory_utilization=float(plan["gpu_memory_utilization"]),
            max_model_len=int(plan["max_model_len"]),
            max_num_seqs=dep.max_num_seqs,
            quantization=dep.quantization,
            host=host,
        ),
        spec,
    )
    notes = engine.schedule_notes(top.schedule, top.k) if spec is not None else ()
    return ServeCommand(engine.name, tuple(argv), shell(argv), spec, notes)


def temperature_curves(inputs: AdviseInputs, profiles: Sequence[ProfileDoc]) -> list[TemperaturePoint]:
    """First-position acceptance vs temperature per candidate: measured points from profiles (all prompts, no
    quantisation), else the prior's curve for each task, labelled as assumed."""
    out: list[TemperaturePoint] = []
    for doc in profiles:
        for r in doc.results:
            first = r.per_position_acceptance[0] if r.per_position_acceptance else None
            if r.workload_class is None and not r.quantization and first is not None:
                out.append(TemperaturePoint(f"{doc.name} ({r.drafting}, profiled)", r.temperature, first))
    for c in inputs.candidates:
        if profile_for(c, profiles) is not None:
            continue
        for task in sorted({w.task for w in inputs.workloads}):
            for t in (0.0, 0.25, 0.5, 0.75, 1.0):
                p = prior(c.method, task, t, c.drafting)
                out.append(TemperaturePoint(f"{c.label} / {task} (assumed)", t, p.model.per_position(1)[0]))
    return out
