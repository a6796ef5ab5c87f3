"""``capacity_bound_qps`` (the loads whose best speedup is capacity / load, an upper bound) reads back from
``simulate --json``, and a document written before the field existed still loads, with none."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from specwise.contracts.sweep import SweepResult

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "examples" / "simulate-llama70b-4xh100.json"


def test_the_bound_loads_read_back() -> None:
    doc = SweepResult.from_json(json.loads(GOLDEN.read_text()))
    bound = replace(doc, capacity_bound_qps=doc.qps[:2])
    out = bound.to_json()
    assert out["capacity_bound_qps"] == list(doc.qps[:2])
    back = SweepResult.from_json(json.loads(json.dumps(out)))
    assert back.capacity_bound_qps == doc.qps[:2] and back.to_json() == out


def test_a_document_without_the_field_has_no_bound() -> None:
    raw = json.loads(GOLDEN.read_text())
    raw.pop("capacity_bound_qps", None)
    assert SweepResult.from_json(raw).capacity_bound_qps == ()
