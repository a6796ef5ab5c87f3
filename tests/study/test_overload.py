"""Loads the deployment cannot sustain (review item A2): the capacity each k serves once saturated, the loads
above it flagged, and no latency speedup quoted there as if it were a steady state."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console

from specwise.contracts.sweep import SweepResult
from specwise.executors.local import LocalExecutor
from specwise.report.sim import render_sweep
from specwise.scenario import parse_scenario
from specwise.sim.saturation import capacity_per_s, overloaded
from specwise.study.decide import decide
from specwise.study.sweep import run_sweep

# Llama-3.1-8B on one H100 with 1,500-token prompts: ~tens of requests/s at most, so 2 QPS is light and 400 QPS
# is an order of magnitude beyond it.
LIGHT, HEAVY = 2.0, 400.0


def _scenario(num_requests: int) -> dict[str, object]:
    return {
        "name": "overload",
        "deployment": {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB", "max_model_len": 8192},
        "speculation": {"method": "ngram", "k": [0, 3], "per_position": [0.7, 0.55, 0.45], "match_rate": 1.0},
        "sweep": {"qps": [LIGHT, HEAVY], "num_requests": num_requests, "seed": 0},
        "workload": [
            {
                "name": "summarize",
                "prompt_tokens": {"dist": "lognormal", "mean": 1500, "cv": 0.5, "min": 64, "max": 6000},
                "output_tokens": {"dist": "lognormal", "mean": 200, "cv": 0.4, "min": 16, "max": 800},
            }
        ],
    }


def _sweep(num_requests: int) -> SweepResult:
    sc = parse_scenario(_scenario(num_requests))
    return decide(sc, run_sweep(sc, LocalExecutor(1)))


@pytest.fixture(scope="module")
def sweep() -> SweepResult:
    return _sweep(200)


def test_capacity_is_the_completion_rate_between_the_first_and_last_cohorts() -> None:
    # 10 users; a burst of 10 at t=0..0.5 s, then 2 completions/s steady, then a drain of 10 at the end.
    steady = 20.0 + np.arange(100) / 2.0
    finish = np.concatenate([np.linspace(0.0, 0.5, 10), steady, 80.0 + np.linspace(0.0, 30.0, 10)])
    assert capacity_per_s(finish, users=10) == pytest.approx(2.0)
    assert overloaded(2.5, 2.0) and not overloaded(1.5, 2.0) and not overloaded(1e9, None)


def test_the_heavy_load_is_flagged_and_the_light_one_is_not(sweep: SweepResult) -> None:
    assert sweep.overloaded_qps == (HEAVY,)
    capacity = sweep.sustainable_qps
    assert capacity is not None and LIGHT < capacity < HEAVY
    assert {r.qps for r in sweep.results if r.overloaded} == {HEAVY}
    doc = sweep.to_json()
    assert doc["overloaded_qps"] == [HEAVY] and doc["sustainable_qps"] == capacity
    assert set(doc["capacity_per_s_by_k"]) == {"0", "3"}
    back = SweepResult.from_json(doc)
    assert back.overloaded_qps == (HEAVY,) and back.capacity_per_s_by_k == sweep.capacity_per_s_by_k


def test_capacity_does_not_depend_on_how_many_requests_are_simulated(sweep: SweepResult) -> None:
    """The review's symptom: E2E at an overloaded load grows with num_requests; the capacity and the flag do not."""
    longer = _sweep(600)
    assert longer.capacity_per_s_by_k == sweep.capacity_per_s_by_k
    assert longer.overloaded_qps == sweep.overloaded_qps
    e2e = [s.baseline_at(HEAVY).e2e_p50_s for s in (sweep, longer)]  # type: ignore[union-attr]
    assert e2e[1] > 1.5 * e2e[0]  # what the flag is for: a latency that is not a steady state


def test_the_table_marks_overloaded_cells_and_says_the_capacity(sweep: SweepResult) -> None:
    out = Console(width=120, record=True, color_system=None)
    render_sweep(sweep, out)
    text = out.export_text()
    rows = {cells[0]: cells for line in text.splitlines() if (cells := line.replace("│", " ").split())}
    heavy, light = rows[f"{HEAVY:g}"], rows[f"{LIGHT:g}"]
    assert [c.endswith("*") for c in heavy] == [False, True, True, False]  # the baseline's TPOT and k=3's speedup
    assert not any("*" in c for c in light)
    assert f"the deployment saturates at ~{sweep.sustainable_qps:.1f} QPS without speculation" in text
    assert f"overloaded at {HEAVY:g} QPS" in text and "depend on num_requests" in text
