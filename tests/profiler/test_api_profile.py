"""``specwise.profile`` (the Python API) on real weights: the document the CLI's --json writes, same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import specwise
from specwise.cli import main
from specwise.contracts.document import json_safe


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
    assert cli["prompts"] == doc.to_json()["prompts"]  # the cut is recorded by both (max_prompt_tokens, truncated)
    assert cli["prompts"]["max_prompt_tokens"] == 1024
    # the phases are timed as the CLI times them (review s46d: the API reported 0.0 for each after loading)
    timing = doc.to_json()["timing_s"]
    assert set(timing) == set(cli["timing_s"]) and timing["continuation_s"] > 0


@pytest.mark.slow  # the verification loop on the CPU: ~50 s
def test_api_profile_takes_the_chat_template_and_verification(
    smollm2_dir: Path, smollm2_draft24: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``chat_template`` and ``verify_*`` are ``--chat-template`` and ``--verify*``: the same document."""
    doc = specwise.profile(
        smollm2_dir,
        smollm2_draft24,
        prompts="builtin:chat",
        max_prompts=1,
        temperatures=(0.0,),
        k=(2,),
        max_new_tokens=8,
        threads=1,
        chat_template="auto",
        verify_temperatures=(0.0,),
        verify_k=2,
    )
    got = json.loads(json.dumps(json_safe(doc.to_json())))  # as --json writes it (NaN as null)
    assert got["prompts"]["chat_template"]["used"] == "model"  # rendered with the target's own template
    argv = ["profile", "--target", str(smollm2_dir), "--draft", str(smollm2_draft24), "--prompts", "builtin:chat"]
    argv += ["--max-prompts", "1", "--temperatures", "0", "--k", "2", "--max-new-tokens", "8", "--threads", "1"]
    argv += ["--chat-template", "auto", "--verify", "--verify-temperatures", "0", "--verify-k", "2"]
    assert main([*argv, "--json", "-"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert cli["prompts"]["chat_template"] == got["prompts"]["chat_template"]
    assert [r["by_k"] for r in cli["results"]] == [r["by_k"] for r in got["results"]]
    strip = ("speculative_wall_s", "autoregressive_wall_s", "measured_speedup")  # wall clock: differs run to run
    rows = [[{k: v for k, v in row.items() if k not in strip} for row in d["verification"]] for d in (cli, got)]
    assert rows[0] == rows[1] and rows[0]
