"""Review D #3: every catalog model says where its figures come from. ``models --json`` gave ``"source": ""`` for
the heads with no published parameter count (their provenance is the catalog's ``config_source``), and ``inspect``
showed only ``"source": "catalog"``, never the text the README promises it shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import specwise
from specwise.catalog import catalog_models
from specwise.cli import main
from tests.conftest import LLAMA_TINY, write_model_dir

HEADS = (
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B",
    "yuhuili/EAGLE-LLaMA3.1-Instruct-8B",
    "AngelSlim/Qwen3-8B_eagle3",
)


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> object:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_catalog_model_has_a_source(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json(capsys, ["models"])
    assert isinstance(rows, list) and len(rows) == len(catalog_models())
    assert [r["id"] for r in rows if not r["source"].strip()] == []
    sources = {r["id"]: r["source"] for r in rows}
    assert sources["AngelSlim/Qwen3-8B_eagle3"].startswith("AngelSlim's EAGLE-3 draft config for Qwen3-8B")
    assert sources["yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"].startswith("config.json of each Hugging Face repository")
    # a published count's source still comes first
    assert sources["Qwen/Qwen3-8B"] == "model card 'Number of Parameters' (8.2B)"


@pytest.mark.parametrize("model", ["Qwen/Qwen3-8B", *HEADS])
def test_inspect_shows_a_catalog_models_source(model: str, capsys: pytest.CaptureFixture[str]) -> None:
    source = next(r["source"] for r in _json(capsys, ["models"]) if r["id"] == model)  # type: ignore[union-attr]
    doc = _json(capsys, ["inspect", model])
    assert isinstance(doc, dict) and doc["source"] == "catalog" and doc["catalog_source"] == source
    assert specwise.inspect(model).to_json() == doc
    assert main(["inspect", model, "--wide"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("│ source "))
    assert source in row


def test_a_local_model_has_no_catalog_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, ["inspect", str(write_model_dir(tmp_path, "tiny", LLAMA_TINY))])
    assert isinstance(doc, dict) and doc["catalog_source"] is None and doc["source"].startswith("hf-config:")
    assert main(["inspect", str(tmp_path / "tiny")]) == 0
    assert "│ source " not in capsys.readouterr().out
