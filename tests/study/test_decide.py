"""The best speedup at a load the deployment keeps up with only without speculation is a capacity bound, and the
sweep result says so (``capacity_bound_qps``) instead of leaving every view to re-derive it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specwise.executors.local import LocalExecutor
from specwise.scenario import parse_scenario
from specwise.scenario.model import Scenario
from specwise.study.decide import decide
from specwise.study.sweep import CAPACITY_QPS, Cell, run_sweep

LOAD = 2.0  # Llama-3.1-8B on one H100 serves tens of requests/s: 2 QPS is light for the deployment


@pytest.fixture(scope="module")
def cells() -> tuple[Scenario, list[Cell]]:
    sc = parse_scenario(
        {
            "name": "bound",
            "deployment": {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB", "max_model_len": 8192},
            "speculation": {
                "method": "ngram",
                "k": [0, 2, 4],
                "per_position": [0.7, 0.55, 0.45, 0.35],
                "match_rate": 1.0,
            },
            "sweep": {"qps": [LOAD], "num_requests": 60, "seed": 0},
            "workload": [
                {
                    "name": "summarize",
                    "prompt_tokens": {"dist": "lognormal", "mean": 1500, "cv": 0.5, "min": 64, "max": 6000},
                    "output_tokens": {"dist": "lognormal", "mean": 200, "cv": 0.4, "min": 16, "max": 800},
                }
            ],
        }
    )
    return sc, run_sweep(sc, LocalExecutor(1))


def _with_capacity(cells: list[Cell], per_s_by_k: dict[int, float]) -> list[Cell]:
    """The sweep's cells with the saturated runs' capacities replaced (the simulated loads are left as run)."""
    return [
        replace(c, capacity_per_s=per_s_by_k[c.k]) if c.qps == CAPACITY_QPS and c.k is not None else c for c in cells
    ]


def test_every_k_overloaded_while_the_baseline_keeps_up_is_a_bound(cells: tuple[Scenario, list[Cell]]) -> None:
    sc, run = cells
    # the deployment keeps up without speculation (10 req/s > 2 QPS); k=2 serves 1.5, k=4 1.0 req/s: neither does
    sweep = decide(sc, _with_capacity(run, {0: 10.0, 2: 1.5, 4: 1.0}))
    assert sweep.overloaded_qps == () and all(r.overloaded for r in sweep.results if r.qps == LOAD and r.k)
    assert sweep.capacity_bound_qps == (LOAD,)
    assert sweep.best_k_by_qps[LOAD] == 0
    simulated = [sweep.row(LOAD, k).speedup(sweep.decision_metric) or 0.0 for k in (2, 4)]  # type: ignore[union-attr]
    assert sweep.best_speedup_by_qps[LOAD] == pytest.approx(max(min(simulated[0], 1.5 / LOAD), min(simulated[1], 0.5)))
    assert sweep.best_speedup_by_qps[LOAD] <= 1.5 / LOAD


def test_a_k_that_keeps_up_is_a_simulated_best_not_a_bound(cells: tuple[Scenario, list[Cell]]) -> None:
    sc, run = cells
    sweep = decide(sc, _with_capacity(run, {0: 10.0, 2: 1.5, 4: 8.0}))
    assert sweep.capacity_bound_qps == ()
    assert sweep.best_speedup_by_qps[LOAD] == sweep.row(LOAD, 4).speedup(sweep.decision_metric)  # type: ignore[union-attr]


def test_no_bound_where_the_baseline_is_overloaded_too(cells: tuple[Scenario, list[Cell]]) -> None:
    """Above the deployment's own capacity every speedup compares growing queues: overloaded, not a bound."""
    sc, run = cells
    sweep = decide(sc, _with_capacity(run, {0: 1.8, 2: 1.5, 4: 1.0}))
    assert sweep.overloaded_qps == (LOAD,) and sweep.capacity_bound_qps == ()
