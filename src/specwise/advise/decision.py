"""Per candidate: memory plan, simulated speedup curve, best k or a k-by-batch-size schedule, rule checks;
then a ranking and one recommendation. Every reason carries the evidence it used."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from specwise.advise import rules, vllm_config
from specwise.advise.evidence import Evidence, read_json_doc, resolve_evidence, temperature_curves, workload_tables
from specwise.advise.inputs import AdviseInputs, Candidate
from specwise.errors import SpecwiseError
from specwise.scenario.model import Scenario
from specwise.scenario.toml_loader import parse_scenario
from specwise.sim.sweep import decide, run_cell, run_sweep

VERDICT_ORDER = {"enable": 3, "enable_below": 2, "disable": 1, "does_not_fit": 0}
Progress = Callable[[str, int, int], None]


def _scenario_for(inputs: AdviseInputs, c: Candidate, evidence: Sequence[Evidence]) -> Scenario:
    spec: dict[str, Any] = {"method": c.method, "k": c.raw.get("k", [0, 1, 2, 3, 4, 5, 6])}
    for key in ("draft", "draft_tp", "draft_quantization"):
        if key in c.raw:
            spec[key] = c.raw[key]
    ks = spec["k"] if isinstance(spec["k"], list) else []
    k_max = max([k for k in ks if isinstance(k, int)] or [8])
    data = {
        "name": f"{inputs.name}:{c.label}",
        "deployment": inputs.deployment,
        "speculation": spec,
        "sweep": inputs.sweep,
        "workload": workload_tables(inputs, evidence, k_max),
    }
    try:
        return parse_scenario(data, file=inputs.file, base_dir=inputs.base_dir)
    except SpecwiseError as exc:
        text = str(exc).replace("[speculation]", f"[[candidate]] {c.label!r}")
        raise SpecwiseError(text) from None


def batch_at(doc: dict[str, Any], qps: float, max_num_seqs: int) -> float:
    """Mean running batch at a load, by Little's law on the baseline: QPS x E2E p50 (capped at max_num_seqs)."""
    rows = {r["qps"]: r for r in doc["baseline"]["by_qps"]}
    row = rows.get(qps)
    e2e = row["e2e_p50_s"] if row and row["e2e_p50_s"] is not None else 0.0
    return min(float(max_num_seqs), max(1.0, qps * e2e))


def k_schedule(
    doc: dict[str, Any], qps_grid: Sequence[float], max_num_seqs: int, min_speedup: float = 1.0
) -> list[tuple[int, int, int]]:
    """Bands [start_bs, end_bs, k] (vLLM's num_speculative_tokens_per_batch_size): the best k at each simulated
    load, band edges half-way between the loads' mean batch sizes, k = 0 wherever the best speedup is below
    ``min_speedup``."""
    points = []
    for q in sorted(qps_grid):
        pays = doc["best_speedup_by_qps"][f"{q:g}"] >= min_speedup
        points.append((batch_at(doc, q, max_num_seqs), doc["best_k_by_qps"][f"{q:g}"] if pays else 0))
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


def evaluate_candidate(
    inputs: AdviseInputs,
    c: Candidate,
    profiles: Sequence[tuple[Path, dict[str, Any]]],
    benches: Sequence[tuple[Path, dict[str, Any]]],
    processes: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    evidence = resolve_evidence(inputs, c, profiles, benches)
    sc = _scenario_for(inputs, c, evidence)
    plan = sc.memory_plan
    assert plan is not None
    metric = sc.decision_metric
    out: dict[str, Any] = {
        "candidate": c.label,
        "method": c.method,
        "draft": c.raw.get("draft"),
        "drafting": c.drafting,
        "memory": plan.to_dict(),
        "evidence": [
            {"workload": e.workload, "kind": e.kind, "source": e.source, "per_position": list(e.model.per_position(8))}
            for e in evidence
        ],
        "warnings": list(sc.warnings),
        "decision_metric": metric,
    }
    temps = [float(w.get("temperature", 0.0)) for w in inputs.workloads]
    tq = str(inputs.deployment.get("quantization", "auto"))
    dq = str(c.raw.get("draft_quantization", "auto"))
    if not plan.fits:
        out.update(
            verdict="does_not_fit",
            k=0,
            schedule=[],
            speedup_at_operating_qps=None,
            sim=None,
            reason="does not fit in memory with the draft: " + "; ".join(plan.problems),
        )
        rule_in = rules.RuleInput(
            c.method, sc.target, sc.draft, plan, evidence, temps, 1, c.drafting, tq, dq, {}, inputs.min_speedup
        )
        out["rules"] = [r.to_dict() for r in rules.check_all(rule_in)]
        return out

    def tick(done: int, total: int) -> None:
        if progress:
            progress(f"simulate {c.label}", done, total)

    cells = run_sweep(sc, processes=processes, progress=tick)
    doc = decide(sc, cells)
    op = inputs.operating_qps
    best = doc["best_speedup_by_qps"]
    s_op = best[f"{op:g}"]
    k_op = doc["best_k_by_qps"][f"{op:g}"]
    gains = {q: best[f"{q:g}"] for q in sc.sweep.qps}
    schedule: list[tuple[int, int, int]] = []
    schedule_rows: list[dict[str, Any]] = []
    ev_sim = f"simulated {metric} p50 speedup {s_op:.2f}x at the operating {op:g} QPS (best k={k_op})"
    if all(s >= inputs.min_speedup for s in gains.values()):
        verdict, k = "enable", k_op
        reason = f"pays at every simulated load up to {max(gains):g} QPS; {ev_sim}"
    elif s_op >= inputs.min_speedup:
        verdict, k = "enable_below", k_op
        limit = doc["crossover_qps"] or min(q for q, s in gains.items() if s < inputs.min_speedup)
        schedule = k_schedule(doc, sc.sweep.qps, sc.max_num_seqs, inputs.min_speedup)
        reason = (
            f"pays at {op:g} QPS but not above ~{limit:.1f} QPS; {ev_sim}; the k-by-batch-size schedule "
            "switches k to 0 where it stops paying"
        )
        sched_sc = replace(sc, k_schedule=tuple(schedule))
        base = {r["qps"]: r for r in doc["baseline"]["by_qps"]}
        for q in sc.sweep.qps:
            cell = run_cell(sched_sc, q, None)
            b = base[q]
            e2e = cell.summary.overall.e2e_s.p50
            schedule_rows.append({"qps": q, "speedup_e2e": b["e2e_p50_s"] / e2e if e2e else None})
    else:
        verdict, k = "disable", 0
        paying = [q for q, s in gains.items() if s >= inputs.min_speedup]
        reason = f"does not pay at the operating {op:g} QPS ({ev_sim})" + (
            f"; it would pay at {', '.join(f'{q:g}' for q in paying)} QPS" if paying else "; it never pays"
        )
        if paying:
            schedule = k_schedule(doc, sc.sweep.qps, sc.max_num_seqs, inputs.min_speedup)
    rule_in = rules.RuleInput(
        c.method,
        sc.target,
        sc.draft,
        plan,
        evidence,
        temps,
        max(k, k_op, 1),
        c.drafting,
        tq,
        dq,
        gains,
        inputs.min_speedup,
    )
    checks = rules.check_all(rule_in)
    vetoes = [r for r in checks if r.status == "fail" and r.rule in rules.VETO_RULES]
    if verdict != "disable" and vetoes:
        verdict, k, schedule, schedule_rows = "disable", 0, [], []
        reason = "; ".join(f"rule '{r.rule}' fails: {r.message}" for r in vetoes) + f" (despite {ev_sim})"
    spec = None
    if verdict in ("enable", "enable_below"):
        spec = vllm_config.speculative_config(
            c.method,
            k,
            c.raw.get("draft"),
            sc.tp,
            c.raw.get("draft_tp"),
            c.prompt_lookup,
            schedule,
            c.drafting,
            dq if "draft_quantization" in c.raw else None,
        )
    out.update(
        verdict=verdict,
        k=k,
        schedule=[list(b) for b in schedule],
        schedule_results=schedule_rows,
        speedup_at_operating_qps=s_op,
        reason=reason,
        sim=doc,
        speculative_config=spec,
        rules=[r.to_dict() for r in checks],
    )
    return out


def advise(
    inputs: AdviseInputs,
    profile_paths: Sequence[Path] = (),
    bench_paths: Sequence[Path] = (),
    processes: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    profiles = [(p, read_json_doc(p, "profile")) for p in profile_paths]
    benches = [(p, read_json_doc(p, "bench")) for p in bench_paths]
    results = [evaluate_candidate(inputs, c, profiles, benches, processes, progress) for c in inputs.candidates]
    ranked = sorted(
        results, key=lambda r: (VERDICT_ORDER[r["verdict"]], r["speedup_at_operating_qps"] or 0.0), reverse=True
    )
    top = ranked[0]
    dep = inputs.deployment
    target = str(dep["target"])
    if top["verdict"] in ("enable", "enable_below"):
        decision = "enable" if top["verdict"] == "enable" else "enable_below"
        headline = (
            f"Enable {top['candidate']} with k={top['k']}"
            if decision == "enable"
            else f"Enable {top['candidate']} (k={top['k']}) with the k schedule that switches it off under load"
        )
    else:
        decision = "disable"
        headline = "Do not enable speculative decoding for this load"
        top = {**top, "reason": "; ".join(f"{r['candidate']}: {r['reason']}" for r in ranked)}
    plan_doc = top["memory"]
    max_num_seqs = int(dep.get("max_num_seqs", 256))
    spec = top.get("speculative_config") if decision != "disable" else None
    argv = vllm_config.serve_command(
        target,
        plan_doc["tp"],
        plan_doc["gpu_memory_utilization"],
        plan_doc["max_model_len"],
        max_num_seqs,
        spec,
        str(dep.get("quantization", "auto")),
    )
    assumed = sorted({e["workload"] for r in results for e in r["evidence"] if e["kind"] == "assumed"})
    return {
        "schema": "specwise.advise/1",
        "scenario": inputs.name,
        "target": target,
        "gpu": str(dep.get("gpu")),
        "tp": int(dep.get("tp", 1)),
        "operating_qps": inputs.operating_qps,
        "min_speedup": inputs.min_speedup,
        "decision": decision,
        "headline": headline,
        "recommended": top["candidate"] if decision != "disable" else None,
        "reason": top["reason"],
        "assumed_acceptance_for": assumed,
        "ranking": [r["candidate"] for r in ranked],
        "candidates": results,
        "vllm": {
            "serve_argv": argv,
            "serve_command": vllm_config.shell(argv),
            "speculative_config": spec,
        },
        "acceptance_vs_temperature": temperature_curves(inputs, inputs.candidates, profiles),
        "monitoring": {
            "acceptance_rate_promql": rules.PROMQL_ACCEPTANCE_RATE,
            "acceptance_length_promql": rules.PROMQL_ACCEPTANCE_LENGTH,
        },
    }
