"""Whether a calibration file describes the deployment it is asked to price.

A calibrated step-time law (``specwise bench --calibrate`` / ``specwise calibrate``) is one server's steps: one
target model on one engine and one machine. Used for another model or engine it prices the wrong server with a band
that looks precise, so that is refused; another GPU, or a file that does not record its hardware, is said next to
every result (a CPU calibration pricing an L4 deployment is a legitimate what-if, not a GPU prediction). The GPU is
known by the whole name nvidia-smi gives the card (the catalog's ``device_names``: an H100 PCIe is not the H100 SXM,
an L40S not the L4), and another tensor parallelism is said the same way; so is another vLLM version
(:func:`version_notes`), and a file that records no measured steps, whose range therefore cannot be checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from specwise.catalog import gpu_for_device
from specwise.contracts.calibration import CalibratedConfig, CalibrationDoc
from specwise.engines.vllm_versions import VllmVersion, async_scheduling, speculation_engine
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


def hardware_notes(cal: CalibrationDoc, name: str, gpu: GpuSpec, tp: int) -> tuple[str, ...]:
    """What the results cannot claim when the calibration ran elsewhere, or does not say where it ran: another
    catalog GPU, a card the catalog does not know, a CPU, or another tensor parallelism."""
    if not cal.hardware:
        return (
            f"calibration {name} does not record the hardware it ran on (vllm bench serve files do not say): its "
            f"step times are taken to be {gpu.name}'s",
            *_tp_notes(cal, name, None, tp),
        )
    count, device = recorded_gpus(cal.hardware)
    return (*_device_notes(cal.hardware, device, name, gpu), *_tp_notes(cal, name, count, tp))


def version_notes(cal: CalibrationDoc, name: str, engine: str, version: str | None, method: str) -> tuple[str, ...]:
    """What the results cannot claim when the calibrated vLLM is not the deployment's: another version, or -- said
    specifically -- the other engine generation (V0 before 0.8, any method on 0.8, a draft model on 0.9, as
    :func:`specwise.perfmodel.profiles.profile_for` decides it for ``method``). A version written without its patch
    (``0.15``) is every patch of that release: 0.15.1 is not another version than 0.15. A deployment that names no
    version (``[deployment].engine_version`` unset) runs the current vLLM, which is V1: a V0 calibration is said
    against it, another V1 version cannot be (which one is current is not known here). A calibration that records no
    version (or one that is not a version) says nothing: its engine is unknown."""
    if engine != "vllm" or not cal.engine_version:
        return ()
    measured = _version(cal.engine_version)
    if measured is None:
        return ()
    deployed = _version(version) if version else None
    deployed_text = f"vLLM {version}" if version else "the current vLLM"
    if _is_v0(measured, method) != _is_v0(deployed, method):
        gens = ("V0", "V1") if _is_v0(measured, method) else ("V1", "V0")
        return (
            f"calibration {name} ran vLLM {cal.engine_version} ({gens[0]}), but this deployment runs {deployed_text} "
            f"({gens[1]}): V0 and V1 schedule speculation differently (V0 scores drafts by batch expansion and runs no "
            "chunked prefill with speculation), so its step times do not carry; calibrate on the deployment's vLLM "
            "for a prediction of it",
        )
    if deployed is None or _same_release(measured, cal.engine_version, deployed, version or ""):
        return ()
    return (
        f"calibration {name} ran vLLM {cal.engine_version}, but this deployment runs vLLM {version}: its step times "
        "are that version's, not this one's; calibrate on the deployment's vLLM version for a prediction of it",
    )


def async_notes(cal: CalibrationDoc, name: str, engine: str, version: str | None, method: str) -> tuple[str, ...]:
    """A calibrated step law fitted on steps whose engine work ran otherwise than ``method``'s will on the deployment
    (review s49a L8): vLLM's async scheduling hides the engine's per-step work under the forward pass, by default from
    0.14 for plain decoding and EAGLE / MTP, later for a draft model (0.28), n-gram (0.33) and suffix (0.34)
    (:func:`~specwise.engines.vllm_versions.async_scheduling`). The law prices every step as the calibrated run's
    steps ran, so a configuration it measured in series (a CPU n-gram on 0.20) beside one it measured overlapped
    blends the two. Each configuration is set against the same kind of step on the deployment: its baseline against
    the deployment's plain decoding, a speculating one against ``method``'s. Said once, naming the configurations
    that differ; a calibration that records no vLLM version, or no configurations, says nothing, and so does a
    deployment that names no version (as :func:`version_notes`: which release is current is not known here)."""
    if engine != "vllm" or not cal.engine_version or not cal.configs or not version:
        return ()
    measured = _version(cal.engine_version)
    if measured is None:
        return ()
    deployed = _version(version)
    if deployed is None:
        return ()
    plain, speculating = async_scheduling(deployed, None), async_scheduling(deployed, method)

    def here(c: CalibratedConfig) -> bool:  # how the deployment runs the kind of step c measured
        return plain if c.method in (None, "none") else speculating

    other = [c for c in cal.configs if async_scheduling(measured, c.method) != here(c)]
    if not other:
        return ()
    state = {True: "overlapped", False: "in series"}
    where = f"vLLM {version}"
    listed = ", ".join(f"{c.name} ({state[not here(c)]}; {state[here(c)]} here)" for c in other)
    return (
        f"calibration {name}: vLLM {cal.engine_version} ran the engine's per-step work of {listed} otherwise than "
        f"{where} runs it for this deployment (async scheduling overlaps it with the forward pass): the calibrated "
        "step law prices the steps as they were measured, so expect an error up to the engine's per-step work (a few "
        "hundred microseconds to about a millisecond a step); calibrate with the deployment's method on its vLLM for "
        "a prediction of it",
    )


def _version(text: str) -> VllmVersion | None:
    try:
        return VllmVersion.parse(text)
    except SpecwiseError:
        return None


def _same_release(a: VllmVersion, a_text: str, b: VllmVersion, b_text: str) -> bool:
    """Whether two versions name the same release; one written without its patch (``0.15``, as ``--vllm-version``
    and ``[deployment].engine_version`` take it) names every patch of that minor release."""
    if _has_patch(a_text) and _has_patch(b_text):
        return a == b
    return (a.major, a.minor) == (b.major, b.minor)


def _has_patch(text: str) -> bool:
    return re.match(r"\s*v?\d+\.\d+\.\d+", text) is not None


def _is_v0(version: VllmVersion | None, method: str) -> bool:
    """Whether vLLM ``version`` (None: the current one) runs ``method`` on the V0 engine."""
    return speculation_engine(version, method) == "v0"


_GPU_COUNT = re.compile(r"^\s*(\d+)\s*x\s+(\S.*?)\s*$")


def recorded_gpus(hardware: str) -> tuple[int | None, str]:
    """A calibration's hardware as ``bench --launch`` records it (``loadgen.launcher.hardware_description``): the
    GPUs nvidia-smi lists, ``"2 x NVIDIA H100 80GB HBM3"`` -> ``(2, "NVIDIA H100 80GB HBM3")``; anything else (a
    CPU, a name written by hand) -> ``(None, hardware)``."""
    m = _GPU_COUNT.match(hardware)
    return (int(m.group(1)), m.group(2)) if m else (None, hardware.strip())


def _device_notes(hardware: str, device: str, name: str, gpu: GpuSpec) -> tuple[str, ...]:
    consequence = (
        f"the simulated step times are that machine's, not a {gpu.name}'s; calibrate on the deployment's GPU for a "
        "prediction of it"
    )
    if device.upper().startswith("CPU"):  # hardware_description's "CPU: <model>, <n> cores"
        return (f"calibration {name} ran on {hardware}, not {gpu.name}: {consequence}",)
    seen = gpu_for_device(device)
    if seen is None:
        return (
            f"calibration {name} ran on {hardware}, which specwise cannot match to {gpu.name} (no catalog GPU has that "
            f"device name; specwise gpus lists them): if it is another card, {consequence}",
        )
    if seen.name != gpu.name:
        return (f"calibration {name} ran on {hardware} (the catalog's {seen.name}), not {gpu.name}: {consequence}",)
    return ()


def _tp_notes(cal: CalibrationDoc, name: str, count: int | None, tp: int) -> tuple[str, ...]:
    """The calibrated server's tensor parallelism against the deployment's: as recorded, else (a file from before it
    was recorded) the number of GPUs its machine had, which the server may not all have used."""
    recorded = cal.tensor_parallel_size
    if recorded is not None:
        if recorded == tp:
            return ()
        return (
            f"calibration {name} ran at tensor parallelism {recorded}, but this deployment runs tp {tp}: its step "
            f"times are those of the model split over {recorded} GPU(s), not {tp}; calibrate at the deployment's "
            "tensor parallelism for a prediction of it",
        )
    if count is None or count == tp:
        return ()
    return (
        f"calibration {name} does not record its tensor parallelism and ran on a machine with {count} GPU(s), but "
        f"this deployment runs tp {tp}: unless that server split the model over {tp} GPU(s), its step times are "
        "another split's",
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


@dataclass(frozen=True)
class CalibratedRange:
    """The steps a calibration measured (``measured``), under the name the user gave it, and its band: what
    every price beyond them must say (the band is the error over those steps, not beyond)."""

    name: str
    measured: StepRange
    band: float

    def beyond(self, reach: StepRange) -> list[tuple[str, float, float]]:
        """(axis, measured, reached) for each axis on which ``reach`` passes the measured steps."""
        m, r = self.measured, reach
        axes = (
            ("batch", m.num_seqs, r.num_seqs),
            ("KV tokens", m.kv_tokens, r.kv_tokens),
            ("batched tokens", m.batched_tokens, r.batched_tokens),
        )
        return [(label, a, b) for label, a, b in axes if a is not None and b is not None and b > a]

    def notes(self, reach: StepRange, whose: str = "at full load this deployment's steps reach") -> tuple[str, ...]:
        """Said when ``reach`` (a deployment's limits, or a live server's batch) passes the measured steps;
        ``whose`` says what ``reach`` is, e.g. "the live server runs"."""
        beyond = self.beyond(reach)
        if not beyond:
            return ()
        now = _and([f"{label} {r:,.0f}" for label, _, r in beyond])
        return (f"{self._measured_at(beyond)}; {whose} {now}: {self._consequence()}",)

    def sweep_notes(self, reach_by_qps: dict[float, StepRange], capacity: StepRange | None) -> tuple[str, ...]:
        """Said after a QPS sweep when its simulated steps (the largest at each load, over every k; ``capacity``:
        the saturated runs') pass the measured ones: from which load on the results are extrapolated."""
        past = sorted(q for q, r in reach_by_qps.items() if self.beyond(r))
        over_capacity = capacity is not None and bool(self.beyond(capacity))
        if not past and not over_capacity:
            return ()
        beyond = self.beyond(largest([*reach_by_qps.values(), *([capacity] if capacity else [])]))
        where = f"from {past[0]:g} QPS on" if past else "only in the saturated runs that measure capacity"
        if past and over_capacity:
            where += " and in the capacity runs"
        most = _and([f"{label} {r:,.0f}" for label, _, r in beyond])
        return (
            f"{self._measured_at(beyond)}; the simulated steps pass it {where} (up to {most}): {self._consequence()}",
        )

    def _measured_at(self, beyond: list[tuple[str, float, float]]) -> str:
        per_step = " per step" if any(label != "batch" for label, _, _ in beyond) else ""
        at = _and([f"{label} <= {m:,.0f}" for label, m, _ in beyond]) + per_step
        return f"calibration {self.name} was measured at {at}"

    def _consequence(self) -> str:
        band = f"+-{self.band:.0%}"
        return f"beyond the calibrated range the step times are extrapolated and the {band} band is not measured"


def largest(ranges: list[StepRange]) -> StepRange:
    """The largest of each axis over ``ranges`` (None where none knows it)."""

    def top(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return max(known) if known else None

    return StepRange(
        top([r.num_seqs for r in ranges]), top([r.kv_tokens for r in ranges]), top([r.batched_tokens for r in ranges])
    )


def calibrated_range(cal: CalibrationDoc, name: str) -> CalibratedRange | None:
    """The range of ``cal`` (None: it records no steps, so none can be checked: :func:`unknown_range_notes`)."""
    measured = measured_range(cal)
    return CalibratedRange(name, measured, cal.speedup_band()) if measured is not None else None


def unknown_range_notes(cal: CalibrationDoc, name: str) -> tuple[str, ...]:
    """Said with every result of a calibration that records no measured steps (``points``: an edited or stripped
    file), in place of the note :class:`CalibratedRange` gives when the results pass the measured steps: whether they
    do cannot be known."""
    if measured_range(cal) is not None:
        return ()
    return (
        f"calibration {name} does not record the steps it measured: its range is unknown, so whether these results "
        f"are beyond it -- where the step times are extrapolated and the +-{cal.speedup_band():.0%} band is not "
        "measured -- cannot be said",
    )


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
