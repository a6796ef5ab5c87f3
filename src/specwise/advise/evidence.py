"""Which acceptance each (candidate, workload class) is simulated with, and where it came from.

Precedence: measured on a real server (``--bench``) > profiled offline on real weights (``--profile`` or the
candidate's ``profile``) > given in the scenario (``acceptance`` / ``per_position``) > an ASSUMED prior.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specwise.acceptance.model import AcceptanceModel
from specwise.advise.inputs import AdviseInputs, Candidate
from specwise.advise.priors import prior
from specwise.contracts.bench import BenchDoc, MeasuredAcceptance
from specwise.contracts.document import DocumentError
from specwise.contracts.profile import ProfileDoc
from specwise.errors import SpecwiseError

KINDS = ("measured", "profiled", "given", "assumed")


@dataclass(frozen=True)
class Evidence:
    workload: str
    kind: str  # one of KINDS
    source: str
    model: AcceptanceModel


def names_match(candidate_draft: str | None, doc_draft: str | None) -> bool:
    """The same draft checkpoint, by the last part of its name or path (case, '_' vs '-' ignored)."""
    if not candidate_draft or not doc_draft:
        return False
    a = Path(candidate_draft.rstrip("/")).name.lower().replace("_", "-")
    b = Path(doc_draft.rstrip("/")).name.lower().replace("_", "-")
    return a == b or a in b or b in a


def profile_for(candidate: Candidate, profiles: Sequence[ProfileDoc]) -> ProfileDoc | None:
    """The profile measuring this candidate: same (profile) method; for model drafts the same draft (by name), or
    the only profile given when it is the only one."""
    method = candidate.method.profile_as
    same = [p for p in profiles if p.method == method]
    if method == "draft_model":
        same = [p for p in same if names_match(candidate.speculation.draft, p.draft)] or (
            same if len(same) == 1 and len(profiles) == 1 else []
        )
    return same[0] if same else None


def bench_for(candidate: Candidate, benches: Sequence[BenchDoc]) -> MeasuredAcceptance | None:
    """Measured per-position acceptance of a launched config with the candidate's method (pooled over levels)."""
    for doc in benches:
        measured = doc.measured_acceptance(candidate.method.name, candidate.speculation.draft, names_match)
        if measured is not None:
            return measured
    return None


def resolve_evidence(
    inputs: AdviseInputs, candidate: Candidate, profiles: Sequence[ProfileDoc], benches: Sequence[BenchDoc]
) -> list[Evidence]:
    out = []
    measured = bench_for(candidate, benches)
    prof = profile_for(candidate, profiles)
    given = candidate.given
    if prof is None and given is not None and given.profile is not None:
        prof = given.profile
    for w in inputs.workloads:
        if measured is not None:
            out.append(Evidence(w.name, "measured", measured.source, measured.model))
        elif prof is not None:
            try:
                picked = prof.pick(w.name, w.task, w.temperature, candidate.drafting)
            except DocumentError as exc:
                raise SpecwiseError(f"[[candidate]] {candidate.label!r}: {exc}") from None
            out.append(Evidence(w.name, "profiled", picked.source, picked.model))
        elif given is not None and given.model is not None:
            out.append(Evidence(w.name, "given", "given in the scenario", given.model))
        else:
            p = prior(candidate.method, w.task, w.temperature, candidate.drafting)
            out.append(Evidence(w.name, "assumed", p.source, p.model))
    return out
