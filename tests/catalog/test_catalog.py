from __future__ import annotations

import pytest

from specwise.catalog import catalog_gpus, catalog_models, resolve_gpu, resolve_model
from specwise.errors import SpecwiseError


def test_every_catalog_entry_parses_and_has_roles() -> None:
    for model_id, entry in catalog_models().items():
        spec = resolve_model(model_id)
        assert spec.name == model_id and spec.source == "catalog"
        assert entry.roles and set(entry.roles) <= {"target", "draft"}
        assert spec.total_params > 0 and spec.kv_bytes_per_token(2.0) > 0


def test_resolution_is_forgiving_about_case_and_org() -> None:
    assert resolve_model("qwen/qwen3-8b").name == "Qwen/Qwen3-8B"
    assert resolve_model("Qwen3-8B").name == "Qwen/Qwen3-8B"


def test_unknown_model_suggests_near_names() -> None:
    with pytest.raises(SpecwiseError, match=r"did you mean Qwen/Qwen3-8B"):
        resolve_model("Qwen/Qwen3-8b-instruct")
    with pytest.raises(SpecwiseError, match=r"did you mean meta-llama/Llama-3\.[13]-70B-Instruct"):
        resolve_model("llama-70b")
    with pytest.raises(SpecwiseError, match="specwise models"):
        resolve_model("zzzz-unknown")


def test_gpu_aliases_and_fields() -> None:
    assert resolve_gpu("h100").name == "H100-SXM-80GB"
    assert resolve_gpu("H200").name == "H200-SXM-141GB"
    assert resolve_gpu("a100_80gb").name == "A100-SXM-80GB"
    for gpu in catalog_gpus().values():
        assert gpu.memory_bytes >= 8 * 2**30 and gpu.memory_bandwidth_bytes_per_s > 1e11 and gpu.source
    assert not resolve_gpu("A100-80GB").supports_fp8 and resolve_gpu("H100").supports_fp8
    with pytest.raises(SpecwiseError, match="did you mean"):
        resolve_gpu("H10")


def test_gpus_are_found_by_the_name_their_driver_reports() -> None:
    """nvidia-smi's names (``device_names``): whole names, so no card is taken for another of its family."""
    from specwise.catalog import gpu_for_device

    def name(device: str) -> str | None:
        gpu = gpu_for_device(device)
        return gpu.name if gpu is not None else None

    assert name("NVIDIA H100 80GB HBM3") == "H100-SXM-80GB" and name("NVIDIA H100 PCIe") == "H100-PCIe-80GB"
    assert name("NVIDIA H100 NVL") == "H100-NVL" and name("NVIDIA H200") == "H200-SXM-141GB"
    assert name("NVIDIA L4") == "L4" and name("NVIDIA L40S") == "L40S" and name("NVIDIA L40") is None
    assert name("NVIDIA A100-SXM4-40GB") == "A100-SXM-40GB" and name("NVIDIA A100-SXM4-80GB") == "A100-SXM-80GB"
    assert name("NVIDIA A100 80GB PCIe") is None and name("NVIDIA A100-PCIE-40GB") is None  # not catalog entries
    assert name("NVIDIA GeForce RTX 4090") == "RTX-4090" and name("GeForce RTX 3090") == "RTX-3090"
    assert name("NVIDIA RTX A6000") == "A6000" and name("AMD Instinct MI300X") == "MI300X"
    assert name("NVIDIA A10") is None and name("NVIDIA A10G") == "A10G"
    assert all(gpu.device_names for gpu in catalog_gpus().values())
