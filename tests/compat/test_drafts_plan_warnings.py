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
