"""Review E: ``drafts`` said "no warnings" for gemma-2-2b-it beside gemma-2-27b-it on 4 x L4, where ``plan-memory``
warns "the draft costs 78% of max concurrency". A row now carries its memory plan's warnings (summary and reasons)."""

from __future__ import annotations

import json

import pytest

from specwise.cli import main

PAIR = ["--target", "google/gemma-2-27b-it", "--gpu", "L4", "--tp", "4"]


def test_a_rows_summary_carries_plan_memorys_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan-memory", *PAIR, "--draft", "google/gemma-2-2b-it", "--json"]) == 0
    warned = json.loads(capsys.readouterr().out)["warnings"]
    costs = [w for w in warned if w.startswith("the draft costs")]
    assert costs  # the pair plan-memory warns about
    assert main(["drafts", *PAIR, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["drafts"] if isinstance(doc, dict) else doc
    row = next(r for r in rows if r["draft"] == "google/gemma-2-2b-it")
    assert row["summary"] != "no warnings" and costs[0].split(" (", 1)[0] in row["summary"]
    assert f"warn: {costs[0]}" in row["reasons"]


def test_an_eagle_heads_shared_embedding_reads_as_a_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    """Review s59 F1: cut at its first " (", the warning read "...; the EAGLE head's input embedding"."""
    from specwise.compat.drafts import _without_figures

    assert main(["drafts", "--target", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100-SXM-80GB", "--tp", "4",
                 "--json"]) == 0  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    rows = doc["drafts"] if isinstance(doc, dict) else doc
    summaries = [r["summary"] for r in rows if "EAGLE head's input embedding" in r["summary"]]
    assert summaries
    for s in summaries:
        assert "input embedding is counted as the target's: vLLM V1 and SGLang share it" in s
        assert not s.endswith("input embedding") and "(" not in s
    assert _without_figures("the draft costs 78% of max concurrency (4 -> 1 sequences of 8192 tokens)") == (
        "the draft costs 78% of max concurrency"
    )
    nested = "a (b (c) d) e: f (g); h"
    assert _without_figures(nested) == "a e: f"
