"""Advice.negative: the one rule for "the answer is no" (disable, unsupported), which ``specwise advise`` exits 1
on; a property, never in the JSON document."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specwise.contracts.advice import NEGATIVE_DECISIONS, Advice

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "examples" / "advise-draft-does-not-fit.json"


@pytest.mark.parametrize(
    ("decision", "negative"),
    [("enable", False), ("enable_below", False), ("measure_first", False), ("disable", True), ("unsupported", True)],
)
def test_negative_is_disable_or_unsupported(decision: str, negative: bool) -> None:
    doc = replace(Advice.from_json(json.loads(GOLDEN.read_text())), decision=decision)
    assert doc.negative is negative and (decision in NEGATIVE_DECISIONS) is negative
    assert "negative" not in doc.to_json()
