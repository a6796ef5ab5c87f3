"""Predicted net slowdown at the live batch size: the perf model of a scenario (its roofline or calibrated
step times, its draft cost) evaluated at the batch the server runs now, with the AL it measures now.

Per generated token, a speculative decode step costs (verify(B, k+1) + propose(B, k)) / AL against
decode(B, 1) without speculation (Leviathan et al. 2023, Theorem 3.8, with batch-dependent step times instead
of a constant cost ratio). Above the batch where that ratio passes 1, k should be 0.

The k priced is the one the server runs: its counters show it (vLLM adds num_speculative_tokens draft tokens per
draft, ``vllm/v1/spec_decode/metrics.py``, so Δ draft tokens / Δ drafts is k), unless ``--k`` names one; the
scenario's largest k is only the fallback while the counters show too few drafts. A k outside the scenario's
``[speculation].k`` list -- live or ``--k`` -- is priced all the same (the step-time model prices any k: it never
reads the scenario's acceptance model), with a note saying the scenario models only its own k values.

Every priced decision carries what the predictor is worth: its band (validation or calibration replay) and, for a
calibration from other hardware or one that does not record it, the same warning simulate and advise give
(:func:`specwise.perfmodel.calibration_match.hardware_notes`, carried by the scenario's models). A calibrated price
at a live step beyond the steps the calibration measured (batch, KV tokens, batched tokens) says so in the alert,
with the live step (:class:`~specwise.perfmodel.calibration_match.CalibratedRange`); the deployment's limits are
checked once, when the loop starts (:meth:`SlowdownModel.warnings`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from specwise.contracts.sweep import P80_SPEEDUP_ERROR, predictor_json
from specwise.errors import SpecwiseError
from specwise.monitor.rules import PREDICTED_NET_SLOWDOWN, Finding
from specwise.monitor.window import WindowStats
from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.calibration_match import CalibratedRange, StepRange
from specwise.perfmodel.drafting import DraftCost
from specwise.perfmodel.factory import band_text
from specwise.perfmodel.predictor import StepTimePredictor
from specwise.perfmodel.profiles import LEGACY_OVERHEAD, EngineOverhead
from specwise.scenario.model import Scenario
from specwise.sim.stepcost import StepCost
from specwise.specs.model import same_model


@dataclass(frozen=True)
class SlowdownModel:
    target: StepTimePredictor
    draft: DraftCost
    k: int
    context_tokens: int
    max_num_seqs: int
    margin: float = 0.05  # alert above this predicted TPOT cost
    overhead: EngineOverhead = LEGACY_OVERHEAD  # the engine's own per-step costs (the predictor's profile)
    predictor: str = "roofline"
    batch_expansion_scorer: bool = False  # vLLM V0's verification (specwise.sim.stepcost)
    band: float = 0.0  # the predictor's relative speedup error (validation or calibration replay)
    band_source: str = ""
    band_statistic: str = P80_SPEEDUP_ERROR  # which statistic ``band`` is (band_text words it)
    target_model: str = ""  # the scenario's target (its served model_name, unless --served-model-name renamed it)
    k_given: bool = False  # k came from --k; otherwise the live k from the counters is priced when they show one
    modelled_k: tuple[int, ...] = ()  # the scenario's speculative k values ([speculation].k, 0 left out)
    notes: tuple[str, ...] = ()  # what every priced decision must say (a calibration from other hardware)
    limit_notes: tuple[str, ...] = ()  # the deployment's limits pass the calibrated steps: said once, at the start
    calibrated: CalibratedRange | None = None  # the steps a calibration measured (a live step beyond them is said)

    def model_note(self, served: tuple[str, ...]) -> str | None:
        """Said when a server serves none of the scenario's target by name: the slowdown check may be priced for
        another model (or the server renamed it with --served-model-name)."""
        if not self.target_model or not served or any(same_model(name, self.target_model) for name in served):
            return None
        return (
            f"this server serves {', '.join(served)}; the predicted-slowdown check is priced for {self.target_model} "
            "(the scenario's target): right only if that is the same model under a --served-model-name"
        )

    def k_note(self, stats: WindowStats, min_drafts: float) -> str | None:
        """Said when --k disagrees with the draft length the server's counters show, or when the live draft length
        (priced without --k) is not one of the scenario's k values."""
        live = live_k(stats, min_drafts)
        if live is None or (self.k_given and live == self.k):
            return None
        if self.k_given:
            return (
                f"--k {self.k} disagrees with the live draft length {live} (draft tokens / drafts of this window): "
                f"the predicted-slowdown check is priced at k={self.k}; drop --k to price the live k"
            )
        return self._priced_anyway(f"the live draft length {live} (draft tokens / drafts of this window)", live)

    def unmodelled(self, k: int) -> str | None:
        """``k = 2, 4`` when ``k`` is not one of the scenario's k values (None when it is)."""
        if not self.modelled_k or k in self.modelled_k:
            return None
        return f"k = {', '.join(map(str, self.modelled_k))}"

    def _priced_anyway(self, what: str, k: int) -> str | None:
        """Said when ``k`` (``what`` names where it came from) is not one of the scenario's k values."""
        if (modelled := self.unmodelled(k)) is None:
            return None
        return (
            f"{what} is not one of the k values the scenario models ({modelled} in [speculation].k): the "
            f"predicted-slowdown check prices k={k} with its step-time model all the same"
        )

    def warnings(self) -> tuple[str, ...]:
        """What every result of the check must say, once: a calibration from other hardware (or one that does not
        record it), and a --k the scenario does not model."""
        given = self._priced_anyway(f"--k {self.k}", self.k) if self.k_given else None
        return (*self.notes, *self.limit_notes, *([given] if given else []))

    def live_step(self, batch: int) -> StepRange:
        """The verification step this check prices: ``batch`` sequences of k + 1 tokens over the context."""
        q = self.k + 1
        return StepRange(num_seqs=batch, kv_tokens=batch * (self.context_tokens + q), batched_tokens=batch * q)

    def range_notes(self, batch: int) -> tuple[str, ...]:
        """Said with a calibrated price at ``batch`` when that step passes the steps the calibration measured."""
        if self.calibrated is None:
            return ()
        return self.calibrated.notes(self.live_step(batch), "the step priced at the live batch has")

    def to_json(self) -> dict[str, object]:
        """The predictor as simulate and advise serialise it (:func:`~specwise.contracts.sweep.predictor_json`), with
        what the check prices (k, context) and its one-line description."""
        return {
            **predictor_json(self.predictor, self.band, self.band_source, self.band_statistic),
            "k": self.k if self.k_given else None,
            "fallback_k": None if self.k_given else self.k,
            "modelled_k": list(self.modelled_k),
            "context_tokens": self.context_tokens,
            "description": self.describe(),
        }

    def priced(self, stats: WindowStats, min_drafts: float) -> tuple[SlowdownModel, str]:
        """The model priced for this window and where its k came from: --k, else the live k, else the
        scenario's largest."""
        if self.k_given:
            return self, " from --k"
        live = live_k(stats, min_drafts)
        if live is None:
            return self, ", the scenario's largest"
        return replace(self, k=live), " from the counters"

    def describe(self) -> str:
        """The predictor behind the slowdown check and its error, in one line (shown with every result)."""
        error = f", speedups {band_text(self.band, self.band_statistic, self.band_source)}" if self.band else ""
        k = f"k={self.k} (--k)" if self.k_given else f"k: the live draft length (else the scenario's largest, {self.k})"
        return f"{self.predictor}, {k}, context {self.context_tokens} tokens{error}"

    def tpot_ratio(self, batch: int, al: float) -> float:
        """Time per token with speculation / without, at ``batch`` decoding sequences (the simulator's step
        prices: :class:`specwise.sim.stepcost.StepCost`)."""
        cost = StepCost(self.target, self.draft, self.overhead, self.batch_expansion_scorer)
        plain = StepCost(self.target, None, self.overhead)  # the server without speculation configured
        ctx = np.full(batch, self.context_tokens, dtype=np.int64)
        none = np.zeros(0, dtype=np.int64)
        base = plain.decode_step_s(BatchShape.uniform(batch, 1, self.context_tokens), none, none, 0)
        spec = cost.decode_step_s(
            BatchShape.uniform(batch, self.k + 1, self.context_tokens), np.ones(batch, dtype=np.int64), ctx, self.k
        )
        return spec / max(al, 1.0) / base

    def break_even_batch(self, al: float) -> int | None:
        """The largest batch at which speculation still pays with this AL (None: it pays up to max_num_seqs)."""
        for b in range(1, self.max_num_seqs + 1):
            if self.tpot_ratio(b, al) >= 1.0:
                return b - 1
        return None

    def check(self, stats: WindowStats, min_drafts: float) -> Finding | None:
        al, running = stats.mean_acceptance_length, stats.batch  # one engine's batch under data parallelism
        if al is None or running is None or not (math.isfinite(al) and math.isfinite(running)):
            return None  # a non-finite gauge never reaches here (vet drops it); this guard keeps round() safe
        if running < 1 or (stats.drafts or 0) < min_drafts:
            return None
        model, source = self.priced(stats, min_drafts)
        return model._check(al, min(round(running), self.max_num_seqs), source)

    def _check(self, al: float, batch: int, k_source: str) -> Finding | None:
        ratio = self.tpot_ratio(batch, al)
        if ratio <= 1.0 + self.margin:
            return None
        even = self.break_even_batch(al)
        advice = "set k=0" if not even else f"set k=0 above batch {even}"
        band = f"+-{self.band:.0%}, " if self.band else ""
        modelled = self.unmodelled(self.k)
        outside = f"; the scenario models only {modelled}" if modelled else ""
        caveats = "".join(f"; {note}" for note in (*self.notes, *self.range_notes(batch)))
        return Finding(
            PREDICTED_NET_SLOWDOWN,
            "critical" if ratio > 1.2 else "warning",
            f"at batch {batch} with AL {al:.2f} speculation costs ~{ratio - 1:.0%} TPOT "
            f"({band}{self.predictor}, k={self.k}{k_source}{outside}) "
            f"-- {advice} (num_speculative_tokens_per_batch_size){caveats}",
        )


def live_k(stats: WindowStats, min_drafts: float) -> int | None:
    """The draft length the server runs, from its counters: Δ draft tokens / Δ drafts, rounded (None with fewer
    than ``min_drafts`` drafts in the window, or no draft-token rate)."""
    drafts, per_s = stats.drafts, stats.draft_tokens_per_s
    if drafts is None or per_s is None or drafts < max(min_drafts, 1) or not math.isfinite(per_s):
        return None
    k = round(per_s * stats.window_s / drafts)
    return k if k >= 1 else None


def modelled_k_values(k_values: Sequence[int]) -> tuple[int, ...]:
    """The speculative k values a scenario models ([speculation].k without its 0), sorted."""
    return tuple(sorted({x for x in k_values if x > 0}))


def check_modelled_k(k: int | None, modelled: Sequence[int]) -> None:
    """A deployed ``--k`` the scenario does not model (``modelled``: its [speculation].k) is refused where alert
    rules are written from it (``export prometheus-rules``): its acceptance and alert bands would be extrapolated
    (AL bands up to k + 1). ``monitor`` prices such a k instead, and says so (:meth:`SlowdownModel.warnings`), as it
    prices a live k the scenario does not model."""
    ks = modelled_k_values(modelled)
    if k is not None and k not in ks:
        raise SpecwiseError(f"--k {k}: the scenario models k = {', '.join(map(str, ks)) or 'none'} ([speculation].k)")


def slowdown_model(sc: Scenario, k: int | None = None) -> SlowdownModel:
    """From a simulate scenario: its target/draft step-time models; k = the given one (``--k``), else the live k
    of each window (:func:`live_k`), else the largest in its list; context = the share-weighted mean prompt plus
    half the mean output."""
    target, draft = sc.models.target, sc.models.draft_cost
    total = sum(c.share for c in sc.classes)
    ctx = sum(c.share * (c.prompt_tokens.mean + c.output_tokens.mean / 2) for c in sc.classes) / total
    return SlowdownModel(
        target,
        draft,
        k or max(sc.sweep.k_values),
        int(ctx),
        sc.max_num_seqs,
        overhead=sc.models.overhead,
        predictor=sc.models.predictor,
        batch_expansion_scorer=sc.models.batch_expansion_scorer,
        band=sc.models.band,
        band_source=sc.models.band_source,
        band_statistic=sc.models.band_statistic,
        target_model=sc.target.name,
        k_given=k is not None,
        modelled_k=modelled_k_values(sc.sweep.k_values),
        notes=sc.models.notes,
        limit_notes=sc.limit_notes(),
        calibrated=sc.models.calibrated_range,
    )
