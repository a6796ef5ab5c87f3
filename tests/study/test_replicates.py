"""The operating load's replicate seeds (study/replicates.py): each seed's paired speedup is the sweep's cell at
that seed, the sweep's own draw comes first, and nothing is replicated where there is nothing to replicate."""

from __future__ import annotations

from dataclasses import replace

from specwise.scenario import parse_scenario
from specwise.scenario.model import Scenario
from specwise.study.decide import decide, sweep_row
from specwise.study.replicates import replicate_jobs, sampling_noise
from specwise.study.sweep import run_cell, run_sweep


def _scenario(seed: int = 3) -> Scenario:
    return parse_scenario(
        {
            "name": "replicates",
            "deployment": {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB", "max_model_len": 4096},
            "speculation": {"method": "ngram", "acceptance": 0.6, "k": [0, 3]},
            "sweep": {"qps": [4.0], "num_requests": 60, "seed": seed},
            "workload": [
                {
                    "name": "chat",
                    "prompt_tokens": {"dist": "lognormal", "mean": 600, "cv": 0.5, "min": 16, "max": 3000},
                    "output_tokens": {"dist": "lognormal", "mean": 150, "cv": 0.6, "min": 8, "max": 800},
                }
            ],
        }
    )


def test_each_seed_is_the_sweep_at_that_seed_paired_with_plain_decoding() -> None:
    sc = _scenario(seed=3)
    sim = decide(sc, run_sweep(sc))
    noise = sampling_noise(sc, sim, 4.0, 3, 3)
    assert noise is not None and noise.seeds == (3, 4, 5) and noise.num_requests == 60
    assert noise.speedups[0] == sim.row(4.0, 3).speedup("e2e")  # the sweep's own draw
    for seed, value in zip(noise.seeds[1:], noise.speedups[1:], strict=True):
        other = replace(sc, sweep=replace(sc.sweep, seed=seed))
        base, spec = run_cell(other, 4.0, 0), run_cell(other, 4.0, 3)
        assert value == sweep_row(spec, base.summary).speedup("e2e")
    assert len(set(noise.speedups)) == 3  # independent draws, not one repeated


def test_the_jobs_are_the_next_seeds_plain_decoding_first() -> None:
    jobs = replicate_jobs(_scenario(seed=7), 4.0, 3, 4)
    assert [(j[0].sweep.seed, j[1], j[2]) for j in jobs] == [(s, 4.0, k) for s in (8, 9, 10) for k in (0, 3)]


def test_nothing_is_replicated_for_one_seed_or_a_k_not_simulated() -> None:
    sc = _scenario()
    sim = decide(sc, run_sweep(sc))
    assert sampling_noise(sc, sim, 4.0, 3, 1) is None
    assert sampling_noise(sc, sim, 4.0, 5, 5) is None  # no k = 5 cell in the sweep
