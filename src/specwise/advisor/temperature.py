"""First-position acceptance against temperature, per candidate: profiled where a profile measured it, else the
prior's curve, labelled as assumed (the advice's temperature plot)."""

from __future__ import annotations

from collections.abc import Sequence

from specwise.advisor.evidence import profile_for
from specwise.advisor.inputs import AdviseInputs
from specwise.advisor.priors import prior
from specwise.contracts.advice import TemperaturePoint
from specwise.contracts.profile import ProfileDoc
from specwise.methods import LOOKUP_METHODS


def temperature_curves(inputs: AdviseInputs, profiles: Sequence[ProfileDoc]) -> list[TemperaturePoint]:
    """First-position acceptance vs temperature per candidate: measured points from profiles (all prompts, no
    quantisation), else the prior's curve for each task, labelled as assumed. A lookup's rate is per match (vLLM
    counts its drafts only where the n-gram or suffix matched), and its series says so: it is not comparable with a
    draft model's per-step rate."""
    out: list[TemperaturePoint] = []
    for doc in profiles:
        per_match = ", per match" if doc.method in LOOKUP_METHODS else ""
        for r in doc.results:
            first = r.per_position_acceptance[0] if r.per_position_acceptance else None
            if r.workload_class is None and not r.quantization and first is not None:
                out.append(TemperaturePoint(f"{doc.name} ({r.drafting}, profiled{per_match})", r.temperature, first))
    by_task: dict[str, list[str]] = {}  # the prior depends on the task: one curve per task, named by its workloads
    for w in inputs.workloads:
        by_task.setdefault(w.task, []).append(w.name)
    for c in inputs.candidates:
        if profile_for(c, profiles) is not None:
            continue
        per_match = ", per match" if c.method.is_lookup else ""
        for task, names in sorted(by_task.items()):
            for t in (0.0, 0.25, 0.5, 0.75, 1.0):
                p = prior(c.method, task, t, c.drafting)
                label = f"{c.label} / {', '.join(names)} (assumed{per_match})"  # as the per-position plot names them
                out.append(TemperaturePoint(label, t, p.model.per_position(1)[0]))
    return out
