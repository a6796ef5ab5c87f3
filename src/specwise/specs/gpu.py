"""``GpuSpec``: memory, bandwidth and compute of one accelerator (SI units)."""

from __future__ import annotations

from dataclasses import dataclass

from specwise.errors import SpecError

GPU_SEGMENTS = ("datacenter", "consumer")


@dataclass(frozen=True)
class GpuSpec:
    name: str
    vendor: str
    memory_bytes: int
    memory_bandwidth_bytes_per_s: float
    dense_bf16_flops_per_s: float
    dense_fp8_flops_per_s: float | None
    dense_int8_ops_per_s: float | None
    interconnect_bytes_per_s: float
    interconnect: str = ""
    aliases: tuple[str, ...] = ()
    source: str = ""
    device_names: tuple[str, ...] = ()  # what the driver calls the card (nvidia-smi: "NVIDIA H100 80GB HBM3")
    # "datacenter" (data-centre and workstation cards: H100, L4, A6000, MI300X) or "consumer" (GeForce, laptops):
    # which held-back measurements a prediction's error band comes from (perfmodel/profiles.py); None: not said (a
    # GPU file without it), the band over every GPU's measurements
    segment: str | None = "datacenter"
    # NVIDIA's CUDA compute capability ("9.0": Hopper), which vLLM's attention backends test (FlashAttention 3's fp8
    # KV cache needs 9.0: vllm/attention/utils/fa_utils.py ``flash_attn_supports_fp8``); None: AMD, or not said
    compute_capability: str | None = None

    def __post_init__(self) -> None:
        if self.compute_capability is not None and not is_capability(self.compute_capability):
            raise SpecError(
                f"GpuSpec.compute_capability: major.minor like 9.0, got {self.compute_capability!r} ({self.name})"
            )
        if self.segment is not None and self.segment not in GPU_SEGMENTS:
            raise SpecError(f"GpuSpec.segment: one of {', '.join(GPU_SEGMENTS)}, got {self.segment!r} ({self.name})")
        for name in (
            "memory_bytes",
            "memory_bandwidth_bytes_per_s",
            "dense_bf16_flops_per_s",
            "interconnect_bytes_per_s",
        ):
            if getattr(self, name) <= 0:
                raise SpecError(f"GpuSpec.{name}: must be positive ({self.name})")
        for name in ("dense_fp8_flops_per_s", "dense_int8_ops_per_s"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise SpecError(f"GpuSpec.{name}: must be positive or null ({self.name})")

    @property
    def supports_fp8(self) -> bool:
        return self.dense_fp8_flops_per_s is not None


def is_capability(text: str) -> bool:
    major, dot, minor = text.partition(".")
    return bool(dot) and major.isdigit() and minor.isdigit() and len(major) <= 2 and len(minor) == 1
