"""A calibration's hardware against the deployment's GPU and tensor parallelism (``perfmodel.calibration_match``):
nvidia-smi's card names matched to catalog entries whole, so another card of the family is said, not taken for the
deployment's (review: "1 x NVIDIA H100 PCIe" priced an H100 SXM silently, an L40S an L4, any RTX any RTX)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specwise.catalog import resolve_gpu
from specwise.contracts.calibration import CalibratedConfig, CalibrationDoc, StepLaw
from specwise.perfmodel.calibration_match import async_notes, hardware_notes, recorded_gpus, version_notes

DOC = CalibrationDoc(
    run_id="toy", law=StepLaw(1e-7, 5e-3, 0.01), fit_points=10, fit_relative_rms_error=0.1, draft_cost_scale={}
)


def _notes(hardware: str | None, gpu: str, tp: int = 1, recorded_tp: int | None = None) -> tuple[str, ...]:
    cal = replace(DOC, hardware=hardware, tensor_parallel_size=recorded_tp)
    return hardware_notes(cal, "cal.json", resolve_gpu(gpu), tp)


@pytest.mark.parametrize(
    ("hardware", "gpu", "said"),
    [
        ("1 x NVIDIA H100 80GB HBM3", "H100", None),
        ("1 x NVIDIA H100 PCIe", "H100", "on 1 x NVIDIA H100 PCIe (the catalog's H100-PCIe-80GB), not H100-SXM-80GB"),
        ("1 x NVIDIA H100 PCIe", "H100-PCIe", None),
        ("1 x NVIDIA H100 NVL", "H100", "(the catalog's H100-NVL), not H100-SXM-80GB"),
        ("1 x NVIDIA H100 NVL", "H100-NVL", None),
        ("1 x NVIDIA L40S", "L4", "ran on 1 x NVIDIA L40S (the catalog's L40S), not L4:"),
        ("1 x NVIDIA L4", "L4", None),
        ("1 x NVIDIA L4", "L40S", "(the catalog's L4), not L40S"),
        ("1 x NVIDIA GeForce RTX 3090", "RTX-4090", "(the catalog's RTX-3090), not RTX-4090"),
        ("1 x GeForce RTX 3090", "RTX-3090", None),  # older drivers print no "NVIDIA"
        ("1 x NVIDIA A100-SXM4-40GB", "A100-40GB", None),
        ("1 x NVIDIA A100-SXM4-40GB", "A100-80GB", "(the catalog's A100-SXM-40GB), not A100-SXM-80GB"),
        ("1 x NVIDIA A100 80GB PCIe", "A100-80GB", "which specwise cannot match to A100-SXM-80GB"),
        ("1 x NVIDIA H200 NVL", "H200", "which specwise cannot match to H200-SXM-141GB"),
        ("1 x NVIDIA L40", "L40S", "which specwise cannot match to L40S"),
        ("CPU: test, 2 cores", "H100", "ran on CPU: test, 2 cores, not H100-SXM-80GB: the simulated step times"),
    ],
)  # fmt: skip
def test_the_recorded_card_is_matched_whole(hardware: str, gpu: str, said: str | None) -> None:
    notes = _notes(hardware, gpu)
    if said is None:
        assert notes == ()
    else:
        (note,) = notes
        assert note.startswith("calibration cal.json ") and said in note, note
        assert "calibrate on the deployment's GPU" in note


@pytest.mark.parametrize(
    ("hardware", "recorded_tp", "tp", "said"),
    [
        ("1 x NVIDIA H100 80GB HBM3", 1, 2, "ran at tensor parallelism 1, but this deployment runs tp 2"),
        ("8 x NVIDIA H100 80GB HBM3", 2, 2, None),  # recorded: the machine's count does not matter
        ("8 x NVIDIA H100 80GB HBM3", None, 1, "does not record its tensor parallelism and ran on a machine with 8"),
        ("1 x NVIDIA H100 80GB HBM3", None, 4, "machine with 1 GPU(s), but this deployment runs tp 4"),
        ("2 x NVIDIA H100 80GB HBM3", None, 2, None),
        ("CPU: test, 2 cores", None, 2, None),  # no GPU count, no tensor parallelism recorded: nothing to compare
        (None, 2, 1, "ran at tensor parallelism 2, but this deployment runs tp 1"),
    ],
)  # fmt: skip
def test_the_tensor_parallelism_is_compared(
    hardware: str | None, recorded_tp: int | None, tp: int, said: str | None
) -> None:
    notes = [n for n in _notes(hardware, "H100", tp, recorded_tp) if "tensor parallelism" in n]
    if said is None:
        assert notes == []
    else:
        (note,) = notes
        assert said in note, note


def test_the_recorded_hardware_reads_as_bench_launch_writes_it() -> None:
    assert recorded_gpus("2 x NVIDIA H100 80GB HBM3") == (2, "NVIDIA H100 80GB HBM3")
    assert recorded_gpus("CPU: Intel(R) Xeon(R), 16 cores") == (None, "CPU: Intel(R) Xeon(R), 16 cores")
    assert recorded_gpus(" H100-SXM-80GB ") == (None, "H100-SXM-80GB")
    assert _notes("H100-SXM-80GB", "H100") == ()  # a catalog name written by hand is that GPU


V0_V1 = "V0 and V1 schedule speculation differently"


@pytest.mark.parametrize(
    ("measured", "deployed", "method", "said"),
    [
        ("0.6.3", "0.15.1", "ngram", "ran vLLM 0.6.3 (V0), but this deployment runs vLLM 0.15.1 (V1): " + V0_V1),
        ("0.6.3", None, "ngram", "ran vLLM 0.6.3 (V0), but this deployment runs the current vLLM (V1): " + V0_V1),
        ("0.15.1", "0.7.3", "eagle", "ran vLLM 0.15.1 (V1), but this deployment runs vLLM 0.7.3 (V0): " + V0_V1),
        ("0.9.2", "0.15.0", "draft_model", "ran vLLM 0.9.2 (V0), but this deployment runs vLLM 0.15.0 (V1)"),
        ("0.9.2", "0.15.0", "ngram", "ran vLLM 0.9.2, but this deployment runs vLLM 0.15.0: its step times are"),
        ("0.9.2", "0.8.3", "eagle", "ran vLLM 0.9.2 (V1), but this deployment runs vLLM 0.8.3 (V0)"),  # 0.8.3+: V0
        ("0.9.2", "0.8.2", "eagle", "ran vLLM 0.9.2, but this deployment runs vLLM 0.8.2:"),  # 0.8.2's config: V1
        ("0.8.5", "0.9.0", "ngram", "ran vLLM 0.8.5 (V0), but this deployment runs vLLM 0.9.0 (V1)"),
        ("0.8.5", "0.10.1", "eagle3", "ran vLLM 0.8.5 (V0), but this deployment runs vLLM 0.10.1 (V1)"),
        ("0.8.4", "0.7.3", "eagle", "ran vLLM 0.8.4, but this deployment runs vLLM 0.7.3: its step times are"),
        ("0.14.1", "0.15.0", "ngram", "ran vLLM 0.14.1, but this deployment runs vLLM 0.15.0: its step times are"),
        ("0.15.0", "0.15", "ngram", None),  # the same version, written shorter
        ("0.15.1", "0.15", "ngram", None),  # 0.15 names every 0.15.x (review 15: a false warning)
        ("0.15.1+cpu", "v0.15", "ngram", None),
        ("0.14.1", "0.15", "ngram", "ran vLLM 0.14.1, but this deployment runs vLLM 0.15: its step times are"),
        ("v0.15.1rc1", "0.15.1", "ngram", None),
        ("0.6.3", "0.7", "ngram", "ran vLLM 0.6.3, but this deployment runs vLLM 0.7: its step times are"),
        ("0.15.1", None, "ngram", None),  # both V1; which version is current is not known here
        (None, "0.6.3", "ngram", None),  # the calibration's version is not recorded: nothing to compare
        ("unknown", "0.6.3", "ngram", None),
    ],
)  # fmt: skip
def test_the_engine_version_is_compared(
    measured: str | None, deployed: str | None, method: str, said: str | None
) -> None:
    """Review: a calibration of vLLM 0.6.3 priced a V1 scenario without a word. Another version is said; the other
    engine generation is said as such (a separate draft model on 0.8 and 0.9 ran V0)."""
    notes = version_notes(replace(DOC, engine_version=measured), "cal.json", "vllm", deployed, method)
    if said is None:
        assert notes == ()
        return
    (note,) = notes
    assert note.startswith("calibration cal.json ") and said in note, note
    assert (V0_V1 in note) == ("(V0)" in said) and "calibrate on the deployment's vLLM" in note


def test_another_engines_version_is_not_compared() -> None:
    assert version_notes(replace(DOC, engine_version="0.6.3"), "cal.json", "sglang", "0.4.0", "ngram") == ()


def _configs(*methods: str | None) -> tuple[CalibratedConfig, ...]:
    return tuple(CalibratedConfig(m or "baseline", m, None, 0 if m is None else 3) for m in methods)


@pytest.mark.parametrize(
    ("measured", "configs", "deployed", "method", "named"),
    [
        ("0.15.1", (None, "eagle3"), "0.15.1", "eagle3", None),  # all overlapped, as the deployment
        ("0.10.1", (None, "eagle3"), "0.10.1", "eagle3", None),  # all in series, as the deployment
        ("0.20.0", (None, "ngram"), "0.20.0", "ngram", None),  # the deployment's own steps, as they ran (s50a F4)
        ("0.20.0", (None, "ngram", "eagle3"), "0.20.0", "eagle3", "ngram"),  # a serial n-gram beside EAGLE-3
        ("0.10.1", (None, "eagle3"), "0.15.1", "eagle3", "baseline, eagle3"),  # measured in series, run overlapped
        ("0.20.0", ("ngram",), None, "ngram", None),  # no version named: which release is current is not known here
        ("0.20.0", ("ngram",), "0.33.0", "ngram", "ngram"),  # n-gram overlapped from 0.33
        ("0.10.1", (None,), "0.15.1", "eagle3", "baseline"),  # plain steps measured in series, overlapped here
    ],
)
def test_a_calibration_whose_steps_ran_otherwise_overlapped_is_said(
    measured: str, configs: tuple[str | None, ...], deployed: str | None, method: str, named: str | None
) -> None:
    """Review s49a L8: the calibrated law prices steps as they were measured; a configuration whose engine work ran
    in series where the deployment's method overlaps it (or the reverse) is named, once."""
    cal = replace(DOC, engine_version=measured, configs=_configs(*configs))
    notes = async_notes(cal, "cal.json", "vllm", deployed, method)
    if named is None:
        assert notes == ()
        return
    (note,) = notes
    assert note.startswith("calibration cal.json: vLLM " + measured), note
    assert [
        x.split(" (")[0] for x in note.split(" per-step work of ")[1].split(" otherwise")[0].split("), ")
    ] == named.split(", ")
    assert "calibrate with the deployment's method" in note


def test_async_notes_need_a_vllm_version_and_configurations() -> None:
    assert async_notes(replace(DOC, configs=_configs(None, "ngram")), "c", "vllm", "0.20.0", "eagle3") == ()
    assert async_notes(replace(DOC, engine_version="0.20.0"), "c", "vllm", "0.20.0", "eagle3") == ()
    assert async_notes(replace(DOC, engine_version="0.20.0", configs=_configs("ngram")), "c", "sglang", None, "x") == ()
