"""TOML tables -> validated specs (:mod:`specwise.scenario.model`), every error one line naming file and field.

No catalog lookups here: models and GPUs stay names until ``scenario/build.py`` resolves them. The files a
scenario names (a profile, an arrival trace) are read here, bounded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specwise.acceptance.lookup import MATCH_RATE_HINT, assumed_match_rate
from specwise.acceptance.model import AcceptanceModel
from specwise.contracts.calibration import CalibrationDoc
from specwise.contracts.document import DocumentError
from specwise.contracts.profile import ProfileDoc
from specwise.errors import SpecError, SpecwiseError, as_written
from specwise.fileio import read_text_bounded
from specwise.memory.vllm_rules import batched_tokens_refusal
from specwise.methods import LOOKUP_METHODS, MAX_K, METHOD_NAMES, Method, get_method
from specwise.perfmodel.factory import PREDICTORS, PredictorChoice
from specwise.perfmodel.profiles import published_fit
from specwise.scenario.fields import MISSING, Section
from specwise.scenario.model import (
    DECISION_METRICS,
    DEFAULT_QPS,
    DRAFTING_MODES,
    TASKS,
    DeploymentSpec,
    ScenarioSpec,
    SpeculationSpec,
    SweepSpec,
    WorkloadSpec,
)
from specwise.scenario.names import checked_name
from specwise.sim.scheduler import MAX_NUM_BATCHED_TOKENS_LIMIT, MAX_NUM_SEQS_LIMIT
from specwise.sim.workload import WorkloadClass
from specwise.specs.model import same_model
from specwise.traffic import Arrivals, LengthDist
from specwise.units import KV_CACHE_DTYPES

MAX_NUM_REQUESTS = 10_000_000  # per (QPS, k) cell: ~100 MB of request arrays; more is a typo
MAX_TRACE_BYTES = 256 * 2**20
DEPLOYMENT_KEYS = frozenset(
    {
        "target",
        "gpu",
        "tp",
        "max_model_len",
        "gpu_memory_utilization",
        "max_num_seqs",
        "max_num_batched_tokens",
        "quantization",
        "kv_cache_dtype",
        "engine",
        "engine_version",
        "predictor",
        "calibration",
    }
)
SPECULATION_KEYS = frozenset(
    {"method", "draft", "draft_tp", "draft_quantization", "k", "k_schedule", "drafting", "prompt_lookup_min"}
    | {"prompt_lookup_max"}
)
ACCEPTANCE_KEYS = ("acceptance", "per_position", "profile")
# With one of them, for a lookup (n-gram, suffix): the share of decode steps with a match. vLLM counts a lookup's
# drafts only on a match, so its per-position rates are per match and say nothing of how often one is found.
MATCH_RATE = "match_rate"
ACCEPTANCE_FIELDS = frozenset({*ACCEPTANCE_KEYS, MATCH_RATE})
SWEEP_KEYS = frozenset(
    {"qps", "num_requests", "seed", "arrivals", "burstiness_cv", "warmup_fraction", "trace_file", "decision_metric"}
)
WORKLOAD_KEYS = frozenset(
    {"name", "share", "temperature", "prompt_tokens", "output_tokens", "slo_ttft_s", "slo_tpot_s", "drafting"}
)


@dataclass(frozen=True)
class AcceptanceSource:
    """Acceptance as a table gives it: a model (``acceptance`` / ``per_position``) or a profile document, which
    resolves per workload class and temperature (:meth:`ProfileDoc.pick`)."""

    model: AcceptanceModel | None = None
    profile: ProfileDoc | None = None
    drafting: str = "greedy"
    where: str = ""
    match_rate: float | None = None  # a lookup's share of steps with a match, when given
    positions: int | None = None  # per_position's length (None: i.i.d. alpha, or a profile: its own k)

    def positions_for(self, w: WorkloadSpec) -> int | None:
        """Draft positions the acceptance was given or measured for (None: one alpha for every position)."""
        if self.profile is None:
            return self.positions
        try:
            return len(self.profile.pick(w.name, w.task, w.temperature, self.drafting).result.per_position_acceptance)
        except DocumentError as exc:
            raise SpecwiseError(f"{self.where}.profile: {exc}") from None

    def for_workload(self, w: WorkloadSpec) -> AcceptanceModel:
        if self.model is not None:
            return self.model
        assert self.profile is not None
        try:
            return self.profile.pick(w.name, w.task, w.temperature, self.drafting).model
        except DocumentError as exc:
            raise SpecwiseError(f"{self.where}.profile: {exc}") from None

    def match_rate_for(self, w: WorkloadSpec) -> float | None:
        """The lookup match rate: given, else the profile's (which records the steps it walked), else None."""
        if self.match_rate is not None or self.profile is None:
            return self.match_rate
        try:
            return self.profile.pick(w.name, w.task, w.temperature, self.drafting).result.match_rate
        except DocumentError as exc:
            raise SpecwiseError(f"{self.where}.profile: {exc}") from None


def parse_predictor(s: Section, base_dir: Path | None, engine: str, version: str | None) -> PredictorChoice:
    """``predictor`` (published-fit, roofline, calibrated) and ``calibration`` (a calibration file: implies
    calibrated)."""
    kind = s.choice("predictor", PREDICTORS, "calibrated" if "calibration" in s.data else "published-fit")
    if kind == "calibrated" and "calibration" not in s.data:
        raise s.fail(
            "predictor", "calibrated needs calibration = FILE (from specwise bench --calibrate or specwise calibrate)"
        )
    if "calibration" not in s.data:
        return PredictorChoice(kind, engine=engine, engine_version=version)
    if kind != "calibrated":  # as --predictor roofline --calibration X is refused (cli.common.predictor_choice)
        raise s.fail(
            "predictor",
            f'{kind} does not use calibration = {s.string("calibration")!r}: set predictor = "calibrated" (or '
            "leave predictor out) to simulate with the calibration, or remove calibration",
        )
    path = resolve_path(s.string("calibration"), base_dir)
    try:
        cal = CalibrationDoc.read(path)
    except DocumentError as exc:
        raise s.fail("calibration", str(exc)) from None
    return PredictorChoice("calibrated", cal, path, engine, version)


def _gpu_name(text: str, base_dir: Path | None) -> str:
    """A catalog GPU as written; a GPU file (``my-gpu.json``) relative to the scenario's directory, as its other
    files are."""
    from specwise.contracts.gpu_file import looks_like_gpu_file

    if not looks_like_gpu_file(text):
        return text
    return str(resolve_path(str(Path(text).expanduser()), base_dir))


def parse_deployment(s: Section, base_dir: Path | None = None) -> DeploymentSpec:
    s.check_keys(DEPLOYMENT_KEYS)
    engine = s.choice("engine", ("vllm", "sglang"), "vllm")
    version = s.string("engine_version", None)
    seqs = s.positive_int("max_num_seqs", 256, high=MAX_NUM_SEQS_LIMIT)
    batched = s.positive_int("max_num_batched_tokens", 8192, high=MAX_NUM_BATCHED_TOKENS_LIMIT)
    if (refused := batched_tokens_refusal(seqs, batched)) is not None:
        raise s.fail("max_num_batched_tokens", refused)
    return DeploymentSpec(
        target=s.string("target"),
        gpu=_gpu_name(s.string("gpu"), base_dir),
        tp=s.positive_int("tp", 1, high=1024),
        max_model_len=s.positive_int("max_model_len", None, high=2**31),
        gpu_memory_utilization=s.number("gpu_memory_utilization", 0.9, low=0.0, high=1.0, strict_low=True),
        max_num_seqs=seqs,
        max_num_batched_tokens=batched,
        quantization=s.string("quantization", "auto"),
        kv_cache_dtype=s.choice("kv_cache_dtype", KV_CACHE_DTYPES, "auto"),
        engine=engine,
        engine_version=version,
        predictor=parse_predictor(s, base_dir, engine, version),
    )


def parse_speculation(
    s: Section, default_k: tuple[int, ...], extra_keys: frozenset[str] = frozenset()
) -> SpeculationSpec:
    """``[speculation]`` or a ``[[candidate]]``: the method row, its draft and the k values (0 always added)."""
    s.check_keys(SPECULATION_KEYS | ACCEPTANCE_FIELDS | extra_keys)
    method = get_method(s.choice("method", METHOD_NAMES))
    draft = s.string("draft", None)
    if draft is None and method.needs_draft_checkpoint:
        raise s.fail("draft", f"method {method.name} needs a draft model name or path")
    if draft is not None and not method.needs_draft_checkpoint:
        raise s.fail("draft", f"method {method.name} takes no draft model")
    raw_k = s.get("k", list(default_k))
    if (
        not isinstance(raw_k, list)
        or not raw_k
        or not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= MAX_K for k in raw_k)
    ):
        raise s.fail("k", f"must be a non-empty list of integers in 0..{MAX_K}, got {as_written(raw_k)}")
    if method.name != "none" and not any(raw_k):
        raise s.fail("k", f"k needs a value >= 1 (k = 0, no speculation, is the baseline), got {as_written(raw_k)}")
    if method.is_lookup:
        for key in ("draft_tp", "draft_quantization"):
            if key in s.data:
                raise s.fail(key, f"method {method.name} has no draft model to place or quantize")
    lookup = _lookup_bounds(s) if "prompt_lookup_min" in method.settings else None
    if lookup is None and any(key in s.data for key in ("prompt_lookup_min", "prompt_lookup_max")):
        raise s.fail("prompt_lookup_min", f"method {method.name} has no prompt lookup settings (ngram has)")
    return SpeculationSpec(
        method=method,
        k_values=tuple(sorted(set(raw_k) | {0})),
        draft=draft,
        draft_tp=s.positive_int("draft_tp", None, high=1024),
        draft_quantization=s.string("draft_quantization", "auto"),
        drafting=s.choice("drafting", DRAFTING_MODES, "greedy"),
        k_schedule=_k_schedule(s),
        prompt_lookup=lookup,
    )


def _lookup_bounds(s: Section) -> tuple[int, int]:
    """vLLM's defaults: both 5 when neither is given; one given sets the other."""
    lo, hi = s.data.get("prompt_lookup_min"), s.data.get("prompt_lookup_max")
    if lo is None and hi is None:
        return 5, 5
    lo = lo if lo is not None else hi
    hi = hi if hi is not None else lo
    if not (isinstance(lo, int) and isinstance(hi, int)) or isinstance(lo, bool) or isinstance(hi, bool):
        raise s.fail("prompt_lookup_min", f"need integers, got {as_written(lo)}, {as_written(hi)}")
    if not 1 <= lo <= hi <= 64:
        raise s.fail("prompt_lookup_min", f"need 1 <= prompt_lookup_min <= prompt_lookup_max <= 64, got {lo}, {hi}")
    return lo, hi


def _k_schedule(s: Section) -> tuple[tuple[int, int, int], ...]:
    raw = s.get("k_schedule", [])
    if not isinstance(raw, list) or not all(
        isinstance(e, list) and len(e) == 3 and all(isinstance(x, int) and not isinstance(x, bool) for x in e)
        for e in raw
    ):
        raise s.fail("k_schedule", "must be a list of [first_batch, last_batch, k] integer triples")
    out = []
    prev_end = 0
    for start, end, k in raw:
        if start < 1 or end < start or k < 0 or start <= prev_end or k > MAX_K:
            raise s.fail("k_schedule", f"bad or overlapping entry [{start}, {end}, {k}]")
        prev_end = end
        out.append((start, end, k))
    if out and out[0][0] != 1:  # vLLM refuses it too ("The first batch-size range must start at 1")
        raise s.fail("k_schedule", f"the first entry must start at batch 1, as vLLM requires, got {list(out[0])}")
    return tuple(out)


def k_schedule_gaps(schedule: Sequence[tuple[int, int, int]], max_num_seqs: int) -> tuple[tuple[int, int, int], ...]:
    """The batch ranges within 1..``max_num_seqs`` that no ``[first_batch, last_batch, k]`` entry of ``schedule``
    covers (sorted, non-overlapping, from batch 1: :func:`_k_schedule`), each with the k vLLM carries into it from the
    entry before (:meth:`specwise.sim.engine.SpecConfig.k_for_batch`); none without a schedule."""
    gaps: list[tuple[int, int, int]] = []
    first, k = 1, 0
    for start, end, entry_k in schedule:
        if start > first and first <= max_num_seqs:
            gaps.append((first, min(start - 1, max_num_seqs), k))
        first, k = max(first, end + 1), entry_k
    if schedule and first <= max_num_seqs:
        gaps.append((first, max_num_seqs, k))
    return tuple(gaps)


def k_schedule_gap_note(schedule: Sequence[tuple[int, int, int]], max_num_seqs: int) -> str | None:
    """Batch sizes the schedule does not cover run with the k of the entry before them, as vLLM runs them (and the
    simulator: :meth:`specwise.sim.engine.SpecConfig.k_for_batch`): said, since a schedule that ends early does not
    switch speculation off above it -- an entry with k = 0 does."""
    gaps = k_schedule_gaps(schedule, max_num_seqs)
    if not gaps:
        return None
    ranges = ", ".join(
        (f"{a}" if a == b else f"{a}-{b}") + (" (max_num_seqs)" if b == max_num_seqs else "") + f" at k = {k}"
        for a, b, k in gaps
    )
    return (
        f"[speculation].k_schedule covers no batch {ranges}: vLLM carries the previous entry's k over a gap and past "
        "the last entry; an entry with k = 0 switches speculation off"
    )


def parse_acceptance(
    s: Section, base_dir: Path | None, drafting: str, method: Method | None = None
) -> AcceptanceSource | None:
    """One of ``acceptance`` (i.i.d. alpha), ``per_position`` (vLLM's rates) or ``profile`` (a profile JSON); with
    it, for a lookup ``method``, optionally ``match_rate``."""
    given = [k for k in ACCEPTANCE_KEYS if k in s.data]
    if len(given) > 1:
        raise s.fail(given[1], f"give only one of acceptance, per_position, profile (got {', '.join(given)})")
    match_rate = _match_rate(s, method, bool(given))
    try:
        if "acceptance" in s.data:
            model = AcceptanceModel.iid(s.number("acceptance", low=0.0, high=1.0))
            return AcceptanceSource(model, where=s.where, match_rate=match_rate)
        if "per_position" in s.data:
            rates = s.number_list("per_position")
            model = AcceptanceModel.from_per_position(rates)
            return AcceptanceSource(model, where=s.where, match_rate=match_rate, positions=len(rates))
    except SpecError as exc:
        raise s.error(str(exc)) from None
    if "profile" not in s.data:
        return None
    path = resolve_path(s.string("profile"), base_dir)
    try:
        profile = ProfileDoc.read(path)
    except DocumentError as exc:
        raise s.fail("profile", str(exc)) from None
    return AcceptanceSource(profile=profile, drafting=drafting, where=f"{s.file}: {s.where}", match_rate=match_rate)


def sets_an_slo(classes: Sequence[WorkloadClass]) -> bool:
    """Does any class set a latency objective (without one, no request meets an SLO and goodput is 0)?"""
    return any(c.slo_ttft_s or c.slo_tpot_s for c in classes)


def profile_pair_note(source: AcceptanceSource | None, target: str, method: Method, draft: str | None) -> str | None:
    """A profile measures one pair: one of another method is refused (a lookup's rates are not a draft's), one of
    other models is used with a note naming both pairs (a local directory may be the same checkpoint)."""
    if source is None or source.profile is None:
        return None
    doc = source.profile
    measured = doc.draft or doc.method
    if doc.method != method.name and (doc.method in LOOKUP_METHODS or method.is_lookup):
        raise SpecwiseError(f"{source.where}.profile: it measured {doc.method}, not {method.name}")
    same_target = doc.target is None or same_model(doc.target, target)
    same_draft = method.is_lookup or (draft is not None and doc.draft is not None and same_model(doc.draft, draft))
    if same_target and same_draft:
        return None
    ours = f"{target} with {draft or method.name}"
    return (
        f"{source.where}.profile: {doc.name} measured {doc.target} with {measured}, not {ours}; its acceptance "
        "is used as given"
    )


def _match_rate(s: Section, method: Method | None, with_acceptance: bool) -> float | None:
    if MATCH_RATE not in s.data:
        return None
    if method is not None and not method.is_lookup:
        raise s.fail(MATCH_RATE, f"only a lookup (ngram, suffix) drafts on a match; {method.name} drafts every step")
    if not with_acceptance:
        raise s.fail(MATCH_RATE, "goes with the per-match acceptance: give acceptance, per_position or profile too")
    return float(s.number(MATCH_RATE, low=0.0, strict_low=True, high=1.0))


def resolve_path(text: str, base_dir: Path | None) -> Path:
    path = Path(text)
    return base_dir / path if base_dir is not None and not path.is_absolute() else path


MAX_SHARE = 1e12  # a relative weight; sums and products of larger ones overflow a float (1e308 crashed the sweep)


def parse_workload(s: Section, index: int, *, with_task: bool) -> WorkloadSpec:
    """One ``[[workload]]`` (its acceptance keys are read by the caller: simulate and advise differ there)."""
    name = checked_name(s.string("name", f"class{index}"), f"{s.file}: [[workload]] #{index}.name")
    s.where = f"[[workload]] #{index} {name!r}"
    try:
        return WorkloadSpec(
            name=name,
            share=s.number("share", 1.0, low=0.0, strict_low=True, high=MAX_SHARE),
            prompt_tokens=_length(s, "prompt_tokens"),
            output_tokens=_length(s, "output_tokens"),
            temperature=s.number("temperature", 0.0, low=0.0, high=100.0),
            slo_ttft_s=s.number("slo_ttft_s", None, low=0.0, strict_low=True),
            slo_tpot_s=s.number("slo_tpot_s", None, low=0.0, strict_low=True),
            task=s.choice("task", TASKS, "other") if with_task else "other",
        )
    except SpecError as exc:
        raise s.error(str(exc)) from None


def _length(w: Section, key: str) -> LengthDist:
    raw = w.get(key)
    if isinstance(raw, int) and not isinstance(raw, bool):
        if not 1 <= raw <= 10_000_000:
            raise w.fail(key, f"must be >= 1, got {raw}" if raw < 1 else f"must be <= 10,000,000, got {raw:,}")
        return LengthDist("fixed", float(raw), 0.0, 1, max(1, raw))
    d = Section(raw, f"{w.where}.{key}", w.file)
    d.check_keys({"dist", "mean", "cv", "min", "max"})
    kind = d.string("dist", "fixed")
    try:
        return LengthDist(
            kind=kind,
            mean=d.number("mean", 0.0 if kind == "uniform" else MISSING, high=1e7),
            cv=d.number("cv", 0.0, low=0.0, high=100.0),
            min=d.positive_int("min", 1, high=10_000_000),
            max=d.positive_int("max", 1_000_000, high=10_000_000),
        )
    except SpecError as exc:
        raise d.error(str(exc)) from None


def parse_sweep(s: Section, base_dir: Path | None, k_values: tuple[int, ...]) -> tuple[SweepSpec, str]:
    """``[sweep]`` -> the grid and the decision metric."""
    s.check_keys(SWEEP_KEYS)
    metric = s.choice("decision_metric", DECISION_METRICS, "e2e")
    qps = s.number_list("qps", list(DEFAULT_QPS))
    if any(q <= 0 for q in qps):
        raise s.fail("qps", f"rates must be > 0, got {qps}")
    kind = s.string("arrivals", "poisson")
    if kind not in ("poisson", "gamma", "constant", "trace"):
        raise s.fail("arrivals", f"expected poisson, gamma, constant or trace, got {as_written(kind)}")
    cv = s.number("burstiness_cv", 1.0, low=0.0, strict_low=True, high=100.0)
    for key, reads_it in (("trace_file", "trace"), ("burstiness_cv", "gamma")):  # a setting nothing would read
        if key in s.data and kind != reads_it:
            raise s.fail(
                key, f'read only with arrivals = "{reads_it}" (arrivals is "{kind}"): set that, or remove {key}'
            )
    trace: tuple[float, ...] = _read_trace(s, base_dir) if kind == "trace" else ()
    sweep = SweepSpec(
        qps=tuple(sorted(set(qps))),  # a load given twice is simulated once (duplicate_loads_note says so)
        k_values=k_values,
        num_requests=s.positive_int("num_requests", 1000, high=MAX_NUM_REQUESTS),
        seed=s.integer("seed", 0, low=0, high=2**63 - 1),
        arrivals=Arrivals(kind, qps[0], cv, trace),
        warmup_fraction=s.number("warmup_fraction", 0.1, low=0.0, high=0.9),
    )
    return sweep, metric


def duplicate_loads_note(s: Section) -> str | None:
    """``[sweep].qps`` naming a load more than once (``[1, 1, 1.0]``): each load is simulated once and has one row,
    so the duplicates are said, not merged silently (a warning, not a refusal)."""
    qps = s.number_list("qps", [])
    twice = sorted({q for q in qps if qps.count(q) > 1})
    if not twice:
        return None
    said = ", ".join(f"{q:g} given {qps.count(q)} times" for q in twice)
    return f"{s.where}.qps: {said}; each load is simulated once (one row)"


def _read_trace(s: Section, base_dir: Path | None) -> tuple[float, ...]:
    """Arrival times in seconds, one per line (a CSV's first column; '#' comments and a header skipped)."""
    path = resolve_path(s.string("trace_file"), base_dir)
    try:
        lines = read_text_bounded(path, MAX_TRACE_BYTES, "trace").splitlines()
    except SpecwiseError as exc:
        raise s.fail("trace_file", str(exc)) from None
    times: list[float] = []
    for number, line in enumerate(lines, start=1):
        field = line.split("#", 1)[0].split(",", 1)[0].strip()
        if not field:
            continue
        try:
            time_s = float(field)
        except ValueError:
            if times:
                raise s.fail("trace_file", f"{path}:{number}: not a time in seconds: {field!r}") from None
            continue
        if not math.isfinite(time_s):  # float() reads 'nan' and 'inf': either would hang or void the replay
            raise s.fail("trace_file", f"{path}:{number}: not a finite time: {field!r}")
        if time_s < (times[-1] if times else 0.0):
            after = f"comes after {times[-1]:g}" if times else "is negative"
            raise s.fail("trace_file", f"{path}:{number}: {field} {after}; times must be >= 0 and non-decreasing")
        times.append(time_s)
    if len(times) < 2:
        raise s.fail("trace_file", f"{path}: needs at least two arrival times")
    if len(set(times)) == 1:
        raise s.fail(
            "trace_file",
            f"{path}: all {len(times)} times are {times[0]:g}; the trace is replayed rescaled to each [sweep].qps, "
            "which needs two or more distinct times",
        )
    try:
        Arrivals("trace", 1.0, 1.0, tuple(times)).with_rate(1.0)
    except SpecError as exc:
        raise s.fail("trace_file", f"{path}: {exc}") from None
    return tuple(times)


def refuse_duplicate_workloads(names: Sequence[str], file: str) -> None:
    """Two ``[[workload]]`` tables of one name: results, rule checks and acceptance are reported per name, so the
    two could not be told apart (simulate and advise scenarios alike)."""
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SpecwiseError(f"{file}: [[workload]]: name {twice[0]!r} is used twice; results are reported per name")


def parse_scenario_spec(
    data: Mapping[str, Any], *, file: str = "scenario", base_dir: Path | None = None, reader: str = "simulate"
) -> ScenarioSpec:
    """A simulate scenario: ``[deployment]``, ``[speculation]``, ``[sweep]``, ``[[workload]]``... ``reader``: the
    command that reads it (``monitor --scenario``), named when an advise scenario is given instead."""
    root = Section(data, "scenario", file)
    unknown = set(data) - {"name", "deployment", "speculation", "sweep", "workload"}
    if unknown:
        hint = (
            f": this looks like a `specwise advise` scenario ([[candidate]]/[advise]); {reader} takes one "
            "[speculation] table -- see examples/*.toml (or run specwise advise on this file)"
            if unknown & {"candidate", "advise"}
            else ""
        )
        raise SpecwiseError(f"{file}: unknown top-level key(s): {', '.join(sorted(unknown))}{hint}")
    deployment = parse_deployment(root.sub("deployment", "[deployment]"), base_dir)
    spec_section = root.sub("speculation", "[speculation]")
    speculation = parse_speculation(spec_section, tuple(range(9)))
    default_acceptance = parse_acceptance(spec_section, base_dir, speculation.drafting, speculation.method)
    pair = (deployment.target, speculation.method, speculation.draft, max(speculation.k_values))
    built = [
        _workload_class(Section(raw, f"[[workload]] #{i}", file), i, base_dir, default_acceptance, pair)
        for i, raw in enumerate(_workload_tables(root, file), start=1)
    ]
    classes = tuple(c for c, _ in built)
    refuse_duplicate_workloads([c.name for c in classes], file)
    gaps = k_schedule_gap_note(speculation.k_schedule, deployment.max_num_seqs)
    notes = tuple(
        note for note in [*(n for _, n in built), profile_pair_note(default_acceptance, *pair[:3]), gaps] if note
    )
    sweep_section = root.sub("sweep", "[sweep]") if "sweep" in data else Section({}, "[sweep]", file)
    sweep, metric = parse_sweep(sweep_section, base_dir, speculation.k_values)
    notes += tuple(note for note in [duplicate_loads_note(sweep_section)] if note)
    if metric == "goodput" and not sets_an_slo(classes):
        raise SpecwiseError(
            f"{file}: [sweep].decision_metric: goodput needs slo_ttft_s or slo_tpot_s on at least one [[workload]]"
        )
    name = scenario_name(root)
    return ScenarioSpec(name, file, deployment, speculation, classes, sweep, metric, notes=notes)


def scenario_name(root: Section) -> str:
    """The top-level ``name`` (default: the file's stem); a given one must be a non-empty string (a table or a
    number is refused, not printed as its Python repr)."""
    if "name" not in root.data:
        return Path(root.file).stem
    name = root.data["name"]
    if not isinstance(name, str) or not name.strip():
        raise SpecwiseError(f"{root.file}: name: must be a non-empty string, got {as_written(name)}")
    return checked_name(name, f"{root.file}: name")


def past_positions_note(
    workload: str, positions: int | None, k: int, how: str = "is given", hint: str = "measure up to the largest k"
) -> str | None:
    """That a workload's acceptance, given (``how``: or measured, profiled) for ``positions`` draft positions, is
    run at ``k`` past them, where :class:`~specwise.acceptance.model.AcceptanceModel` reuses the last position's
    conditional rate; None when it is not (``positions`` None: one rate for every position). One wording for
    simulate (k: the sweep's largest) and advise (k: the one a candidate reports)."""
    if positions is None or positions >= k:
        return None
    past = f"{positions + 1}-{k}" if positions + 1 < k else str(k)
    return (
        f"[[workload]] {workload!r}: acceptance {how} for {positions} draft position(s); position(s) {past} "
        f"reuse the last one's conditional rate (an assumption: {hint})"
    )


def _workload_tables(root: Section, file: str) -> list[Any]:
    workloads = root.array_of_tables("workload")
    if not isinstance(workloads, list) or not workloads:
        raise SpecwiseError(f"{file}: at least one [[workload]] table is required")
    return workloads


def _workload_class(
    s: Section,
    index: int,
    base_dir: Path | None,
    default: AcceptanceSource | None,
    pair: tuple[str, Method, str | None, int],
) -> tuple[WorkloadClass, str | None]:
    """The class and its notes: for a lookup whose match rate was not given, which was assumed; that its own profile
    measured another pair; that k runs past the positions its acceptance was given for."""
    method, k_max = pair[1], pair[3]
    s.check_keys(WORKLOAD_KEYS | ACCEPTANCE_FIELDS | {"task"})
    spec = parse_workload(s, index, with_task=True)
    # A class's own acceptance wins; else [speculation]'s (a profile resolves per class and temperature).
    drafting = s.choice("drafting", DRAFTING_MODES, default.drafting if default else "greedy")
    own = parse_acceptance(s, base_dir, drafting, method)
    other_pair = profile_pair_note(own, *pair[:3])
    source = own or default
    if source is None:
        raise s.fail(
            "acceptance", "no acceptance given: set acceptance / per_position / profile here or in [speculation]"
        )
    rate, note = 1.0, None
    if method.is_lookup:
        rate = source.match_rate_for(spec) or 0.0
        if not rate:
            rate, why = assumed_match_rate(spec.task, method.cross_request_history, published_fit().first_given_match)
            note = f"[[workload]] {spec.name!r}: {method.name} acceptance taken per match (vLLM's count); {why}"
            note += f" -- {MATCH_RATE_HINT}, or the workload's task"
    past_given = past_positions_note(spec.name, source.positions_for(spec), k_max)
    notes = "; ".join(n for n in (note, other_pair, past_given) if n) or None
    try:
        return spec.with_acceptance(source.for_workload(spec), rate), notes
    except SpecError as exc:
        raise s.error(str(exc)) from None
