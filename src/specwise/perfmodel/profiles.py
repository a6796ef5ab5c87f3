"""Engine profiles: what a serving engine adds around the forward passes, and how well it uses the GPU.

A profile pairs :class:`~specwise.perfmodel.v2.GpuEfficiency` (the achieved fractions of datasheet peaks and the
per-pass floors) with :class:`EngineOverhead` (per engine step: scheduling and input preparation, per running
sequence: sampling metadata and output processing, per draft token: the proposer's bookkeeping and the rejection
sampler) and the engine's scheduling rules that matter for speculation:

* ``vllm-v1`` (default): chunked prefill mixes prompt chunks with decode/verify steps (``vllm/v1/core/sched``);
  :func:`profile_for` sets its async scheduling by release and method (:func:`with_async_scheduling`).
* ``vllm-v0`` (vLLM < 0.8 with speculation; any method on 0.8 and a draft model on 0.9, which fall back to V0 for
  it): no
  chunked prefill alongside speculation, so a step prefills or
  decodes, prompts first (``vllm/spec_decode`` in 0.6.x disabled chunked prefill for speculative runs); and
  verification by batch expansion, k + 1 single-token sequences per speculating sequence, each re-reading its
  context (``vllm/spec_decode/batch_expansion.py``; the MQA scorer was off whenever CUDA graphs were on).
* ``sglang``: SGLang's scheduler, same shape as V1 here, but its overlap scheduler hides the engine's per-step work
  under the forward pass when nothing speculates (:attr:`EngineOverhead.overlapped_without_speculation`).

The coefficients are fitted to a declared training set of published measurements
(``perfmodel/data/published_fit.json``; ``scripts/fit_published.py`` writes it, ``specwise validate`` checks it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

from specwise.engines.vllm_versions import VllmVersion, async_scheduling, speculation_engine
from specwise.errors import SpecwiseError
from specwise.perfmodel.overlap import expected_max_s
from specwise.perfmodel.v2 import GpuEfficiency

FIT_FILE = "published_fit.json"


@dataclass(frozen=True)
class EngineOverhead:
    """Seconds an engine step costs outside the forward passes."""

    base_s: float = 1.207e-3  # SpecDecode-Bench's fitted per-step overhead (vLLM 0.10.1, H100)
    per_seq_s: float = 0.0
    per_draft_token_s: float = 0.0
    rejection_fraction: float = 0.0  # of the verification pass (the roofline predictor's legacy charge)
    # The step's CPU work runs under the GPU's forward pass when nothing speculates, and in series with it when
    # something does: SGLang's overlap scheduler (on by default) schedules batch i+1 while batch i runs, and
    # ``ServerArgs._handle_speculative_decoding`` sets ``disable_overlap_schedule = True`` for EAGLE, EAGLE3,
    # STANDALONE and NGRAM ("Overlap scheduler is disabled because of using eagle3 or standalone speculative
    # decoding"; python/sglang/srt/server_args.py, SGLang 0.5.x). SGLang PR #9588: "Speculative decoding
    # currently does not support overlap scheduling due to the sequential logic between the draft and target
    # models. However, overlap scheduling has been shown to achieve up to 10% performance gains in
    # non-speculative use cases." The overlapped variant (SGLANG_ENABLE_SPEC_V2) needs topk 1 and was not the
    # default in 2026-04 (sgl-project/sglang#23005); trees never have it. vLLM V1 overlaps both by release and
    # method (its async scheduling: engines.vllm_versions.async_scheduling; profile_for sets them).
    overlapped_without_speculation: bool = False
    # The step's CPU work (``step_s`` and the per-draft-token work) runs under the forward and proposal passes of
    # a speculating step: vLLM's async scheduling with EAGLE/MTP from 0.14, a draft model from 0.28 (review s48b F2)
    overlapped_with_speculation: bool = False
    # Where the engine overlaps, each part's step-to-step standard deviation as a share of its mean: an overlapped
    # step costs the expected longer of the two (perfmodel.overlap.expected_max_s, Clark 1961), not the hard max()
    # (0 here: the hard max, as before the 2026-12-07 fit). A coefficient of the fit (validate/fit.py), but no training
    # record brings the two parts near each other, so its weak regulariser holds it at the declared 0.1.
    overlap_jitter: float = 0.0

    def step_s(self, seqs: int) -> float:
        return self.base_s + self.per_seq_s * seqs

    def plain_step_s(self, forward_s: float, seqs: int) -> float:
        """A step with no speculation configured: the forward pass and the engine's work, in series -- or the
        expected longer of the two where the engine overlaps them (``overlapped_without_speculation``;
        ``overlap_jitter``)."""
        engine = self.step_s(seqs)
        if self.overlapped_without_speculation:
            return expected_max_s(forward_s, engine, self.overlap_jitter)
        return forward_s + engine

    def speculating_step_s(self, gpu_s: float, seqs: int, draft_tokens: int, verify_s: float) -> float:
        """A speculating step: ``gpu_s`` (verification and proposal passes) and the engine's work, in series -- or
        the expected longer of the two where the engine overlaps them (``overlapped_with_speculation``); the rejection
        charge (the roofline's legacy term, a share of the verification pass) stays in series."""
        engine = self.step_s(seqs) + self.per_draft_token_s * draft_tokens
        if self.overlapped_with_speculation:
            return expected_max_s(gpu_s, engine, self.overlap_jitter) + self.rejection_fraction * verify_s
        return gpu_s + engine + self.rejection_fraction * verify_s


LEGACY_OVERHEAD = EngineOverhead(base_s=1.207e-3, rejection_fraction=0.015)  # the roofline predictor's charges


@dataclass(frozen=True)
class EngineProfile:
    name: str
    description: str
    gpu: GpuEfficiency = field(default_factory=GpuEfficiency)
    overhead: EngineOverhead = field(default_factory=EngineOverhead)
    chunked_prefill_with_spec: bool = True
    batch_expansion_scorer: bool = False  # vLLM V0's verification (see specwise.sim.stepcost)
    fitted_on: tuple[str, ...] = ()  # the evidence families the coefficients were fitted to

    @classmethod
    def from_json(cls, name: str, data: dict[str, Any]) -> EngineProfile:
        return cls(
            name=name,
            description=str(data.get("description", "")),
            gpu=GpuEfficiency(**data["gpu"]),
            overhead=EngineOverhead(**data["overhead"]),
            chunked_prefill_with_spec=bool(data.get("chunked_prefill_with_spec", True)),
            batch_expansion_scorer=bool(data.get("batch_expansion_scorer", False)),
            fitted_on=tuple(data.get("fitted_on", ())),
        )


MIN_SEGMENT_RECORDS = 10  # held-back speedups on one GPU segment before its own band replaces the engine's
UNMEASURED_BAND = 0.25  # the band when no held-back record measures one


@dataclass(frozen=True)
class PublishedFit:
    """The fitted profiles and what the fit and the held-back validation measured (for every prediction to cite)."""

    profiles: dict[str, EngineProfile]
    training_families: tuple[str, ...]
    validation_families: tuple[str, ...]
    error: dict[str, Any]  # e.g. {"validation": {"median_abs_log_ratio": ..., "within_25pct": ...}, "training": ...}
    command: str = ""
    first_given_match: float = 0.6  # a lookup's per-match first-token acceptance (fitted)
    # each held-back speculative record the fit predicted: its id -> (predicted speedup, k), as the last evaluation
    # replayed it (``scripts/fit_published.py``; the evidence nearest a deployment is summarised from these)
    held_back_predictions: dict[str, tuple[float, int | None]] = field(default_factory=dict)

    def band(self, engine: str | None = None, segment: str | None = None, *, roofline: bool = False) -> float:
        """The relative error band of a speedup predicted by this fit (``roofline``: by the analytic roofline,
        replayed on the same records): the 80th percentile of |predicted/published - 1| over the held-back
        *speculative* validation records, whose ratios are of speedups (the fit's own records would flatter it; a
        plain-decoding record's error is on a TPOT or a throughput, not a speedup) -- those measured on ``engine``
        when given and there are any, since a vLLM profile's error is measured on vLLM, an SGLang profile's on
        SGLang; and of those, the ones on GPUs of ``segment`` (data-centre or consumer cards,
        :class:`~specwise.specs.gpu.GpuSpec`) when at least :data:`MIN_SEGMENT_RECORDS` are."""
        held = self._held_back(engine, segment, roofline)
        return float(held.get("speedup_p80_abs_rel_error", held.get("p80_abs_rel_error", UNMEASURED_BAND)))

    def band_gpus(self, engine: str, segment: str | None = None) -> tuple[str, ...]:
        """The GPUs of the held-back ``engine`` records the band comes from (empty when not recorded)."""
        return tuple(str(g) for g in self._held_back(engine, segment).get("gpus", ()))

    def direction(
        self, engine: str | None = None, segment: str | None = None, *, roofline: bool = False
    ) -> tuple[float | None, int, int]:
        """How often the held-back records :meth:`band` comes from were predicted on the right side of plain
        decoding: (share of speculative records predicted faster or slower as measured -- None when not recorded --,
        measured slowdowns predicted below 1, measured slowdowns)."""
        held = self._held_back(engine, segment, roofline)
        sign = held.get("sign_agreement")
        return (
            (None if sign is None else float(sign)),
            int(held.get("slowdowns_predicted", 0)),
            int(held.get("slowdowns", 0)),
        )

    def band_records(self, engine: str | None = None, segment: str | None = None) -> int:
        """How many held-back records :meth:`band` comes from."""
        held = self._held_back(engine, segment)
        return int(held.get("speedup_records", held.get("records", 0)))

    def band_segment(self, engine: str | None, segment: str | None, *, roofline: bool = False) -> str | None:
        """``segment`` when :meth:`band` comes from that segment's records alone, else None."""
        return segment if _per_segment(self._section(roofline), engine, segment) else None

    def _section(self, roofline: bool) -> dict[str, Any]:
        return dict(self.error.get("roofline", {}) or {}) if roofline else self.error

    def _held_back(self, engine: str | None, segment: str | None = None, roofline: bool = False) -> dict[str, Any]:
        """The held-back statistics :meth:`band` uses: ``engine``'s on ``segment`` GPUs, else ``engine``'s when the
        fit file has them, else all."""
        section = self._section(roofline)
        per_segment = _per_segment(section, engine, segment)
        if per_segment:
            return per_segment
        per_engine = dict((section.get("validation_by_engine", {}) or {}).get(engine or "", {}) or {})
        if per_engine.get("speedup_p80_abs_rel_error", per_engine.get("p80_abs_rel_error")) is not None:
            return per_engine
        return dict(section.get("validation", {}) or {})


def _per_segment(section: dict[str, Any], engine: str | None, segment: str | None) -> dict[str, Any]:
    """The held-back statistics of ``engine`` on ``segment`` GPUs in one predictor's ``section`` of the fit file,
    when there are enough speedups to say (else empty)."""
    table = section.get("validation_by_engine_and_gpu_segment", {}) or {}
    held = dict(((table.get(engine or "", {}) or {}).get(segment or "", {})) or {})
    return held if int(held.get("speedup_records", 0)) >= MIN_SEGMENT_RECORDS else {}


@cache
def published_fit() -> PublishedFit:
    try:
        text = resources.files("specwise.perfmodel").joinpath("data", FIT_FILE).read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, ValueError) as exc:  # pragma: no cover - a broken installation
        raise SpecwiseError(f"the published fit ({FIT_FILE}) is missing or unreadable: {exc}") from None
    return PublishedFit(
        profiles={name: EngineProfile.from_json(name, p) for name, p in data["profiles"].items()},
        training_families=tuple(data["fit"]["training_families"]),
        validation_families=tuple(data["fit"]["validation_families"]),
        error=dict(data.get("error", {})),
        command=str(data["fit"].get("command", "")),
        first_given_match=float(data.get("lookup", {}).get("first_token_acceptance_given_match", 0.6)),
        held_back_predictions={
            rid: (float(p["predicted_speedup"]), None if p.get("k") is None else int(p["k"]))
            for rid, p in (data.get("held_back_predictions") or {}).items()
        },
    )


def profile_for(engine: str = "vllm", version: str | None = None, method: str | None = None) -> EngineProfile:
    """The profile for an engine, version and speculation method: vLLM before 0.8 is V0 (speculation without
    chunked prefill), and so is every speculative method on 0.8 and a separate draft model on 0.9, which fall back
    to V0 for it (:func:`~specwise.engines.vllm_versions.speculation_engine`). The plain server beside it is
    simulated as its release runs plain decoding (chunked on V1; V0's whole prompts before 0.8: the scenario's
    ``baseline_chunked_prefill``). V1 gets the async scheduling of its release and ``method``
    (:func:`with_async_scheduling`)."""
    profiles = published_fit().profiles
    if engine == "vllm":
        v0 = version is not None and (
            _before(version, (0, 8))  # a malformed version is refused here, in one line, before it is parsed below
            or speculation_engine(VllmVersion.parse(version), method) == "v0"
        )
        if v0:
            return profiles["vllm-v0"]
        return with_async_scheduling(
            profiles["vllm-v1"], None if version is None else VllmVersion.parse(version), method
        )
    if engine in profiles:
        return profiles[engine]
    raise SpecwiseError(f"no step-time profile for engine {engine!r} (known: vllm, {', '.join(profiles)})")


def with_async_scheduling(profile: EngineProfile, version: VllmVersion | None, method: str | None) -> EngineProfile:
    """``profile`` (vLLM V1's) with its engine work overlapped as vLLM ``version`` overlaps it for ``method``
    (:func:`~specwise.engines.vllm_versions.async_scheduling`): plain steps and speculating steps apart, since a
    release may overlap one and not the other (CPU n-gram before 0.33: the baseline overlapped, the speculating
    steps not). With no ``method`` (or ``"none"``: plain decoding) nothing says how a speculating step would run, so
    it is priced in series, the slower side, never with the overlap of a method nobody named (review s49a L5)."""
    named = method not in (None, "none")
    overhead = replace(
        profile.overhead,
        overlapped_without_speculation=async_scheduling(version, None),
        overlapped_with_speculation=named and async_scheduling(version, method),
    )
    return replace(profile, overhead=overhead)


def _before(version: str, limit: tuple[int, int]) -> bool:
    parts = version.strip().lstrip("v").split(".")
    try:
        return (int(parts[0]), int(parts[1]) if len(parts) > 1 else 0) < limit
    except ValueError:
        raise SpecwiseError(f"engine version {version!r}: expected MAJOR.MINOR[.PATCH], e.g. 0.10.1") from None
