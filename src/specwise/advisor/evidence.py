"""Which acceptance each (candidate, workload class) is simulated with, and where it came from.

Precedence: measured on a real server (``--bench``) > profiled offline on real weights (``--profile`` or the
candidate's ``profile``) > given in the scenario (``acceptance`` / ``per_position``) > an ASSUMED prior.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from specwise.acceptance.lookup import MATCH_RATE_HINT, MEASURED_WINDOW, assumed_match_rate
from specwise.acceptance.model import AcceptanceModel
from specwise.advisor.inputs import AdviseInputs, Candidate
from specwise.advisor.priors import prior
from specwise.contracts.bench import BenchDoc, MeasuredAcceptance
from specwise.contracts.document import DocumentError
from specwise.contracts.profile import ProfileDoc
from specwise.errors import SpecwiseError
from specwise.perfmodel.profiles import published_fit
from specwise.specs.model import same_model, same_weights

KINDS = ("measured", "profiled", "given", "assumed")
# how far a profile's or a bench run's temperature may sit from a workload's before its evidence says so (acceptance
# is min(1, p/q) of the two models' sampled distributions, Leviathan et al. 2023, which temperature reshapes); a
# tolerance of this project's, not a published one
TEMPERATURE_TOLERANCE = 0.25


@dataclass(frozen=True)
class Evidence:
    workload: str
    kind: str  # one of KINDS
    source: str
    model: AcceptanceModel
    proposal_rate: float = 1.0  # the share of decode steps with a proposal (a lookup drafts only on a match)
    # a lookup's match rate is a prior's: with the rest (kind "assumed"), or alone (its rates measured or given)
    match_rate_assumed: bool = False
    # the draft positions the rates were measured, profiled or given for (None: one rate for every position, or a
    # prior's curve): past them the model reuses the last position's conditional rate (an extrapolation)
    positions: int | None = None


def names_match(candidate_draft: str | None, doc_draft: str | None) -> bool:
    """Both named and the same checkpoint (:func:`~specwise.specs.model.same_model`)."""
    return bool(candidate_draft) and bool(doc_draft) and same_model(str(candidate_draft), str(doc_draft))


def drafts_match(candidate_draft: str | None, doc_draft: str | None) -> bool:
    """Both named and the same draft weights (:func:`~specwise.specs.model.same_weights`: a quantised copy, not
    another fine-tune; a draft's acceptance is its weights')."""
    return bool(candidate_draft) and bool(doc_draft) and same_weights(str(candidate_draft), str(doc_draft))


def profile_for(
    candidate: Candidate, profiles: Sequence[ProfileDoc], target: str | None = None, notes: list[str] | None = None
) -> ProfileDoc | None:
    """The profile measuring this candidate: same (profile) method; for model drafts the same draft weights
    (:func:`drafts_match`: another fine-tune's, or the target's own in a self-profile, are another draft's
    acceptance); the same target and, for n-gram, the same lookup bounds when ``target`` is given. Profiles refused
    for a mismatch are said in ``notes``."""
    method = candidate.method.profile_as
    same = [p for p in profiles if p.method == method]
    if method == "draft_model":
        draft = candidate.speculation.draft
        other = [p for p in same if p.draft and not drafts_match(draft, p.draft)]
        same = [p for p in same if p not in other]  # a profile that names no draft is the only one's to take
        if notes is not None and target is not None:
            notes += [f"profile {p.name} not used for {candidate.label}: it measured draft {p.draft}" for p in other]
    if target is None:
        return same[0] if same else None
    for p in same:
        why = _mismatch(candidate, target, p.target, p.prompt_lookup)
        if why is None:
            return p
        if notes is not None:
            notes.append(f"profile {p.name} not used for {candidate.label}: {why}")
    return None


_OTHER_WINDOW = "its n-gram lookup was"  # how _mismatch says the window differs; _unused_hint looks for it


def _mismatch(
    candidate: Candidate, target: str, measured_target: str | None, lookup: tuple[int, int] | None
) -> str | None:
    """Why measured acceptance does not describe this candidate (None: it does)."""
    if measured_target and not names_match(target, measured_target):
        return f"it measured target {measured_target}, the deployment serves {target}"
    wanted = candidate.speculation.prompt_lookup
    if wanted is not None and lookup is not None and tuple(lookup) != tuple(wanted):
        return f"{_OTHER_WINDOW} {lookup[0]}-{lookup[1]}, the candidate's is {wanted[0]}-{wanted[1]}"
    return None


def _lookup_bounds(spec: Mapping[str, object], where: str) -> tuple[int, int] | None:
    """The (min, max) n-gram lookup of a launched speculative config; one bound stands for both when alone."""
    bounds = []
    for key in ("prompt_lookup_min", "prompt_lookup_max"):
        value = spec.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1024):
            raise SpecwiseError(f"{where}: speculative_config.{key} = {value!r} is not an n-gram size in 1..1024")
        bounds.append(value)
    lo, hi = bounds
    if lo is None and hi is None:
        return None
    return (lo if lo is not None else hi or 0, hi if hi is not None else lo or 0)


def bench_for(
    candidate: Candidate, benches: Sequence[BenchDoc], target: str | None = None, notes: list[str] | None = None
) -> MeasuredAcceptance | None:
    """Measured per-position acceptance of a launched config with the candidate's method (pooled over levels), from
    a run of the same target (and n-gram lookup bounds); refused runs are said in ``notes``."""
    for doc in benches:
        measured = doc.measured_acceptance(candidate.method.name, candidate.speculation.draft, drafts_match)
        if measured is None:
            continue
        cfg = next(c for c in doc.acceptance_configs if c.name == measured.config)
        spec = cfg.speculative_config or {}
        lookup = _lookup_bounds(spec, f"{doc.name}: config {cfg.name!r}")
        why = _mismatch(candidate, target, doc.model, lookup) if target is not None else None
        if why is not None and target is not None and doc.model_root:  # served under an alias: what it loaded
            loaded = _mismatch(candidate, target, doc.model_root, lookup)
            why = loaded and f"{why} (the server loaded it from {doc.model_root})"
        if why is None:
            return measured
        if notes is not None:
            notes.append(f"bench {doc.name} config {cfg.name!r} not used for {candidate.label}: {why}")
    return None


def attribute_methods(benches: Sequence[BenchDoc], candidates: Sequence[Candidate]) -> list[BenchDoc]:
    """Runs that measured acceptance without saying which speculation the server ran (``vllm bench serve`` saved
    without ``--metadata speculative_config=...``; ``specwise bench URL``) stand for the scenario's only
    candidate, and say so in their config's name; with several candidates that is ambiguous and refused. A run in
    which nothing drafted gives no acceptance and is refused, never silently ignored."""
    out = []
    for doc in benches:
        if not any(c.pooled_acceptance() is not None for c in doc.acceptance_configs):
            raise SpecwiseError(
                f"{doc.name}: no level of this run drafted any token (a server without speculation, or its /metrics "
                "not read), so it gives no acceptance; bench a server running the candidate's speculation with "
                "its /metrics reachable (specwise bench URL --metrics-url URL/metrics)"
            )
        unknown = [c for c in doc.acceptance_configs if c.method is None and c.pooled_acceptance() is not None]
        if not unknown:
            out.append(doc)
            continue
        if len(candidates) != 1:
            raise SpecwiseError(
                f"{doc.name}: the run measured acceptance but does not say which speculation the server ran, and "
                f"the scenario has {len(candidates)} candidates; a run that says it: specwise bench --url URL "
                "--speculative-config '<the JSON given to vllm serve --speculative-config>', specwise bench --launch "
                "FILE (its launch file records each config's), or vllm bench serve --metadata "
                "speculative_config='<the JSON given to vllm serve --speculative-config>'; or advise on a scenario "
                "whose only candidate is the speculation the server ran"
            )
        out.append(_attributed(doc, candidates[0]))
    return out


def refuse_unused(
    profiles: Sequence[ProfileDoc],
    benches: Sequence[BenchDoc],
    candidates: Sequence[Candidate],
    target: str | None = None,
) -> None:
    """A ``--profile`` or ``--bench`` that measured no method of the scenario's candidates is refused in one line:
    ignoring it would leave the acceptance "assumed" while the user believes they gave it. So is one that measured
    a method only on another target (or another n-gram lookup) than ``target``, the deployment's: acceptance is a
    property of the draft-target pair, and no candidate can use it."""
    methods = sorted({c.method.name for c in candidates})
    offered = ", ".join(c.label for c in candidates)
    for p in profiles:
        if not any(p.method == c.method.profile_as for c in candidates):
            raise SpecwiseError(
                f"{p.name}: a profile of {p.method}; no candidate of this scenario uses it (candidates: {offered})"
            )
    for doc in benches:
        measured = sorted({str(c.method) for c in doc.acceptance_configs if c.pooled_acceptance() is not None})
        if not set(measured) & set(methods):
            raise SpecwiseError(
                f"{doc.name}: the run measured acceptance of {', '.join(measured)}; no candidate of this scenario "
                f"uses it (candidates: {offered})"
            )
    if target is None:
        return
    for doc in benches:
        why: list[str] = []
        if not any(bench_for(c, [doc], target, why) for c in candidates) and why:
            raise SpecwiseError(f"{doc.path or doc.name}: not used by any candidate ({why[0]}); {_unused_hint(why[0])}")
    for prof in profiles:
        why = []
        if not any(profile_for(c, [prof], target, why) for c in candidates) and why:
            raise SpecwiseError(f"{prof.path or prof.name}: not used by any candidate ({why[0]})")


_SERVED_AS = (
    "acceptance measured on another model does not carry over. A server serving this target under an alias (vllm "
    "serve --served-model-name) is matched by the checkpoint it loaded, which specwise bench records from GET "
    "/v1/models; where that is unknown (a vllm bench serve result, an older specwise bench file), serve it under "
    "the checkpoint's name too (--served-model-name ALIAS CHECKPOINT) and bench with --model CHECKPOINT"
)


_OTHER_LOOKUP = (
    "acceptance of an n-gram lookup depends on its window: give the candidate the run's prompt_lookup_min and "
    "prompt_lookup_max, or bench the candidate's"
)


def _unused_hint(why: str) -> str:
    """What to do about a run no candidate can use: another target's (an alias, perhaps: :data:`_SERVED_AS`) or
    another n-gram lookup window's (first-hour audit 2026-12-07: that one was told about aliases too)."""
    return _OTHER_LOOKUP if _OTHER_WINDOW in why else _SERVED_AS


def _attributed(doc: BenchDoc, candidate: Candidate) -> BenchDoc:
    spec: dict[str, object] = {"method": candidate.method.name}
    if candidate.speculation.draft:
        spec["model"] = candidate.speculation.draft
    configs = tuple(
        replace(c, name=f"{c.name} (speculation not recorded; taken as {candidate.label})", speculative_config=spec)
        if c.method is None and c.pooled_acceptance() is not None
        else c
        for c in doc.acceptance_configs
    )
    return replace(doc, configs=configs)


def resolve_evidence(
    inputs: AdviseInputs,
    candidate: Candidate,
    profiles: Sequence[ProfileDoc],
    benches: Sequence[BenchDoc],
    notes: list[str] | None = None,
) -> list[Evidence]:
    out = []
    target = inputs.deployment.target
    measured = bench_for(candidate, benches, target, notes)
    prof = profile_for(candidate, profiles, target, notes)
    given = candidate.given
    if prof is None and given is not None and given.profile is not None:
        prof = given.profile
    known: set[str] = set()  # workloads whose lookup match rate was measured with their rates
    for w in inputs.workloads:
        if measured is not None:
            rate = measured.match_rate if measured.match_rate is not None else 1.0
            source = measured.source + bench_temperature_gap(measured.temperatures, w.temperature)
            positions = len(measured.model.conditional)  # one per measured position (from_per_position)
            out.append(Evidence(w.name, "measured", source, measured.model, rate, positions=positions))
            if measured.match_rate is not None:
                known.add(w.name)
        elif prof is not None:
            try:
                picked = prof.pick(w.name, w.task, w.temperature, candidate.drafting)
            except DocumentError as exc:
                raise SpecwiseError(f"[[candidate]] {candidate.label!r}: {exc}") from None
            source = picked.source
            if abs(picked.result.temperature - w.temperature) > TEMPERATURE_TOLERANCE:
                source += f" -- profiled at T={picked.result.temperature:g}, the workload runs at T={w.temperature:g}"
            match = picked.result.match_rate if candidate.method.is_lookup else None
            if match is not None:
                source += f"; per match, a match in {match:.0%} of steps (profiled)"
                known.add(w.name)
            rate = match if match is not None else 1.0
            depth = len(picked.result.per_position_acceptance)  # the positions it profiled (ProfileDoc.pick's k)
            out.append(Evidence(w.name, "profiled", source, picked.model, rate, positions=depth))
        elif given is not None and given.model is not None:
            out.append(Evidence(w.name, "given", "given in the scenario", given.model, positions=given.positions))
        else:
            p = prior(candidate.method, w.task, w.temperature, candidate.drafting)
            lookup = candidate.method.is_lookup  # the prior's match rate too (proposal_rate)
            out.append(Evidence(w.name, "assumed", p.source, p.model, p.proposal_rate, match_rate_assumed=lookup))
    if candidate.method.is_lookup:  # a match rate not measured with the rates: given, else assumed
        out = [e if e.kind == "assumed" or e.workload in known else _with_match_rate(e, inputs, candidate) for e in out]
    return out


def window_note(candidate: Candidate, evidence: Sequence[Evidence]) -> str | None:
    """An n-gram candidate priced with the assumed match rate (SpecDecode-Bench's traces, at prompt_lookup
    :data:`~specwise.acceptance.lookup.MEASURED_WINDOW`) whose config runs another window -- vLLM's default 5-5
    where the candidate gives none (review s60: the config wrote 5-5 beside a price for 3-7, without a word)."""
    window = candidate.speculation.prompt_lookup
    if window is None or tuple(window) == MEASURED_WINDOW or not any(e.match_rate_assumed for e in evidence):
        return None
    lo, hi = MEASURED_WINDOW
    default = " (also vLLM's default, taken where the candidate gives none)" if tuple(window) == (5, 5) else ""
    return (
        f"the assumed n-gram match rate is SpecDecode-Bench's at prompt_lookup {lo}-{hi}; the config runs "
        f"{window[0]}-{window[1]}{default}, which matches at another rate: give the candidate prompt_lookup_min = "
        f"{lo} and prompt_lookup_max = {hi} to run the window priced, or profile / bench yours"
    )


def bench_temperature_gap(measured: Sequence[float], workload: float) -> str:
    """What a bench run's acceptance does not say of a workload at temperature ``workload`` ("" when nothing): a run
    at another temperature (any of its requests' more than :data:`TEMPERATURE_TOLERANCE` away), or a run that does
    not record its temperature when the workload samples -- ``specwise bench`` sends T=0 unless told otherwise
    (``--temperature``), and so does ``vllm bench serve`` (``vllm/benchmarks/serve.py``: "Default to greedy
    decoding"), whose result does not record it."""
    if not measured:
        if workload <= TEMPERATURE_TOLERANCE:
            return ""
        return (
            f" -- the run does not record its temperature (both benches send T=0 unless told otherwise), the "
            f"workload runs at T={workload:g}"
        )
    if all(abs(t - workload) <= TEMPERATURE_TOLERANCE for t in measured):
        return ""
    at = " and ".join(f"{t:g}" for t in measured)
    pooled = " (pooled)" if len(measured) > 1 else ""
    return f" -- measured at T={at}{pooled}, the workload runs at T={workload:g}"


def _with_match_rate(e: Evidence, inputs: AdviseInputs, candidate: Candidate) -> Evidence:
    """A lookup's measured, profiled or given rates are per match (vLLM counts its drafts only on a match): the
    share of steps with a match is the candidate's ``match_rate`` when given, else the prior's, said as assumed."""
    given = candidate.given.match_rate if candidate.given is not None else None
    if given is not None:
        return replace(e, source=f"{e.source}; per match, a match in {given:.0%} of steps (given)", proposal_rate=given)
    task = next(w.task for w in inputs.workloads if w.name == e.workload)
    method = candidate.method
    rate, why = assumed_match_rate(task, method.cross_request_history, published_fit().first_given_match)
    source = f"{e.source}; per match (vLLM's count); {why} -- {MATCH_RATE_HINT}"
    return replace(e, source=source, proposal_rate=rate, match_rate_assumed=True)
