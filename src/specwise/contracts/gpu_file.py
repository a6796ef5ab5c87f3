"""A GPU the catalog lacks, from a JSON file: one object with the fields ``specwise gpus --json`` prints for each
catalog card (``memory_bytes``, ``memory_bandwidth_bytes_per_s``, ``dense_bf16_flops_per_s``, ...), so that a listed
card's entry, copied and edited, describes another (an A100 PCIe from the A100 SXM's). ``--gpu FILE.json`` and
``[deployment].gpu = "FILE.json"`` take it; every mistake is one line naming the file and the field."""

from __future__ import annotations

from pathlib import Path

from specwise.contracts.document import DocumentError, Fields, read_json_file
from specwise.errors import SpecError, SpecwiseError
from specwise.specs.gpu import GPU_SEGMENTS, GpuSpec, is_capability

_REQUIRED = ("memory_bytes", "memory_bandwidth_bytes_per_s", "dense_bf16_flops_per_s", "interconnect_bytes_per_s")
_OPTIONAL_RATES = ("dense_fp8_flops_per_s", "dense_int8_ops_per_s")  # null: the card has no such tensor cores
_KEYS = frozenset(
    {"name", "vendor", *_REQUIRED, *_OPTIONAL_RATES, "interconnect", "aliases", "source", "device_names", "segment"}
    | {"compute_capability"}
)


# The smallest plausible value of each rate or size, in the field's unit, and what a value under it likely is: a
# unit slip (80 for 80 GiB, 3.35 for 3.35 TB/s) that would plan a card of 80 bytes or price a step at hours.
# No GPU vLLM runs on has less than 1 GiB, 10 GB/s of memory bandwidth, 1 TFLOP/s or 100 MB/s between GPUs.
_FLOORS = {
    "memory_bytes": (2**30, "bytes (80 GiB = 85899345920)"),
    "memory_bandwidth_bytes_per_s": (1e10, "bytes per second (3.35 TB/s = 3.35e12)"),
    "dense_bf16_flops_per_s": (1e12, "FLOP/s (989 TFLOP/s = 9.89e14)"),
    "dense_fp8_flops_per_s": (1e12, "FLOP/s (1979 TFLOP/s = 1.979e15)"),
    "dense_int8_ops_per_s": (1e12, "operations per second (1979 TOPS = 1.979e15)"),
    "interconnect_bytes_per_s": (1e8, "bytes per second (900 GB/s = 9e11)"),
}

# The largest plausible value of each, in the field's unit, and how it reads. The largest cards in the catalog have
# 192 GiB (MI300X), 7.7 TB/s, 2.25 PFLOP/s dense BF16, 4.5 PFLOP/s FP8 and INT8, 900 GB/s NVLink (B200): each bound
# is 80-450x that, so a card years ahead is still taken, while a typo or unit slip (1e40 bytes, TB/s written as
# bits times 1e12) that would plan 1e29 concurrent sequences or price a step at nothing is refused.
_CEILINGS = {
    "memory_bytes": (2**44, "16 TiB = 17592186044416"),
    "memory_bandwidth_bytes_per_s": (1e15, "1 PB/s = 1e15"),
    "dense_bf16_flops_per_s": (1e18, "1 EFLOP/s = 1e18"),
    "dense_fp8_flops_per_s": (1e18, "1 EFLOP/s = 1e18"),
    "dense_int8_ops_per_s": (1e18, "1 EOPS = 1e18"),
    "interconnect_bytes_per_s": (1e14, "100 TB/s = 1e14"),
}


def looks_like_gpu_file(name: str) -> bool:
    """A ``--gpu`` value meant as a file: a ``.json`` name or a path (``./``, ``/``, ``~``)."""
    return name.lower().endswith(".json") or name.startswith((".", "/", "~"))


def load_gpu_file(path: Path) -> GpuSpec:
    """The GPU ``path`` describes (fields as ``specwise gpus --json`` prints them; ``name`` and the four rates and
    sizes required, the FP8/INT8 rates null or absent for a card without them)."""
    where = str(path)
    try:
        if not path.is_file():
            raise SpecwiseError(f"{where}: no such GPU file (give a catalog GPU, see 'specwise gpus', or a JSON file)")
        f = Fields(read_json_file(path, "GPU file"), where)
        unknown = sorted(set(f.data) - _KEYS)
        if unknown:
            raise f.fail(unknown[0], f"unknown key; a GPU file has: {', '.join(sorted(_KEYS))}")
        name = f.text("name", required=True) or ""
        if not name.strip():
            raise f.fail("name", "empty name")
        f.integer("memory_bytes", required=True)  # a whole number of bytes: 1.5 is refused, not read as 1
        sizes = {key: f.number(key, required=True) or 0.0 for key in _REQUIRED}
        rates = {key: f.number(key) for key in _OPTIONAL_RATES}
        for key, value in [*sizes.items(), *rates.items()]:
            if value is not None:
                _check_range(f, key, value, optional=key in rates)
        return GpuSpec(
            name=name,
            vendor=f.text("vendor", "") or "",
            memory_bytes=int(sizes["memory_bytes"]),
            memory_bandwidth_bytes_per_s=sizes["memory_bandwidth_bytes_per_s"],
            dense_bf16_flops_per_s=sizes["dense_bf16_flops_per_s"],
            dense_fp8_flops_per_s=rates["dense_fp8_flops_per_s"],
            dense_int8_ops_per_s=rates["dense_int8_ops_per_s"],
            interconnect_bytes_per_s=sizes["interconnect_bytes_per_s"],
            interconnect=f.text("interconnect", "") or "",
            aliases=_names(f, "aliases"),
            source=f.text("source", None) or f"GPU file {path.name}",
            device_names=_names(f, "device_names"),
            segment=f.choice("segment", GPU_SEGMENTS) if f.data.get("segment") is not None else None,
            compute_capability=_capability(f),
        )
    except SpecError as exc:  # GpuSpec's own checks, should one pass the ones above
        raise SpecwiseError(f"{where}: {exc}") from None
    except DocumentError as exc:
        raise SpecwiseError(str(exc)) from None


def _check_range(f: Fields, key: str, value: float, *, optional: bool) -> None:
    """``value`` positive and between the field's floor and ceiling (:data:`_FLOORS`, :data:`_CEILINGS`)."""
    if value <= 0:
        raise f.fail(key, f"must be positive, got {value:g}" + (" (null: none)" if optional else ""))
    floor, unit = _FLOORS[key]
    if value < floor:  # review s47b F2: a unit slip gave a card of 80 bytes
        raise f.fail(key, f"{value:g} is too small for any GPU: the field is in {unit}")
    ceiling, shown = _CEILINGS[key]
    if value > ceiling:  # 1e40 bytes planned 5e29 concurrent sequences
        raise f.fail(key, f"{value:g} is too large for any GPU (at most {shown}): the field is in {unit}")


def _names(f: Fields, key: str) -> tuple[str, ...]:
    value = f.data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise f.fail(key, f"expected a list of names, got {value!r}")
    return tuple(value)


def _capability(f: Fields) -> str | None:
    """``compute_capability`` as a string ("9.0"); a JSON number (9.0, 8.9) is taken as its one-decimal text."""
    value = f.data.get("compute_capability")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.1f}"
    text = f.text("compute_capability", None)
    if text is not None and not is_capability(text):  # said here, by the file's field (not GpuSpec's)
        raise f.fail("compute_capability", f"expected major.minor like 9.0, got {text!r}")
    return text
