"""advise at an operating load the deployment cannot keep up with (review item A2): the decision is about
capacity -- never a p50 latency of an unbounded queue quoted as a speedup."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.advisor.decision import advise
from specwise.advisor.inputs import parse_inputs
from specwise.contracts.advice import Advice


def _advise(operating_qps: float) -> Advice:
    data = {
        "name": "overload",
        "deployment": {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB", "max_model_len": 8192},
        "advise": {"operating_qps": operating_qps},
        "sweep": {"qps": [2.0, operating_qps], "num_requests": 200},
        "workload": [
            {
                "name": "summarize",
                "task": "summarization",
                "prompt_tokens": {"dist": "lognormal", "mean": 1500, "cv": 0.5, "min": 64, "max": 6000},
                "output_tokens": {"dist": "lognormal", "mean": 200, "cv": 0.4, "min": 16, "max": 800},
            }
        ],
        "candidate": [{"method": "ngram", "k": [0, 3], "per_position": [0.7, 0.55, 0.45], "match_rate": 1.0}],
    }
    return advise(parse_inputs(data, "overload.toml", Path(".")), processes=1)


@pytest.fixture(scope="module")
def far_over() -> Advice:
    return _advise(400.0)


def test_far_above_capacity_the_answer_is_replicas_not_a_speedup(far_over: Advice) -> None:
    cand = far_over.candidates[0]
    assert far_over.decision == "disable" and cand.verdict == "disable"
    assert cand.speedup_at_operating_qps is None  # the E2E ratio of two growing queues is not quoted
    assert cand.sim is not None and cand.sim.overloaded_qps == (400.0,)
    base, spec = cand.sim.sustainable_qps, cand.sim.sustainable_qps_with(3)
    assert base is not None and spec is not None
    assert cand.reason.startswith("at 400 QPS this deployment cannot keep up")
    assert f"~{base:.1f} req/s without speculation, ~{spec:.1f} with k=3" in cand.reason
    assert "add replicas" in cand.reason and "speculation changes capacity by" in cand.reason
    assert far_over.serve.speculative_config is None


def test_a_load_only_speculation_keeps_up_with_is_measured_first(far_over: Advice) -> None:
    """Between the baseline's capacity and speculation's: speculation is what makes the load sustainable, at the
    edge of its own capacity -- measure it (or add replicas), with the capacities as the evidence."""
    sim = far_over.candidates[0].sim
    assert sim is not None
    base, spec = sim.sustainable_qps, sim.sustainable_qps_with(3)
    assert base is not None and spec is not None and spec > 1.1 * base  # n-gram matching every step, 0.7 accepted
    doc = _advise(round((base + spec) / 2, 1))
    cand = doc.candidates[0]
    assert doc.decision == "measure_first" and cand.verdict == "measure_first" and cand.k == 3
    assert "cannot keep up without speculation" in cand.reason and "with k=3 it serves" in cand.reason
    assert cand.speedup_at_operating_qps is None
