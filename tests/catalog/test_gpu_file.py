"""Review E: a GPU outside the catalog had no way forward. A JSON file of its specs (one ``specwise gpus --json``
entry, edited) is taken by ``--gpu`` and ``[deployment].gpu``; every mistake is one line naming the file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.catalog import catalog_gpus, resolve_gpu
from specwise.cli import main
from specwise.errors import SpecwiseError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama70b-4xh100.toml"


def _a100_pcie(tmp_path: Path) -> Path:
    entry = {
        "name": "A100-PCIe-80GB",
        "vendor": "nvidia",
        "memory_bytes": 85899345920,
        "memory_bandwidth_bytes_per_s": 1.935e12,
        "dense_bf16_flops_per_s": 312e12,
        "dense_fp8_flops_per_s": None,
        "dense_int8_ops_per_s": 624e12,
        "interconnect_bytes_per_s": 32e9,
        "interconnect": "PCIe 4.0 x16",
        "aliases": [],
        "device_names": ["NVIDIA A100 80GB PCIe"],
    }
    path = tmp_path / "a100-pcie.json"
    path.write_text(json.dumps(entry))
    return path


def test_a_catalog_entry_written_out_reads_back_as_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "--json"]) == 0
    entry = next(g for g in json.loads(capsys.readouterr().out) if g["name"] == "L40S")
    path = tmp_path / "l40s.json"
    path.write_text(json.dumps(entry))
    assert resolve_gpu(str(path)) == catalog_gpus()["L40S"]


def test_a_gpu_file_says_its_segment_and_a_consumer_card_keeps_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``segment`` (which held-back measurements the error band comes from) reads back from ``gpus --json``; a file
    without it says no segment (review H #5: it had silently taken the data-centre cards' narrower band)."""
    assert main(["gpus", "--json"]) == 0
    entry = next(g for g in json.loads(capsys.readouterr().out) if g["name"] == "RTX-4090")
    assert entry["segment"] == "consumer"
    path = tmp_path / "4090.json"
    path.write_text(json.dumps(entry))
    assert resolve_gpu(str(path)) == catalog_gpus()["RTX-4090"]
    assert resolve_gpu(str(_a100_pcie(tmp_path))).segment is None


def test_plan_memory_and_simulate_take_a_gpu_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _a100_pcie(tmp_path)
    capsys.readouterr()
    assert main(["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu"]["name"] == "A100-PCIe-80GB"
    import specwise

    # the API takes the file as a Path too, as it takes a model's directory (review s46d)
    assert specwise.plan_memory("Qwen/Qwen3-8B", path).gpu.name == "A100-PCIe-80GB"
    text = EXAMPLE.read_text()
    scenario = tmp_path / "s.toml"
    gpu_line = next(line for line in text.splitlines() if line.startswith("gpu ="))
    scenario.write_text(text.replace(gpu_line, 'gpu = "a100-pcie.json"'))  # relative to the scenario
    assert main(["simulate", "--scenario", str(scenario), "--num-requests", "40", "--json", "--processes", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu"] == "A100-PCIe-80GB"


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"memory_bytes": None}, "memory_bytes: missing"),
        ({"memory_bytes": -5}, "memory_bytes: must be positive"),
        ({"memory_bytes": 1.5}, "memory_bytes: expected an integer"),
        ({"dense_bf16_flops_per_s": "312T"}, "dense_bf16_flops_per_s: expected a finite number"),
        ({"name": ""}, "name: empty name"),
        ({"hbm": 3}, "hbm: unknown key"),
        ({"aliases": "A100"}, "aliases: expected a list of names"),
        ({"segment": "gaming"}, "segment: expected one of datacenter, consumer, got 'gaming'"),
        # unit slips (review s47b F2): a card of 80 bytes, a step priced at 3.35 B/s
        ({"memory_bytes": 80}, "memory_bytes: 80 is too small for any GPU: the field is in bytes (80 GiB ="),
        ({"memory_bandwidth_bytes_per_s": 3.35}, "memory_bandwidth_bytes_per_s: 3.35 is too small for any GPU"),
        (
            {"dense_bf16_flops_per_s": 312},
            "dense_bf16_flops_per_s: 312 is too small for any GPU: the field is in FLOP/s",
        ),
        ({"dense_fp8_flops_per_s": 624}, "dense_fp8_flops_per_s: 624 is too small"),
        ({"interconnect_bytes_per_s": 600}, "interconnect_bytes_per_s: 600 is too small"),
        # and the other way: 1e40 bytes planned 5e29 concurrent sequences (exit 0)
        (
            {"memory_bytes": 10**40},
            "memory_bytes: 1e+40 is too large for any GPU (at most 16 TiB = 17592186044416): the field is in bytes",
        ),
        ({"memory_bandwidth_bytes_per_s": 3.35e18}, "memory_bandwidth_bytes_per_s: 3.35e+18 is too large for any GPU"),
        ({"dense_bf16_flops_per_s": 1e300}, "dense_bf16_flops_per_s: 1e+300 is too large for any GPU"),
        ({"dense_fp8_flops_per_s": 2e21}, "dense_fp8_flops_per_s: 2e+21 is too large"),
        ({"dense_int8_ops_per_s": 2e21}, "dense_int8_ops_per_s: 2e+21 is too large"),
        ({"interconnect_bytes_per_s": 9e17}, "interconnect_bytes_per_s: 9e+17 is too large"),
        ({"compute_capability": "nine"}, "compute_capability: expected major.minor like 9.0, got 'nine'"),
    ],
)
def test_a_bad_gpu_file_is_one_line_naming_the_field(tmp_path: Path, edit: dict[str, object], said: str) -> None:
    path = _a100_pcie(tmp_path)
    entry = {**json.loads(path.read_text()), **edit}
    path.write_text(json.dumps({k: v for k, v in entry.items() if v is not None or k != "memory_bytes"}))
    with pytest.raises(SpecwiseError) as err:
        resolve_gpu(str(path))
    assert str(err.value).startswith(str(path)) and said in str(err.value) and "\n" not in str(err.value)


def test_an_unknown_card_is_told_about_gpu_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "NVIDIA A100 80GB PCIe"]) == 2
    assert "a JSON file of its specs, as 'specwise gpus --json' prints each" in capsys.readouterr().err
    assert main(["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "missing.json"]) == 2
    assert "missing.json: no such GPU file" in capsys.readouterr().err


def test_advise_names_the_card_not_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review G: advise's headline and JSON said 'on 4 x /path/to/a100-pcie.json'."""
    _a100_pcie(tmp_path)
    example = EXAMPLE.parent / "advise" / "summarize-low-qps.toml"
    text = example.read_text()
    gpu_line = next(line for line in text.splitlines() if line.startswith("gpu ="))
    scenario = tmp_path / "adv.toml"
    scenario.write_text(text.replace(gpu_line, 'gpu = "a100-pcie.json"'))
    assert main(["advise", "--scenario", str(scenario), "--processes", "1", "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["gpu"] == "A100-PCIe-80GB"


@pytest.mark.parametrize(("given", "read"), [("9.0", "9.0"), (8.9, "8.9"), (10, "10.0"), (None, None)])
def test_the_compute_capability_is_read_as_text(given: object, read: str | None, tmp_path: Path) -> None:
    """vLLM's attention backends test it (an fp8 KV cache in FlashAttention 3: 9.0); a JSON number is taken too."""
    entry = json.loads(_a100_pcie(tmp_path).read_text()) | {"compute_capability": given}
    path = tmp_path / "cc.json"
    path.write_text(json.dumps(entry))
    assert resolve_gpu(str(path)).compute_capability == read


@pytest.mark.parametrize("given", ["nine", "9", "9.0.1", True])
def test_a_malformed_compute_capability_is_one_line_naming_the_field(given: object, tmp_path: Path) -> None:
    entry = json.loads(_a100_pcie(tmp_path).read_text()) | {"compute_capability": given}
    path = tmp_path / "cc.json"
    path.write_text(json.dumps(entry))
    with pytest.raises(SpecwiseError, match="compute_capability") as err:
        resolve_gpu(str(path))
    assert "GpuSpec" not in str(err.value)  # the file's field, not the internal class's


def test_every_catalog_card_is_within_a_gpu_files_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The floors and ceilings are generous: each card of the catalog, written out, reads back as itself."""
    assert main(["gpus", "--json"]) == 0
    for entry in json.loads(capsys.readouterr().out):
        path = tmp_path / "card.json"
        path.write_text(json.dumps(entry))
        assert resolve_gpu(str(path)) == catalog_gpus()[entry["name"]]


def test_every_nvidia_catalog_card_says_its_compute_capability() -> None:
    for gpu in catalog_gpus().values():
        assert (gpu.compute_capability is None) == (gpu.vendor == "amd"), gpu.name
