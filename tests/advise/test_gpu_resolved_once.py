"""advise resolves the scenario's GPU once (:attr:`specwise.advisor.inputs.AdviseInputs.gpu`): a GPU file was read
and checked again for every candidate's engine checks, every scenario build (one per k tried), the serve command,
the launch file, the advice's card name and the nearby evidence -- eight reads for two candidates. Its errors still
name the file and field once, wherever the run first asks for the card."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

import specwise.contracts.gpu_file as gpu_file
from specwise.advisor.decision import advise
from specwise.advisor.inputs import parse_inputs
from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.specs.gpu import GpuSpec

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "advise" / "summarize-low-qps.toml"


def _scenario(gpu: str) -> dict[str, Any]:
    """summarize-low-qps (ngram and a draft model: two candidates) on ``gpu``, its sweep cut short."""
    data = tomllib.loads(EXAMPLE.read_text())
    data["deployment"]["gpu"] = gpu
    data["sweep"] = {"qps": [0.5, 1], "num_requests": 30}
    return data


def test_a_gpu_file_is_read_once_per_advise_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["gpus", "--json"]) == 0
    entry = next(g for g in json.loads(capsys.readouterr().out) if g["name"] == "H100-SXM-80GB")
    (tmp_path / "card.json").write_text(json.dumps({**entry, "name": "my-card", "aliases": [], "device_names": []}))
    reads: list[Path] = []
    real = gpu_file.load_gpu_file

    def counted(path: Path) -> GpuSpec:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(gpu_file, "load_gpu_file", counted)
    inputs = parse_inputs(_scenario("card.json"), "s.toml", tmp_path)
    assert len(inputs.candidates) == 2
    doc = advise(inputs, processes=1)
    assert reads == [tmp_path / "card.json"]
    assert doc.gpu == "my-card" and {c.memory.gpu.name for c in doc.candidates} == {"my-card"}


@pytest.mark.parametrize("engine", [None, "sglang"])  # vLLM asks for the card in its engine checks, SGLang at the build
def test_an_unknown_gpu_is_still_named_once_with_the_file_and_field(tmp_path: Path, engine: str | None) -> None:
    with pytest.raises(SpecwiseError) as err:
        advise(parse_inputs(_scenario("H1000"), "s.toml", tmp_path), processes=1, engine=engine)
    said = str(err.value)
    assert said.startswith("s.toml: [deployment].gpu: unknown GPU 'H1000'") and said.count("[deployment].gpu") == 1
