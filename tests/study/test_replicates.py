"""The operating load's replicates (study/replicates.py): each replicate's paired speedup is the sweep's cell run
as that replicate of the seed (streams of its own, study/sweep.random_key), the sweep's own draw comes first, and
nothing is replicated where there is nothing to replicate; each k's capacity over several saturated runs."""

from __future__ import annotations

from dataclasses import replace

from specwise.contracts.sweep import SweepResult
from specwise.scenario import parse_scenario
from specwise.scenario.model import Scenario
from specwise.study.decide import decide, sweep_row
from specwise.study.replicates import (
    CAPACITY_NEAR,
    capacity_replicates,
    replicate_jobs,
    sampling_noise,
    with_mean,
)
from specwise.study.sweep import CAPACITY_QPS, random_key, replicate_of, run_capacity, run_cell, run_sweep, sweep_jobs


def small_scenario(
    seed: int = 3, qps: tuple[float, ...] = (4.0,), num_requests: int = 60, name: str = "replicates"
) -> Scenario:
    """A small n-gram scenario on Llama-3.1-8B (k 0 and 3) for the replicate and capacity tests here and in
    tests/advise (test_capacity_interval, test_edge_replicates)."""
    return parse_scenario(
        {
            "name": name,
            "deployment": {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB", "max_model_len": 4096},
            "speculation": {"method": "ngram", "acceptance": 0.6, "k": [0, 3]},
            "sweep": {"qps": list(qps), "num_requests": num_requests, "seed": seed},
            "workload": [
                {
                    "name": "chat",
                    "prompt_tokens": {"dist": "lognormal", "mean": 600, "cv": 0.5, "min": 16, "max": 3000},
                    "output_tokens": {"dist": "lognormal", "mean": 150, "cv": 0.6, "min": 8, "max": 800},
                }
            ],
        }
    )


def test_a_replicate_has_streams_of_its_own() -> None:
    """Replicate 0 is the sweep's own keys; replicate r of seed s is neither seed s + r nor another replicate."""
    sc = small_scenario(seed=3)
    assert random_key(sc, 1, 4_000_000) == [3, 1, 4_000_000]
    keys = {tuple(random_key(replicate_of(sc, r), 1, 4_000_000)) for r in range(1, 5)}
    others = {tuple(random_key(small_scenario(seed=s), 1, 4_000_000)) for s in range(0, 10)}
    assert len(keys) == 4 and not keys & others


def test_each_replicate_is_the_sweep_cell_run_as_it_paired_with_plain_decoding() -> None:
    sc = small_scenario(seed=3)
    sim = decide(sc, run_sweep(sc))
    noise = sampling_noise(sc, sim, 4.0, 3, 3)
    assert noise is not None and noise.seed == 3 and noise.replicates == (0, 1, 2) and noise.num_requests == 60
    row = sim.row(4.0, 3)
    assert row is not None and noise.speedups[0] == row.speedup("e2e")  # the sweep's own draw
    for r, value in zip(noise.replicates[1:], noise.speedups[1:], strict=True):
        other = replicate_of(sc, r)
        base, spec = run_cell(other, 4.0, 0), run_cell(other, 4.0, 3)
        assert value == sweep_row(spec, base.summary).speedup("e2e")
    assert len(set(noise.speedups)) == 3  # independent draws, not one repeated
    seed4 = decide(small_scenario(seed=4), run_sweep(small_scenario(seed=4)))
    next_seed = seed4.row(4.0, 3)
    assert next_seed is not None and next_seed.speedup("e2e") not in noise.speedups  # seed 4 is not replicate 1


def test_the_jobs_are_the_next_replicates_plain_decoding_first() -> None:
    jobs = replicate_jobs(small_scenario(seed=7), 4.0, 3, 4)
    assert [(j[0].sweep.seed, j[0].sweep.replicate, j[1], j[2]) for j in jobs] == [
        (7, r, 4.0, k) for r in (1, 2, 3) for k in (0, 3)
    ]


def test_nothing_is_replicated_for_one_run_or_a_k_not_simulated() -> None:
    sc = small_scenario()
    sim = decide(sc, run_sweep(sc))
    assert sampling_noise(sc, sim, 4.0, 3, 1) is None
    assert sampling_noise(sc, sim, 4.0, 5, 5) is None  # no k = 5 cell in the sweep


def test_the_mean_becomes_the_load_s_best_speedup_and_its_k_where_it_pays() -> None:
    """What the schedule, the rules and the document read at the operating load is the replicates' mean (the rows
    keep their one draw); a mean of 1 or less is k = 0 there, as decide has it."""
    from specwise.contracts.advice import SamplingNoise

    sc = small_scenario()
    sim = decide(sc, run_sweep(sc))
    paying = with_mean(sim, SamplingNoise(4.0, 3, 60, 3, (0, 1), (1.4, 1.6)))
    assert paying.best_speedup_by_qps[4.0] == 1.5 and paying.best_k_by_qps[4.0] == 3
    assert paying.results == sim.results
    losing = with_mean(sim, SamplingNoise(4.0, 3, 60, 3, (0, 1), (0.9, 0.95)))
    assert losing.best_speedup_by_qps[4.0] == 0.925 and losing.best_k_by_qps[4.0] == 0


def test_each_k_s_capacity_is_the_mean_of_its_saturated_runs() -> None:
    """A saturated run per replicate and k (as advise's capacity_replicates adds them), each the one-run sweep's
    at that replicate; decide takes the k's capacity as their mean, and the result says how many (its JSON too, and
    reads it back)."""
    sc = small_scenario(seed=3)
    jobs = sweep_jobs(sc)
    assert [(j[0].sweep.replicate, j[2]) for j in jobs if j[1] == CAPACITY_QPS] == [(0, 0), (0, 3)]
    extra = [run_cell(replicate_of(sc, r), CAPACITY_QPS, k) for k in (0, 3) for r in (1, 2)]
    sim = decide(sc, run_sweep(sc) + extra)
    for k in (0, 3):
        runs = [run_capacity(replicate_of(sc, r), k).capacity_per_s for r in (0, 1, 2)]
        assert all(r is not None for r in runs) and len(set(runs)) == 3
        assert sim.capacity_per_s_by_k[k] == sum(r for r in runs if r is not None) / 3
    assert sim.capacity_runs_by_k == {0: 3, 3: 3} and sim.to_json()["capacity_runs_by_k"] == {"0": 3, "3": 3}
    assert SweepResult.from_json(sim.to_json()).capacity_runs_by_k == {0: 3, 3: 3}
    one = decide(sc, run_sweep(sc))
    assert one.capacity_runs_by_k == {} and "capacity_runs_by_k" not in one.to_json()  # as it always was
    assert one.capacity_per_s_by_k[0] == run_capacity(sc, 0).capacity_per_s
    assert replace(sc.sweep, replicate=0) == sc.sweep  # replicate 0 is the scenario as written


def test_only_a_capacity_a_load_is_near_is_run_again() -> None:
    """advise repeats the saturated run of a k only where a simulated load is within CAPACITY_NEAR of it: elsewhere
    which side of the capacity each load is on does not turn on its noise."""
    sc = small_scenario(seed=3)
    cells = run_sweep(sc)
    caps = {c.k: c.capacity_per_s for c in cells if c.qps == CAPACITY_QPS}
    assert caps[0] is not None and caps[3] is not None
    near_3 = replace(sc, sweep=replace(sc.sweep, qps=(caps[3] * 0.97,)))
    expected = [k for k in (0, 3) if abs(caps[3] * 0.97 / (caps[k] or 1.0) - 1.0) <= CAPACITY_NEAR]
    assert 3 in expected
    again = capacity_replicates(near_3, cells, 4)
    assert [(c.k, c.qps) for c in again] == [(k, CAPACITY_QPS) for k in expected for _ in (1, 2, 3)]
    assert [c.capacity_per_s for c in again[:3]] == [
        run_capacity(replicate_of(near_3, r), expected[0]).capacity_per_s for r in (1, 2, 3)
    ]
    far = replace(sc, sweep=replace(sc.sweep, qps=(min(caps[0], caps[3]) * 0.5,)))
    assert capacity_replicates(far, cells, 4) == [] and capacity_replicates(near_3, cells, 1) == []


def _edged(best: dict[float, float], overloaded: tuple[float, ...] = (), bound: tuple[float, ...] = ()) -> SweepResult:
    """A sweep result with these best speedups (k = 3 where they pay), some loads overloaded or capacity bounds."""
    sc = small_scenario()
    sim = decide(sc, run_sweep(sc))
    baseline = tuple(replace(sim.baseline[0], qps=q, overloaded=q in overloaded) for q in best)
    return replace(
        sim,
        baseline=baseline,
        best_speedup_by_qps=best,
        best_k_by_qps={q: 3 if s > 1 else 0 for q, s in best.items()},
        capacity_bound_qps=bound,
    )


def test_the_edge_loads_are_either_side_of_the_first_miss_above_the_operating_load() -> None:
    """edge_loads: the last load below the first that misses min_speedup above the operating load, and that load;
    none where the operating load misses or nothing above it does; an overloaded load is not a load the deployment
    keeps up with (left out, as advise's verdict leaves it), a capacity bound is not replicated, and loads already
    done are not repeated."""
    from specwise.study.replicates import edge_loads

    sim = _edged({1.0: 1.5, 2.0: 1.4, 4.0: 1.2, 8.0: 0.95, 10.0: 0.8})
    assert edge_loads(sim, 1.0, 1.05, {1.0}) == (4.0, 8.0)
    assert edge_loads(sim, 1.0, 1.05, {1.0, 4.0}) == (8.0,)
    assert edge_loads(sim, 4.0, 1.05, {4.0}) == (8.0,)  # the operating load itself is below the edge
    assert edge_loads(sim, 1.0, 1.3, {1.0}) == (2.0, 4.0)  # another threshold, another edge
    assert edge_loads(sim, 8.0, 1.05, {8.0}) == ()  # the operating load misses
    assert edge_loads(_edged({1.0: 1.5, 2.0: 1.4}), 1.0, 1.05, {1.0}) == ()  # nothing above misses
    assert edge_loads(_edged({1.0: 1.5, 4.0: 1.2, 8.0: 0.9}, bound=(8.0,)), 1.0, 1.05, {1.0}) == (4.0,)
    over = _edged({1.0: 1.5, 4.0: 1.2, 8.0: 1.1, 10.0: 0.8}, overloaded=(10.0,))
    assert edge_loads(over, 1.0, 1.05, {1.0}) == ()  # 10 QPS is past the deployment's capacity
    low_miss = _edged({0.5: 0.9, 1.0: 1.5, 4.0: 1.2, 8.0: 0.9})
    assert edge_loads(low_miss, 1.0, 1.05, {1.0}) == (4.0, 8.0)  # a miss below the operating load is no edge
