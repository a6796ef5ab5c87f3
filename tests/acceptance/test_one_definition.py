"""Acceptance rate and mean acceptance length are defined once (``specwise.acceptance.counts``, vLLM's
definitions): the simulator's summary, the load generator's progress rate and llama.cpp's reading call that
definition instead of dividing the counts themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from specwise.acceptance.counts import SpecDecodeCounts, acceptance_rate, mean_acceptance_length

SRC = Path(__file__).resolve().parents[2] / "src" / "specwise"


def _name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def test_no_module_outside_acceptance_divides_accepted_by_drafted() -> None:
    copies = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("acceptance/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
                continue
            if "accept" in _name(node.left) and "draft" in _name(node.right):
                copies.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    assert copies == []


@pytest.mark.parametrize(
    ("drafts", "draft_tokens", "accepted", "rate", "al"),
    [
        (34, 136, 103, 103 / 136, 1 + 103 / 34),
        (0, 0, 0, None, None),
        (0.0, 0.0, 0.0, None, None),
        (-1, -4, 0, None, None),  # nothing to divide by is None, never a number from a negative count
    ],
)
def test_the_definition(drafts: float, draft_tokens: float, accepted: float, rate: float, al: float) -> None:
    assert acceptance_rate(accepted, draft_tokens) == rate
    assert mean_acceptance_length(accepted, drafts) == al
    counts = SpecDecodeCounts(drafts, draft_tokens, accepted, ())
    assert (counts.acceptance_rate, counts.mean_acceptance_length) == (rate, al)
