"""Review 16 #5: ``--gpu "NVIDIA H100 80GB HBM3"`` (what nvidia-smi prints, recorded in gpus.json's
``device_names``) was refused as an unknown GPU, as were ``NVIDIA H200`` and ``NVIDIA A100-SXM4-80GB``, while
``NVIDIA L4`` (an alias) was taken; and the suggestions for an H100 SXM name put the H100 NVL, another card, first.
One lookup (:func:`specwise.catalog.resolve_gpu`) takes catalog names, aliases and driver names, for the flags and
the scenario files alike; suggestions are catalog cards ranked by the typed words their names hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.catalog import catalog_gpus, catalog_id, gpu_name, resolve_gpu
from specwise.cli import main
from specwise.errors import SpecwiseError
from tests.conftest import LLAMA_TINY, write_model_dir

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "advise" / "summarize-low-qps.toml"


@pytest.mark.parametrize(
    ("typed", "card"),
    [
        ("NVIDIA H100 80GB HBM3", "H100-SXM-80GB"),
        ("nvidia h100 80gb hbm3", "H100-SXM-80GB"),
        ("NVIDIA H200", "H200-SXM-141GB"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"),
        ("NVIDIA H100 PCIe", "H100-PCIe-80GB"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("AMD Instinct MI300X", "MI300X"),
        ("NVIDIA L4", "L4"),
    ],
)
def test_driver_names_resolve(typed: str, card: str) -> None:
    assert resolve_gpu(typed).name == card and gpu_name(typed) == card


def test_every_recorded_device_name_resolves_to_its_card() -> None:
    for gpu in catalog_gpus().values():
        for name in (gpu.name, *gpu.aliases, *gpu.device_names):
            assert resolve_gpu(name).name == gpu.name, name
            assert resolve_gpu(name.lower()).name == gpu.name, name


def test_plan_memory_takes_the_driver_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "NVIDIA H100 80GB HBM3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu"]["name"] == "H100-SXM-80GB"


def test_a_scenario_takes_the_driver_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``[deployment].gpu`` goes through the same lookup (the build's)."""
    text = EXAMPLE.read_text()
    old = 'gpu = "H100-SXM-80GB"'
    assert old in text
    scenario = tmp_path / "s.toml"
    scenario.write_text(text.replace(old, 'gpu = "NVIDIA H200"').replace("num_requests = 200", "num_requests = 100"))
    assert main(["advise", "--scenario", str(scenario), "--processes", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu"] == "H200-SXM-141GB"


def _suggested(typed: str) -> list[str]:
    with pytest.raises(SpecwiseError) as info:
        resolve_gpu(typed)
    message = str(info.value)
    return message.split("did you mean ", 1)[1].split("?", 1)[0].split(", ") if "did you mean" in message else []


def test_suggestions_rank_the_card_whose_names_hold_the_words_first() -> None:
    """The review's ranking put NVIDIA-H100-NVL first for an H100 SXM name (``h100`` and ``nvidia`` in the alias)."""
    for typed in ("NVIDIA H100 80GB HBM3e", "NVIDIA H100 80G", "NVIDIA H100 80GB HBM3 SXM"):
        near = _suggested(typed)
        assert near[0] == "H100-SXM-80GB", (typed, near)
        assert set(near) <= set(catalog_gpus()) and len(near) == len(set(near))  # one name per card
    assert _suggested("NVIDIA H100 SXM5 94GB")[:2] == ["H100-SXM-80GB", "H100-NVL"]
    assert _suggested("NVIDIA L40") == ["L40S"]
    assert _suggested("NVIDIA GTX 1080") == []


def test_catalog_id_is_the_resolved_id_or_the_name_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert catalog_id("Llama-3.1-70B-Instruct") == "meta-llama/Llama-3.1-70B-Instruct"
    assert catalog_id("QWEN/qwen3-8b") == "Qwen/Qwen3-8B"
    assert catalog_id("no-such-model") == "no-such-model"
    write_model_dir(tmp_path, "Qwen3-8B", LLAMA_TINY)
    monkeypatch.chdir(tmp_path)
    assert catalog_id("Qwen3-8B") == "Qwen3-8B"  # a local directory of that name is what resolve_model loads
