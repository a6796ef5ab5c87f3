"""A checkpoint whose ``model_type`` transformers does not ship would need its own code (``auto_map``): the profiler
refuses it in one line (exit 2) instead of failing inside transformers (exit 3, a crash report)."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from specwise.errors import SpecwiseError
from specwise.profiler.models import ModelFiles, _check_architecture


def _files(tmp_path: Path, model_type: str) -> ModelFiles:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type, "auto_map": {"AutoModel": "x.X"}}))
    values = {f.name: 0 for f in fields(ModelFiles)}
    return ModelFiles(**{**values, "path": tmp_path, "source": str(tmp_path)})  # type: ignore[arg-type]


def test_an_unknown_architecture_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecwiseError, match=r"model_type 'xcustom' is not an architecture transformers knows"):
        _check_architecture(_files(tmp_path, "xcustom"))


def test_a_known_architecture_passes(tmp_path: Path) -> None:
    _check_architecture(_files(tmp_path, "llama"))
