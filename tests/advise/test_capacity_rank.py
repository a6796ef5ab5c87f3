"""Capacity under the verdict (review 2): a load the deployment keeps up with only without speculation is a loss,
said in capacities (not a capacity ratio printed as an e2e speedup); the schedule's simulated checks and the
reasons leave out loads above capacity; the ranking does not depend on the candidates' order."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs, parse_inputs
from specwise.contracts.advice import Advice

SCENARIOS = Path(__file__).resolve().parent / "scenarios"


@functools.cache
def _advise(name: str, operating_qps: float | None = None, reverse: bool = False) -> Advice:
    path = SCENARIOS / f"{name}.toml"
    if operating_qps is None and not reverse:
        return advise(load_inputs(path), processes=1)
    data = tomllib.loads(path.read_text())
    if operating_qps is not None:
        data["advise"]["operating_qps"] = operating_qps
    if reverse:
        data["candidate"] = data["candidate"][::-1]
    return advise(parse_inputs(data, path.name, SCENARIOS), processes=1)


def test_a_load_only_the_baseline_keeps_up_with_is_a_loss_in_capacities() -> None:
    """9.6 QPS: plain decoding keeps up (~10.1 req/s), no k does (k=3 at best, ~9.2 req/s, its five saturated runs'
    90% interval below 9.6): disable, in capacities. The scenario's own 9.2 QPS is inside that interval, where
    whether k=3 keeps up is the simulation's noise: measure first (advisor/decision.capacity_undecided)."""
    doc = _advise("llama70b-8b-draft-op8", operating_qps=9.6)
    (cand,) = doc.candidates
    assert cand.sim is not None and 9.6 not in cand.sim.overloaded_qps  # the baseline keeps up at 9.6 QPS
    assert cand.verdict == "disable" and cand.speedup_at_operating_qps is None
    assert cand.reason.startswith("at 9.6 QPS the deployment keeps up without speculation")
    assert "speedup" not in cand.reason and "inside the 90% interval" not in cand.reason
    assert doc.headline == "Do not enable speculative decoding for this load"  # not "cannot keep up": it can
    edge = _advise("llama70b-8b-draft-op8").candidates[0]
    assert (
        edge.sim is not None and edge.sim.capacity_interval_by_k[3][0] <= 9.2 <= edge.sim.capacity_interval_by_k[3][1]
    )
    assert edge.verdict == "measure_first" and edge.k == 3
    assert "9.2 QPS is inside the 90% interval of k=3's capacity" in edge.reason


def test_the_schedule_is_checked_only_at_loads_the_deployment_keeps_up_with() -> None:
    doc = _advise("llama70b-8b-draft-op8", operating_qps=1.0)
    top = doc.ranked[0]
    assert top.sim is not None and top.sim.overloaded_qps == (14.0,)
    assert top.schedule_results and all(c.qps not in top.sim.overloaded_qps for c in top.schedule_results)
    assert "14 QPS" not in top.reason


def test_the_ranking_does_not_depend_on_the_candidates_order() -> None:
    forward, backward = _advise("dsv3-mtp-suffix"), _advise("dsv3-mtp-suffix", reverse=True)
    assert all(c.speedup_at_operating_qps is None for c in forward.candidates)  # nothing quotable at 2 QPS
    assert [c.candidate for c in forward.ranked] == [c.candidate for c in backward.ranked]
    assert forward.headline == backward.headline
