"""The advise scenario TOML: a deployment, workload classes, a sweep, and the candidates to compare.

    [deployment]   as in simulate scenarios (target, gpu, tp, max_model_len, quantization, ...)
    [advise]       operating_qps (the load the decision is for), min_speedup (default 1.05), replicates (runs
                   the operating load, and a capacity a load is near, are simulated with, default 5; 1: one draw)
    [sweep]        as in simulate scenarios
    [[workload]]   as in simulate scenarios, plus task = code|summarization|chat|qa|translation|other;
                   no acceptance here -- it depends on the candidate
    [[candidate]]  method, draft (draft_model/eagle/eagle3), k, draft_tp, draft_quantization, drafting,
                   prompt_lookup_min/max (ngram), and optionally acceptance / per_position / profile
                   (match_rate with one of them, for ngram/suffix); no k_schedule: advise builds the k-by-batch-size
                   schedule itself from the best k it simulates at each load (``schedule.k_schedule``), so one written
                   here is refused (exit 2) -- simulate a schedule of your own with ``specwise simulate``

Parsed with the simulate scenario's own table readers (``scenario/parse.py``); every error is one line naming the
file and the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from specwise.advisor.band_rule import DEFAULT_MIN_SPEEDUP
from specwise.catalog import resolve_gpu
from specwise.errors import SpecwiseError, as_written
from specwise.methods import Method
from specwise.scenario.build import named
from specwise.scenario.fields import Section
from specwise.scenario.model import DEFAULT_QPS, DeploymentSpec, SpeculationSpec, SweepSpec, WorkloadSpec
from specwise.scenario.names import checked_name
from specwise.scenario.parse import (
    ACCEPTANCE_FIELDS,
    ACCEPTANCE_KEYS,
    MATCH_RATE,
    SPECULATION_KEYS,
    WORKLOAD_KEYS,
    AcceptanceSource,
    duplicate_loads_note,
    parse_acceptance,
    parse_deployment,
    parse_speculation,
    parse_sweep,
    parse_workload,
    refuse_duplicate_workloads,
    scenario_name,
)
from specwise.scenario.toml_loader import read_toml, source_name
from specwise.specs.gpu import GpuSpec
from specwise.stats import MAX_REPLICATES

CANDIDATE_DEFAULT_K = (0, 1, 2, 3, 4, 5, 6)
DEFAULT_REPLICATES = 5  # [advise].replicates: the sweep's run and four replicates of its seed


@dataclass(frozen=True)
class Candidate:
    label: str
    speculation: SpeculationSpec
    given: AcceptanceSource | None = None  # acceptance / per_position / profile written in the candidate

    @property
    def method(self) -> Method:
        return self.speculation.method

    @property
    def drafting(self) -> str:
        return self.speculation.drafting


@dataclass(frozen=True)
class AdviseInputs:
    name: str
    file: str
    base_dir: Path
    deployment: DeploymentSpec
    sweep: SweepSpec  # k_values come from each candidate
    decision_metric: str
    workloads: tuple[WorkloadSpec, ...]
    candidates: tuple[Candidate, ...]
    operating_qps: float
    min_speedup: float
    notes: tuple[str, ...] = ()  # what the parse noticed and did not refuse (every candidate's warnings say it)
    # runs the operating load (and a capacity a load is near) is simulated with (study/replicates.py): the verdict
    # rests on their mean and its 90% interval; 1: on the sweep's one draw
    replicates: int = DEFAULT_REPLICATES

    @cached_property
    def gpu(self) -> GpuSpec:
        """The GPU ``deployment.gpu`` names, resolved once for the whole advise run (a GPU file is read and checked
        once, not per candidate), its error naming the file and field. Resolved where first asked for, as each use
        resolved it before: a scenario with more than one mistake is refused for the same one. A copy made with
        :func:`dataclasses.replace` resolves it again from its own deployment, so it never names another card."""
        return named(self.file, "[deployment].gpu", lambda: resolve_gpu(self.deployment.gpu))


def load_inputs(path: Path) -> AdviseInputs:
    return parse_inputs(read_toml(path), source_name(path), path.parent)


def parse_inputs(data: Mapping[str, Any], file: str, base_dir: Path) -> AdviseInputs:
    root = Section(data, "scenario", file)
    unknown = set(data) - {"name", "deployment", "advise", "sweep", "workload", "candidate"}
    if unknown:
        hint = (
            ": this looks like a `specwise simulate` scenario ([speculation]); advise takes [[candidate]] tables, "
            "one per method to compare -- see examples/advise/ (or run specwise simulate on this file)"
            if "speculation" in unknown
            else ""
        )
        raise SpecwiseError(f"{file}: unknown top-level key(s): {', '.join(sorted(unknown))}{hint}")
    deployment = parse_deployment(root.sub("deployment", "[deployment]"), base_dir)
    adv = Section(data.get("advise", {}), "[advise]", file)
    adv.check_keys({"operating_qps", "min_speedup", "replicates"})
    sweep_section = Section(data.get("sweep", {}), "[sweep]", file)
    qps = sweep_section.data.get("qps", list(DEFAULT_QPS))
    default_op = min(qps) if isinstance(qps, list) and qps and all(isinstance(q, int | float) for q in qps) else 1.0
    op = _positive(adv, "operating_qps", default_op)
    min_speedup = adv.number("min_speedup", DEFAULT_MIN_SPEEDUP, low=1.0, high=100.0)
    replicates = adv.integer("replicates", DEFAULT_REPLICATES, low=1, high=MAX_REPLICATES)
    sweep, metric = parse_sweep(sweep_section, base_dir, (0,))
    if op not in sweep.qps:
        sweep = replace(sweep, qps=tuple(sorted({*sweep.qps, op})))
    workloads = _workloads(root, file)
    candidates = _candidates(root, file, base_dir)
    return AdviseInputs(
        name=scenario_name(root),
        file=file,
        base_dir=base_dir,
        deployment=deployment,
        sweep=sweep,
        decision_metric=metric,
        workloads=workloads,
        candidates=candidates,
        operating_qps=op,
        min_speedup=min_speedup,
        replicates=replicates,
        notes=tuple(note for note in [duplicate_loads_note(sweep_section), _default_operating_note(adv, op)] if note),
    )


def _default_operating_note(adv: Section, op: float) -> str | None:
    """What the decision is for when the scenario did not say: the sweep's lowest rate, said, since a missing
    ``operating_qps`` silently became 8 QPS for a sweep of [8, 16] (a first-hour review)."""
    if "operating_qps" in adv.data:
        return None
    return (
        f"[advise].operating_qps not given: the decision is for {op:g} QPS, the lowest rate of the sweep; set it to "
        "the load you serve"
    )


def _positive(s: Section, key: str, default: float) -> float:
    value = s.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or not math.isfinite(value):
        raise s.fail(key, f"must be a number > 0, got {as_written(value)}")
    return float(value)


def _workloads(root: Section, file: str) -> tuple[WorkloadSpec, ...]:
    raw = root.array_of_tables("workload")
    if not isinstance(raw, list) or not raw:
        raise SpecwiseError(f"{file}: at least one [[workload]] table is required")
    out = []
    for i, table in enumerate(raw, start=1):
        w = Section(table, f"[[workload]] #{i}", file)
        for key in (*ACCEPTANCE_KEYS, MATCH_RATE):
            if key in w.data:
                name = w.data.get("name", f"class{i}")
                raise SpecwiseError(
                    f"{file}: [[workload]] #{i} {name!r}.{key}: acceptance depends on the candidate: give it in "
                    "[[candidate]] or with --profile / --bench"
                )
        w.check_keys((WORKLOAD_KEYS - {"drafting"}) | {"task"})
        out.append(parse_workload(w, i, with_task=True))
    refuse_duplicate_workloads([w.name for w in out], file)
    return tuple(out)


def _candidates(root: Section, file: str, base_dir: Path) -> tuple[Candidate, ...]:
    raw = root.array_of_tables("candidate")
    if not isinstance(raw, list) or not raw:
        raise SpecwiseError(f"{file}: at least one [[candidate]] table is required (method = ngram, draft_model, ...)")
    out: list[Candidate] = []
    labels: set[str] = set()
    for i, table in enumerate(raw, start=1):
        c = Section(table, f"[[candidate]] #{i}", file)
        _refuse_schedule(c)
        spec = parse_speculation(c, CANDIDATE_DEFAULT_K, frozenset({"name"}))  # it refuses k = 0 alone
        label = c.string("name", None) or (f"{spec.method.name}:{spec.draft}" if spec.draft else spec.method.name)
        checked_name(label, f"{file}: [[candidate]] #{i}.name")
        if label in labels:
            raise c.fail("name", f"two candidates are called {label!r}; give them names")
        labels.add(label)
        out.append(Candidate(label, spec, parse_acceptance(c, base_dir, spec.drafting, spec.method)))
    return tuple(out)


def _refuse_schedule(c: Section) -> None:
    """A ``[[candidate]]`` takes every ``[speculation]`` key but ``k_schedule``: advise writes the schedule itself
    (:func:`specwise.advisor.schedule.k_schedule`), and one given would be simulated but never advised."""
    if "k_schedule" in c.data:
        raise c.fail(
            "k_schedule",
            "advise builds the k-by-batch-size schedule itself from the best k it simulates at each load; remove it "
            "(to simulate a schedule of your own: specwise simulate, [speculation].k_schedule)",
        )
    c.check_keys((SPECULATION_KEYS - {"k_schedule"}) | ACCEPTANCE_FIELDS | {"name"})
