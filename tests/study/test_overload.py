"""Loads the deployment cannot sustain (review item A2): the capacity each k serves once saturated, the loads
above it flagged, and no latency speedup quoted there as if it were a steady state."""

from __future__ import annotations

from pathlib import Path

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


def _fixed(arrivals: dict[str, object]) -> dict[str, object]:
    """``vllm bench serve --dataset-name random``'s shape: every request 500 prompt and 100 output tokens."""
    doc = _scenario(400)
    doc["speculation"] = {"method": "ngram", "k": [0, 2], "acceptance": 0.5}
    doc["sweep"] = {"qps": [1.0], "num_requests": 400, "seed": 0, **arrivals}
    doc["workload"] = [{"name": "random", "prompt_tokens": 500, "output_tokens": 100}]
    return doc


def _open_loop_saturated_rate(sc: object, qps: float, n: int) -> float:
    """Completions per second of an open loop far above capacity, between its first and last quarter of finishes."""
    from specwise.sim.workload import admit, generate_requests
    from specwise.study.sweep import _simulate

    rng = np.random.default_rng(7)
    requests = generate_requests(sc.classes, sc.sweep.arrivals.with_rate(qps), n, rng)  # type: ignore[attr-defined]
    result = _simulate(sc, admit(requests, 8192), 0, np.random.default_rng(8))  # type: ignore[arg-type]
    done = np.sort(result.finish_s)
    lo, hi = n // 4, 3 * n // 4
    return float((hi - lo) / (done[hi] - done[lo]))


def test_capacity_of_fixed_lengths_is_what_an_overloaded_open_loop_serves() -> None:
    """Review s46a F3: all users starting at once, requests of one length ran in lock-step cohorts that never mixed
    prefill with decode, and the capacity came out ~28% above what an open loop saturates at (68.7 against 53.5
    req/s), so a load that grows an unbounded queue was not flagged. Spread over a cycle, the closed loop's rate is
    the open loop's to within 5%."""
    from specwise.study.sweep import run_capacity

    sc = parse_scenario(_fixed({"arrivals": "constant"}))
    closed = run_capacity(sc, 0).capacity_per_s
    assert closed is not None
    open_rate = _open_loop_saturated_rate(sc, 1000.0, 3000)
    assert abs(closed / open_rate - 1) < 0.05, (closed, open_rate)


def test_a_short_trace_does_not_cut_the_capacity_run_short(tmp_path: Path) -> None:
    """Review s46a F2: the capacity run drew its requests through the trace, so a 300-time trace made it 300
    requests long and measured 192.5 req/s (Poisson: 68.7); its times are not used, so its capacity is the Poisson
    scenario's, and the scenario says each cell runs the trace's 300 requests."""
    from specwise.study.sweep import run_capacity

    times = np.cumsum(np.random.default_rng(1).exponential(0.25, 300))
    (tmp_path / "t.csv").write_text("\n".join(f"{t:.4f}" for t in times))
    trace = _fixed({"arrivals": "trace", "trace_file": "t.csv"})
    sc_trace = parse_scenario(trace, base_dir=tmp_path)
    sc_poisson = parse_scenario(_fixed({"arrivals": "poisson"}))
    assert run_capacity(sc_trace, 0).capacity_per_s == run_capacity(sc_poisson, 0).capacity_per_s
    assert any("the trace holds 300 arrival times, fewer than num_requests = 400" in w for w in sc_trace.warnings)
