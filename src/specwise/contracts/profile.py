"""``specwise.profile/1``: acceptance of a draft/target pair (or a lookup method) measured offline on real weights.

One result per (quantisation, temperature, drafting mode, prompt class); each holds vLLM's counters and rates for
every profiled k (acceptance rate = accepted / draft tokens, AL = 1 + accepted / drafts, per-position rate i =
accepted_per_pos[i] / drafts; ``vllm/v1/spec_decode/metrics.py``). :meth:`ProfileDoc.pick` is the one rule for
which result describes a workload -- the simulator's scenarios and advise both use it.

The document is labelled measured, so every value it holds is checked where it is read, whether or not advise uses
it, and refused in one line naming the file, the record and the field: rates in [0, 1] that do not increase with the
position, AL in [1, k + 1], counts and seconds >= 0, k >= 1, temperatures >= 0, the drafting modes, estimators and
methods the profiler has, and the ``schema`` every writer puts in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specwise.acceptance.model import AcceptanceModel
from specwise.contracts.document import DocumentError, Fields, JsonObject, Schema, is_bench_result, read_json_file
from specwise.errors import SpecError
from specwise.methods import LOOKUP_METHODS, PROFILABLE
from specwise.profiler.settings import DRAFTING_MODES, ESTIMATORS

SCHEMA = Schema("specwise.profile", 1)


def _pair(f: Fields, key: str) -> tuple[float | None, float | None]:
    """A two-number interval; an absent one is (None, None)."""
    values = f.numbers(key, allow_null=True) or (None, None)
    if len(values) != 2:
        raise f.fail(key, "expected two numbers")
    return values[0], values[1]


def _flag(f: Fields, key: str) -> bool | None:
    value = f.data.get(key)
    if value is not None and not isinstance(value, bool):
        raise f.fail(key, f"expected true or false, got {value!r}")
    return value


def _within(f: Fields, key: str, value: float | None, low: float, high: float, what: str) -> float | None:
    """``value`` (None: absent or null) when it is in [low, high]; else refused naming ``key``."""
    if value is not None and not low <= value <= high:
        raise f.fail(key, f"{value!r}: {what} must be in [{low:g}, {high:g}]")
    return value


def _rates(f: Fields, key: str) -> tuple[float | None, ...]:
    """Per-position acceptance rates (accepted at position i / drafts): fractions in [0, 1] that do not increase
    (a position is accepted only if every one before it is), or all null (nothing was drafted)."""
    rates = f.numbers(key, allow_null=True)
    if None in rates and any(r is not None for r in rates):
        raise f.fail(key, f"{list(rates)}: null only when nothing was drafted, and then at every position")
    for i, rate in enumerate(rates):
        _within(f, f"{key}[{i}]", rate, 0.0, 1.0, "a rate")
        before = rates[i - 1] if i else None
        if rate is not None and before is not None and rate > before:
            raise f.fail(
                f"{key}[{i}]",
                f"{rate!r} is above position {i - 1}'s {before!r}: a position is accepted only if every one before "
                "it is",
            )
    return rates


def _interval(f: Fields, key: str, low: float, high: float, what: str) -> tuple[float | None, float | None]:
    """A confidence interval (:func:`_pair`) whose ends lie in [low, high], the lower first."""
    lo, hi = _pair(f, key)
    _within(f, key, lo, low, high, what)
    _within(f, key, hi, low, high, what)
    if lo is not None and hi is not None and lo > hi:
        raise f.fail(key, f"[{lo!r}, {hi!r}]: the lower end is above the upper")
    return lo, hi


def _count(f: Fields, key: str, default: float | None = 0.0, what: str = "a count") -> float | None:
    """A count (a counter summed over prompts is fractional for the expected estimator) or a duration in seconds:
    not negative."""
    return f.number(key, default, low=0, what=what)


def _k(f: Fields) -> int:
    """``k``, draft tokens per step: required, at least 1."""
    return f.integer("k", required=True, low=1, what="draft tokens per step") or 0


def _temperature(f: Fields, *, required: bool) -> float:
    """``temperature``, a sampling temperature >= 0 (0 when absent and not ``required``)."""
    default = None if required else 0.0
    return f.number("temperature", default, required=required, low=0, what="a sampling temperature") or 0.0


def _whole_count(f: Fields, key: str) -> int:
    """A whole count (prompts, tokens): 0 when absent, never negative (:func:`_count` is its fractional twin)."""
    return f.integer(key, 0, low=0, what="a count") or 0


class NothingDrafted(SpecError):
    """A profile result whose method proposed nothing: no acceptance to model (not a malformed file)."""


@dataclass(frozen=True)
class ProfileK:
    """vLLM's counters and rates at one k (summed over prompts), with bootstrap CIs over prompts."""

    k: int
    acceptance_rate: float | None
    mean_acceptance_length: float | None
    ci95: tuple[float | None, float | None]
    mean_acceptance_length_ci95: tuple[float | None, float | None]
    per_position_acceptance: tuple[float | None, ...]
    num_drafts: float
    num_draft_tokens: float
    num_accepted_tokens: float
    num_steps: float | None = None  # decode steps walked (with or without a draft); absent in older documents

    @property
    def match_rate(self) -> float | None:
        """The share of steps that drafted (a lookup's match rate; 1 for a draft model); None when not recorded."""
        return min(1.0, self.num_drafts / self.num_steps) if self.num_steps else None

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "acceptance_rate": self.acceptance_rate,
            "mean_acceptance_length": self.mean_acceptance_length,
            "ci95": list(self.ci95),
            "mean_acceptance_length_ci95": list(self.mean_acceptance_length_ci95),
            "per_position_acceptance": list(self.per_position_acceptance),
            "num_drafts": self.num_drafts,
            "num_draft_tokens": self.num_draft_tokens,
            "num_accepted_tokens": self.num_accepted_tokens,
            **({"num_steps": self.num_steps} if self.num_steps is not None else {}),  # absent in older documents
        }

    @classmethod
    def from_json(cls, f: Fields) -> ProfileK:
        """Each value within what vLLM's counters can give at this k (module docstring): k >= 1; counts >= 0; rates
        and their CIs in [0, 1], one per-position rate per draft position; AL and its CI in [1, k + 1]; a rate (AL)
        null only when nothing was drafted (no draft tokens, no drafts), as :mod:`specwise.profiler.result`
        writes it."""
        k = _k(f)
        drafts, tokens = _count(f, "num_drafts") or 0.0, _count(f, "num_draft_tokens") or 0.0
        rate = _within(f, "acceptance_rate", f.number("acceptance_rate"), 0.0, 1.0, "a rate")
        if rate is None and tokens > 0:
            raise f.fail("acceptance_rate", f"missing beside num_draft_tokens = {tokens:g} (null only if none)")
        length = _within(f, "mean_acceptance_length", f.number("mean_acceptance_length"), 1.0, k + 1.0, "AL")
        if length is None and drafts > 0:
            raise f.fail("mean_acceptance_length", f"missing beside num_drafts = {drafts:g} (null only if none)")
        per_position = _rates(f, "per_position_acceptance")
        if len(per_position) != k:
            raise f.fail("per_position_acceptance", f"{len(per_position)} rates at k = {k}: one per draft position")
        return cls(
            k=k,
            acceptance_rate=rate,
            mean_acceptance_length=length,
            ci95=_interval(f, "ci95", 0.0, 1.0, "a rate"),
            mean_acceptance_length_ci95=_interval(f, "mean_acceptance_length_ci95", 1.0, k + 1.0, "AL"),
            per_position_acceptance=per_position,
            num_drafts=drafts,
            num_draft_tokens=tokens,
            num_accepted_tokens=_count(f, "num_accepted_tokens") or 0.0,
            num_steps=_count(f, "num_steps", None),
        )


@dataclass(frozen=True)
class ProfileResult:
    temperature: float
    drafting: str
    quantization: tuple[tuple[str, str], ...]  # (which model, scheme); empty: as loaded
    workload_class: str | None  # None: all prompts
    per_position_acceptance: tuple[float | None, ...]  # at the largest k
    prompts: int = 0
    estimator: str = ""
    alpha_mean: float | None = None
    by_k: tuple[ProfileK, ...] = ()

    @property
    def match_rate(self) -> float | None:
        """The share of decode steps that drafted at the largest profiled k (None when not recorded)."""
        return max(self.by_k, key=lambda b: b.k).match_rate if self.by_k else None

    def acceptance(self) -> AcceptanceModel:
        """The per-position rates as an acceptance model (vLLM's unconditional rates -> conditional)."""
        rates = self.per_position_acceptance
        if rates and all(r is None for r in rates):  # what a profile of nothing drafted writes: a real answer
            matched = f" (match rate {self.match_rate:.0%})" if self.match_rate is not None else ""
            raise NothingDrafted(
                f"nothing was drafted at T={self.temperature:g}{matched}: it measured no acceptance; this method "
                "finds nothing to propose on these prompts"
            )
        if not rates or any(r is None for r in rates):
            raise SpecError("per_position_acceptance has no usable rates")
        return AcceptanceModel.from_per_position([float(r) for r in rates if r is not None])

    def to_json(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "drafting": self.drafting,
            "quantization": dict(self.quantization),
            "class": self.workload_class,
            "prompts": self.prompts,
            "estimator": self.estimator,
            "alpha_mean": self.alpha_mean,
            "per_position_acceptance": list(self.per_position_acceptance),
            "by_k": [b.to_json() for b in self.by_k],
        }

    @classmethod
    def from_json(cls, f: Fields) -> ProfileResult:
        """One result as :func:`specwise.profiler.result.summarise` writes it: a temperature >= 0, a drafting mode
        and estimators the profiler has, rates in [0, 1], and one entry per profiled k (distinct k)."""
        quant = f.data.get("quantization") or {}
        if not isinstance(quant, Mapping) or not all(isinstance(v, str) for v in quant.values()):
            raise f.fail("quantization", f"expected an object of strings, got {quant!r}")
        per_position = _rates(f, "per_position_acceptance")
        if not per_position:
            raise f.fail("per_position_acceptance", "missing or empty")
        temperature = _temperature(f, required=False)
        estimator = f.text("estimator", "") or ""  # "" in results written before it was recorded
        if unknown := [e for e in estimator.split("+") if estimator and e not in ESTIMATORS]:
            raise f.fail("estimator", f"{unknown[0]!r}: expected {' or '.join(ESTIMATORS)} (joined by +)")
        by_k = tuple(ProfileK.from_json(b) for b in f.objects("by_k"))
        if not by_k:
            raise f.fail("by_k", "missing or empty: a result holds vLLM's counters at each profiled k")
        if len({b.k for b in by_k}) != len(by_k):
            raise f.fail("by_k", f"k = {', '.join(str(b.k) for b in by_k)}: each k once")
        prompts = _whole_count(f, "prompts")
        return cls(
            temperature=temperature,
            drafting=f.choice("drafting", DRAFTING_MODES),
            quantization=tuple(sorted((str(k), str(v)) for k, v in quant.items())),
            workload_class=f.text("class"),
            per_position_acceptance=per_position,
            prompts=prompts,
            estimator=estimator,
            alpha_mean=_within(f, "alpha_mean", f.number("alpha_mean"), 0.0, 1.0, "an acceptance probability"),
            by_k=by_k,
        )


@dataclass(frozen=True)
class VerificationRow:
    """The real speculative sampling loop against the profile at one (temperature, drafting mode, k)
    (:func:`specwise.profiler.verify.verify`). *paired*: the profiler's estimator on the loop's own output paths;
    *predicted*: the profile's own number. Rows written before the paired check (and before several loop paths per
    prompt) lack those fields: they read as None (one path)."""

    temperature: float
    drafting: str
    k: int
    measured_acceptance_rate: float | None
    measured_ci95: tuple[float | None, float | None]
    measured_mean_acceptance_length: float | None
    predicted_acceptance_rate: float | None
    difference: float | None
    paired_predicted_acceptance_rate: float | None
    paired_difference: float | None
    agrees: bool | None
    unpaired_within_ci: bool | None
    paths_per_prompt: int
    tokens: int
    speculative_wall_s: float | None
    autoregressive_wall_s: float | None
    measured_speedup: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "drafting": self.drafting,
            "k": self.k,
            "measured_acceptance_rate": self.measured_acceptance_rate,
            "measured_ci95": list(self.measured_ci95),
            "measured_mean_acceptance_length": self.measured_mean_acceptance_length,
            "predicted_acceptance_rate": self.predicted_acceptance_rate,
            "difference": self.difference,
            "paired_predicted_acceptance_rate": self.paired_predicted_acceptance_rate,
            "paired_difference": self.paired_difference,
            "agrees": self.agrees,
            "unpaired_within_ci": self.unpaired_within_ci,
            "paths_per_prompt": self.paths_per_prompt,
            "tokens": self.tokens,
            "speculative_wall_s": self.speculative_wall_s,
            "autoregressive_wall_s": self.autoregressive_wall_s,
            "measured_speedup": self.measured_speedup,
        }

    @classmethod
    def from_json(cls, f: Fields) -> VerificationRow:
        """A row as :func:`specwise.profiler.verify.verify` writes it: a temperature >= 0 and a drafting mode the
        profiler has, k >= 1, rates in [0, 1] (their differences in [-1, 1]), AL in [1, k + 1], at least one path
        per prompt, counts and wall times >= 0 and a speedup > 0."""
        k = _k(f)
        temperature = _temperature(f, required=True)
        paths, tokens = f.integer("paths_per_prompt", 1) or 0, _whole_count(f, "tokens")
        if paths < 1:  # null too (read as 0), which a bound on the read would let through
            raise f.fail("paths_per_prompt", f"{paths}: must be at least 1")
        speedup = f.number("measured_speedup")
        if speedup is not None and speedup <= 0:
            raise f.fail("measured_speedup", f"{speedup!r}: a speedup must be > 0")

        def rate(key: str, low: float = 0.0) -> float | None:
            return _within(f, key, f.number(key), low, 1.0, "a rate" if low == 0 else "a difference of rates")

        return cls(
            temperature=temperature,
            drafting=f.choice("drafting", DRAFTING_MODES, required=True),
            k=k,
            measured_acceptance_rate=rate("measured_acceptance_rate"),
            measured_ci95=_interval(f, "measured_ci95", 0.0, 1.0, "a rate"),
            measured_mean_acceptance_length=_within(
                f, "measured_mean_acceptance_length", f.number("measured_mean_acceptance_length"), 1.0, k + 1.0, "AL"
            ),
            predicted_acceptance_rate=rate("predicted_acceptance_rate"),
            difference=rate("difference", -1.0),
            paired_predicted_acceptance_rate=rate("paired_predicted_acceptance_rate"),
            paired_difference=rate("paired_difference", -1.0),
            agrees=_flag(f, "agrees"),
            unpaired_within_ci=_flag(f, "unpaired_within_ci"),
            paths_per_prompt=paths,
            tokens=tokens,
            speculative_wall_s=_count(f, "speculative_wall_s", None, "a duration"),
            autoregressive_wall_s=_count(f, "autoregressive_wall_s", None, "a duration"),
            measured_speedup=speedup,
        )


def _check_echoed(f: Fields) -> None:
    """What the document echoes of its run, where it is read: the prompts' ``source`` and ``count`` (the profile
    report), the lookup's ``settings.prompt_lookup_min`` / ``max`` (:attr:`ProfileDoc.prompt_lookup`: integers >= 1,
    min <= max, as ``specwise profile`` takes them) and ``timing_s`` (seconds, >= 0)."""
    if (prompts := f.object("prompts")) is not None:
        prompts.text("source")
        _count(prompts, "count", None)
    if (settings := f.object("settings")) is not None:
        lo, hi = (settings.integer(key, low=1, what="tokens") for key in ("prompt_lookup_min", "prompt_lookup_max"))
        if lo is not None and hi is not None and lo > hi:
            raise settings.fail("prompt_lookup_min", f"{lo}: above prompt_lookup_max = {hi}")
    if (timing := f.object("timing_s")) is not None:
        for key in timing.data:
            _count(timing, key, None, "a duration")


@dataclass(frozen=True)
class Picked:
    """The result chosen for one workload, its acceptance, and a line saying which it was."""

    result: ProfileResult
    model: AcceptanceModel
    source: str


def _other_classes_note(workload: str, task: str | None, classes: set[str | None]) -> str:
    """What a fall-back to all prompts stands on when the profile knows its prompts' classes and none is the
    workload's (or its task's): said beside the source, as a temperature mismatch is."""
    profiled = sorted(c for c in classes if c is not None)
    if not profiled:
        return ""
    wanted = " or ".join(repr(c) for c in dict.fromkeys((workload, task)) if c)
    return (
        f" -- workload {workload!r} uses the acceptance of all profiled prompts, which are "
        f"{', '.join(profiled)} only (none profiled as {wanted})"
    )


@dataclass(frozen=True)
class ProfileDoc:
    target: str | None
    draft: str | None
    method: str
    results: tuple[ProfileResult, ...]
    prompts: JsonObject = field(default_factory=dict)  # {"source", "count"}
    settings: JsonObject = field(default_factory=dict)  # what was profiled, as run (echoed, not interpreted)
    verification: tuple[VerificationRow, ...] = ()  # loop-vs-profile rows (``specwise profile --verify``)
    timing_s: JsonObject = field(default_factory=dict)
    path: Path | None = None  # where it was read from

    @property
    def prompt_lookup(self) -> tuple[int, int] | None:
        lo, hi = self.settings.get("prompt_lookup_min"), self.settings.get("prompt_lookup_max")
        return (int(lo), int(hi)) if isinstance(lo, int) and isinstance(hi, int) else None

    @property
    def name(self) -> str:
        return self.path.name if self.path else "profile"

    def pick(self, workload: str, task: str | None, temperature: float, drafting: str) -> Picked:
        """The one rule: unquantised results of the drafting mode asked for (a lookup's proposals are fixed tokens,
        so greedy stands for it); the workload's own class, else its task's, else all prompts; the nearest
        temperature."""
        pool = [r for r in self.results if not r.quantization]
        modes = sorted({r.drafting for r in pool})
        same = [r for r in pool if r.drafting == drafting] or (
            [r for r in pool if r.drafting == "greedy"] if self.method in LOOKUP_METHODS else []
        )
        if not same:
            raise DocumentError(
                f"{self.name}: no unquantised result with {drafting} drafting (it has: {', '.join(modes) or 'none'})"
            )
        for cls in (workload, task, None):
            chosen = [r for r in same if r.workload_class == cls]
            if not chosen:
                continue
            best = min(chosen, key=lambda r: abs(r.temperature - temperature))
            try:
                model = best.acceptance()
            except NothingDrafted as exc:  # a real answer, said as it is
                raise DocumentError(f"{self.name}: {exc}") from None
            except SpecError as exc:
                raise DocumentError(f"{self.name}: bad per_position_acceptance ({exc})") from None
            k = len(best.per_position_acceptance)
            source = (
                f"profiled: {self.name}, class {cls or 'all'}, T={best.temperature:g} ({best.drafting} drafting), "
                f"AL(k={k}) {model.mean_acceptance_length(k):.2f}"
            )
            if cls is None:
                source += _other_classes_note(workload, task, {r.workload_class for r in same})
            return Picked(best, model, source)
        raise DocumentError(f"{self.name}: no result for class {workload!r} and none over all prompts")

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA.id,
            "target": self.target,
            "draft": self.draft,
            "method": self.method,
            "prompts": dict(self.prompts),
            "settings": dict(self.settings),
            "results": [r.to_json() for r in self.results],
            "verification": [v.to_json() for v in self.verification],
            "timing_s": dict(self.timing_s),
        }

    @classmethod
    def from_json(cls, data: JsonObject, where: str = "profile", path: Path | None = None) -> ProfileDoc:
        SCHEMA.check(data, where, required=False)
        if is_bench_result(data):
            raise DocumentError(f"{where}: is a specwise bench result, expected a specwise profile (--profile)")
        f = Fields(data, where)
        if "results" not in data:
            raise DocumentError(f"{where}: not a specwise profile (no 'results'); make one with specwise profile")
        if data.get("schema") is None:  # after the checks that say what else the file is
            raise f.fail("schema", f'missing: every profile specwise writes says "schema": "{SCHEMA.id}" (edited?)')
        results = tuple(ProfileResult.from_json(r) for r in f.objects("results"))
        if not results:
            raise DocumentError(f"{where}: has no results")
        method = f.text("method", required=True) or ""
        if method not in PROFILABLE:
            raise f.fail("method", f"expected one of {', '.join(PROFILABLE)} (what specwise profiles), got {method!r}")
        if method == "draft_model" and not f.text("draft"):
            raise f.fail("draft", "a draft_model profile names its draft")

        def obj(key: str) -> JsonObject:
            value = data.get(key) or {}
            if not isinstance(value, Mapping):
                raise f.fail(key, "expected an object")
            return value

        _check_echoed(f)
        rows = data.get("verification") or []
        if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
            raise f.fail("verification", "expected a list of objects")
        verification = tuple(
            VerificationRow.from_json(Fields(r, f"{f.at('verification')}[{i}]")) for i, r in enumerate(rows)
        )
        return cls(
            target=f.text("target"),
            draft=f.text("draft"),
            method=method,
            results=results,
            prompts=obj("prompts"),
            settings=obj("settings"),
            verification=verification,
            timing_s=obj("timing_s"),
            path=path,
        )

    @classmethod
    def read(cls, path: Path) -> ProfileDoc:
        return cls.from_json(read_json_file(path, "profile"), str(path), path)
