"""Judged on goodput, a load where every request meets its SLOs with and without speculation is a tie, exactly 1:
the goodput is the offered load both ways (review s45c: the ratio of two finite runs' spans showed 0.3-3.6% "gains"
and a best k of 8 where every k served every request in time)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "llama70b-4xh100.toml"


def test_every_request_in_time_both_ways_is_a_tie(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--scenario", str(SCENARIO), "--metric", "goodput", "--processes", "1"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    calm = [r for r in doc["results"] if r["qps"] == 0.5 and r["k"]]
    assert calm and all(r["speedup_goodput"] == 1.0 for r in calm)
    assert doc["best_k_by_qps"]["0.5"] == 0
    busy = [r for r in doc["results"] if r["qps"] == 8 and r["k"]]  # requests miss their SLOs here: a real ratio
    assert any(r["speedup_goodput"] not in (None, 1.0) for r in busy)
