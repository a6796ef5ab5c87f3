"""Every simulated speedup in ``simulate --json`` carries its band, per row as well as per load (review item)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.contracts.sweep import SweepResult

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "examples_published_fit" / "simulate-llama70b-4xh100.json"


def test_each_row_has_the_band_of_its_decision_metric_speedup_and_reads_back() -> None:
    doc = SweepResult.from_json(json.loads(GOLDEN.read_text()))
    out = doc.to_json()
    assert doc.band > 0
    for row, raw in zip(doc.results, out["results"], strict=True):
        s = row.speedup(doc.decision_metric)
        if s is None or row.k == 0:  # the baseline row is 1 by definition: no band
            assert raw["speedup_band"] is None
        else:
            assert raw["speedup_band"] == pytest.approx([s * (1 - doc.band), s * (1 + doc.band)])
    assert SweepResult.from_json(out).to_json() == out
