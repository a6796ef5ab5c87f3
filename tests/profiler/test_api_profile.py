"""``specwise.profile`` (the Python API) on real weights: the document the CLI's --json writes, same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import specwise
from specwise.cli import main


def test_api_profile_is_the_cli_document(smollm2_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = specwise.profile(
        smollm2_dir,
        method="ngram",
        prompts="builtin:summarization",
        max_prompts=1,
        temperatures=(0.0,),
        k=(1, 3),
        max_new_tokens=12,
        threads=1,
    )
    assert [row.k for row in doc.results[0].by_k] == [1, 3]
    argv = ["profile", "--target", str(smollm2_dir), "--method", "ngram", "--prompts", "builtin:summarization"]
    argv += ["--max-prompts", "1", "--temperatures", "0", "--k", "1,3", "--max-new-tokens", "12", "--threads", "1"]
    assert main([*argv, "--json", "-"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert [r["by_k"] for r in cli["results"]] == [r["by_k"] for r in doc.to_json()["results"]]
