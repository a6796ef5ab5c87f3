"""Whether a calibration file describes the deployment it is asked to price.

A calibrated step-time law (``specwise bench --calibrate`` / ``specwise calibrate``) is one server's steps: one
target model on one engine and one machine. Used for another model or engine it prices the wrong server with a band
that looks precise, so that is refused; another GPU, or a file that does not record its hardware, is said next to
every result (a CPU calibration pricing an L4 deployment is a legitimate what-if, not a GPU prediction).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from specwise.contracts.calibration import CalibratedConfig, CalibrationDoc
from specwise.errors import SpecwiseError
from specwise.specs.gpu import GpuSpec
from specwise.specs.model import ModelSpec, same_model


def check_identity(cal: CalibrationDoc, name: str, engine: str, target: ModelSpec) -> None:
    """Refuse a calibration of another target model or engine (one line, the caller names the file)."""
    if cal.target and not same_model(cal.target, target.name):
        raise SpecwiseError(
            f"calibration {name} measured {cal.target}, but this deployment serves {target.name}: a step-time law "
            "does not carry across models; calibrate on this model (specwise calibrate on vllm bench serve "
            "--save-detailed results of it, or specwise bench --launch ... --calibrate)"
        )
    if cal.engine and cal.engine != engine:
        raise SpecwiseError(f"calibration {name} measured {cal.engine}, but this deployment runs {engine}")


def check_draft(cal: CalibrationDoc, name: str, match: CalibratedConfig, draft: ModelSpec | None) -> None:
    """Refuse a draft model's calibrated cost for another draft: the scale is that draft's pass over the target's."""
    if draft is not None and match.model and not same_model(match.model, draft.name):
        raise SpecwiseError(
            f"calibration {name} calibrated the draft {match.model} ({match.name}), but this deployment drafts with "
            f"{draft.name}: a draft's cost does not carry to another; calibrate this draft (specwise calibrate on vllm "
            "bench serve --save-detailed results of it, or specwise bench --launch ... --calibrate)"
        )


def hardware_notes(cal: CalibrationDoc, name: str, gpu: GpuSpec) -> tuple[str, ...]:
    """What the results cannot claim when the calibration ran elsewhere, or does not say where it ran."""
    if not cal.hardware:
        return (
            f"calibration {name} does not record the hardware it ran on (vllm bench serve files do not say): its "
            f"step times are taken to be {gpu.name}'s",
        )
    family = re.split(r"[-_ ]", gpu.name)[0].upper()
    if family and family in cal.hardware.upper():
        return ()
    return (
        f"calibration {name} ran on {cal.hardware}, not {gpu.name}: the simulated step times are that machine's, "
        f"not a {gpu.name}'s; calibrate on the deployment's GPU for a prediction of it",
    )


@dataclass(frozen=True)
class StepRange:
    """The largest step on each axis: sequences in the batch, KV tokens read, tokens fed (batched)."""

    num_seqs: float | None = None
    kv_tokens: float | None = None
    batched_tokens: float | None = None


def measured_range(cal: CalibrationDoc) -> StepRange | None:
    """The steps a calibration measured, as their largest batch, KV and batched tokens (None: it records none)."""
    if not cal.points:
        return None
    return StepRange(
        max(p.num_seqs for p in cal.points),
        max(p.kv_tokens for p in cal.points),
        max(p.batched_tokens for p in cal.points),
    )


def range_notes(
    cal: CalibrationDoc, name: str, reach: StepRange, whose: str = "at full load this deployment's steps reach"
) -> tuple[str, ...]:
    """Said when ``reach`` (a deployment's limits, or a live server's batch) passes the steps the calibration
    measured: its band is the error over those steps, so beyond them the law is extrapolated and its error unknown.
    ``whose`` says what ``reach`` is, e.g. "the live server runs"."""
    measured = measured_range(cal)
    if measured is None:
        return ()
    axes = (
        ("batch", measured.num_seqs, reach.num_seqs),
        ("KV tokens", measured.kv_tokens, reach.kv_tokens),
        ("batched tokens", measured.batched_tokens, reach.batched_tokens),
    )
    beyond = [(label, m, r) for label, m, r in axes if m is not None and r is not None and r > m]
    if not beyond:
        return ()
    per_step = " per step" if any(label != "batch" for label, _, _ in beyond) else ""
    at = _and([f"{label} <= {m:,.0f}" for label, m, _ in beyond]) + per_step
    now = _and([f"{label} {r:,.0f}" for label, _, r in beyond])
    return (
        f"calibration {name} was measured at {at}; {whose} {now}: beyond the calibrated range the step times are "
        f"extrapolated and the +-{cal.speedup_band():.0%} band is not measured",
    )


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
