"""advise simulates the loads either side of the edge an "enable below ~X QPS" names as many times as the
operating load (study/replicates.edge_loads, advisor/decision._edge_noise), and the k-by-batch-size schedule as
many times where it must switch a loss off (advisor/schedule.schedule_checks): on one draw each, the named load
moved ~5.7-6.4 and ~7.1-7.8 QPS with the seed, and the schedule's 0.99x at 8 QPS turned one example's headline
(bench/seed_sensitivity.py, 2026-12-07)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs
from specwise.advisor.schedule import schedule_checks
from specwise.contracts.advice import EVEN_WITHIN, SamplingNoise, ScheduleCheck
from specwise.contracts.document import Fields
from specwise.study.decide import decide, falls_below
from specwise.study.sweep import run_sweep
from specwise.units import fmt_about
from tests.study.test_replicates import small_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "advise"
QWAMA = EXAMPLES / "schedule-llama3-70b-qwama.toml"
ONE_B = EXAMPLES / "schedule-llama31-70b-1b.toml"


def _candidate(path: Path, tmp_path: Path, advise_keys: str = "", version: str | None = None) -> dict[str, Any]:
    text = path.read_text()
    if advise_keys:
        text = text.replace("[advise]\n", f"[advise]\n{advise_keys}\n", 1)
    copy = tmp_path / path.name
    copy.write_text(text)
    doc = advise(load_inputs(copy), processes=1, engine_version=version).to_json()
    cand: dict[str, Any] = doc["candidates"][0]
    return cand


def test_the_named_load_is_interpolated_between_the_means_either_side(tmp_path: Path) -> None:
    """schedule-llama3-70b-qwama (vLLM 0.9, no schedule): 4 and 8 QPS are the mean of 5 runs each, those means are
    the sweep's best speedups there, and the headline's load is falls_below on them; the reason says where the runs'
    intervals put the edge."""
    cand = _candidate(QWAMA, tmp_path, version="0.9")
    edges = [SamplingNoise.from_json(Fields(e, "edge")) for e in cand["edge_sampling"]]
    assert [(n.qps, n.k, len(n.replicates)) for n in edges] == [(4.0, 4, 5), (8.0, 4, 5)]
    best = {float(q): s for q, s in cand["sim"]["best_speedup_by_qps"].items()}
    assert best[4.0] == edges[0].mean and best[8.0] == edges[1].mean
    row = next(r for r in cand["sim"]["results"] if r["qps"] == 8.0 and r["k"] == 4)
    assert edges[1].speedups[0] == row["speedup_e2e"]  # the sweep's own draw is the first run
    assert best[8.0] < 1.05 <= best[4.0]
    named = re.search(r"below ~([0-9.]+) QPS", cand["headline"])
    assert named is not None and named.group(1) == fmt_about(falls_below(best, 1.05, 8.0))
    assert "the edge interpolated between 4 QPS" in cand["reason"] and "the mean of 5 runs" in cand["reason"]


def test_one_replicate_names_the_load_from_one_draw_each(tmp_path: Path) -> None:
    cand = _candidate(QWAMA, tmp_path, "replicates = 1", version="0.9")
    assert "edge_sampling" not in cand and "the edge interpolated" not in cand["reason"]
    rows = {r["qps"]: r["speedup_e2e"] for r in cand["sim"]["results"] if r["k"] == 4}
    named = re.search(r"below ~([0-9.]+) QPS", cand["headline"])
    assert named is not None and named.group(1) == fmt_about(falls_below({4.0: rows[4.0], 8.0: rows[8.0]}, 1.05, 8.0))


def test_the_schedule_is_run_as_many_times_where_it_must_switch_a_loss_off(tmp_path: Path) -> None:
    """schedule-llama31-70b-1b: the schedule at 8 QPS (where k=4 loses) is the mean of 5 paired runs with its
    interval; within 1% of even, so the headline says the schedule switches speculation off under load."""
    cand = _candidate(ONE_B, tmp_path)
    checks = {c["qps"]: c for c in cand["schedule_results"]}
    assert checks[8.0]["runs"] == 5 and len(checks[8.0]["interval_90"]) == 2
    assert all("runs" not in checks[q] for q in (1.0, 2.0, 4.0))  # paying loads: one draw, as before
    at8 = ScheduleCheck(8.0, checks[8.0]["speedup_e2e"], checks[8.0]["runs"], tuple(checks[8.0]["interval_90"]))
    assert not at8.below_one and at8.interval_90 is not None and at8.interval_90[1] >= 1.0 - EVEN_WITHIN
    assert "switches it off under load" in cand["headline"]
    assert "(even with no speculation: 8 QPS " in cand["reason"] and "still below" not in cand["reason"]


def test_a_repeated_check_s_first_run_is_the_one_run_check() -> None:
    """schedule_checks: replicate 0 of a repeated load is the check as run once (the sweep's baseline draw), and
    the loads not repeated are unchanged."""
    sc = small_scenario(1, (2.0, 6.0), 40, "sched")
    sim = decide(sc, run_sweep(sc))
    schedule = ((1, 8, 3), (9, sc.max_num_seqs, 0))
    once, _ = schedule_checks(sc, sim, schedule)
    repeated, _ = schedule_checks(sc, sim, schedule, (6.0,), 3)
    assert repeated[0] == once[0] and repeated[1].runs == 3 and once[1].runs == 1
    first = once[1].speedup_e2e
    assert first is not None and repeated[1].interval_90 is not None
    assert repeated[1].speedup_e2e != first  # a mean of three draws, not the first one


def _runs(qps: float, mean: float, half: float, k: int = 4) -> SamplingNoise:
    """Five runs at ``qps`` whose mean is ``mean`` and whose 90% interval is about mean +- ``half``."""
    step = half * 5**0.5 / (2.132 * 2.5**0.5)  # t(0.95, 4) = 2.132; sd of (-2, -1, 0, 1, 2) x step: sqrt(2.5) x step
    return SamplingNoise(qps, k, 400, 0, (0, 1, 2, 3, 4), tuple(mean + i * step for i in (-2, -1, 0, 1, 2)))


def test_the_edge_words_interpolate_low_ends_and_high_ends_apart() -> None:
    """decision._edge_words: the early edge from both intervals' low ends, the late one from both high ends (the
    crossing rises with both speedups); an interval reaching across min_speedup says on which side the edge may lie;
    a capacity bound is a point; a load of one draw says nothing."""
    from types import SimpleNamespace

    from specwise.advisor.decision import _edge_words
    from specwise.study.decide import crossover

    a, b = _runs(4.0, 1.22, 0.03), _runs(8.0, 0.95, 0.02)
    assert a.low == pytest.approx(1.19, abs=1e-9) and a.high == pytest.approx(1.25, abs=1e-9)
    sim: Any = SimpleNamespace(capacity_bound_qps=())
    gains = {1.0: 1.5, 4.0: a.mean, 8.0: b.mean}
    words = _edge_words(sim, gains, 1.05, 8.0, {4.0: a, 8.0: b})
    early = crossover([4.0, 8.0], [a.low, b.low], 1.05)
    late = crossover([4.0, 8.0], [a.high, b.high], 1.05)
    assert early is not None and late is not None and early < late
    assert words.endswith(f": ~{fmt_about(early)}-{fmt_about(late)} QPS within those intervals")
    assert "4 QPS (1.22x, the mean of 5 runs, 90% interval 1.19-1.25x) and 8 QPS (0.95x" in words
    bound: Any = SimpleNamespace(capacity_bound_qps=(8.0,))
    capped = _edge_words(bound, {1.0: 1.5, 4.0: a.mean, 8.0: 0.9}, 1.05, 8.0, {4.0: a})
    assert "8 QPS (at most 0.90x: no k keeps up there)" in capped and capped.endswith(
        "~5.9-6.3 QPS within those intervals"
    )
    beyond = _edge_words(sim, gains, 1.05, 8.0, {4.0: a, 8.0: _runs(8.0, 1.04, 0.02)})
    assert beyond.endswith("within those intervals it may lie beyond 8 QPS (an interval reaches across 1.05x)")
    below = _edge_words(sim, gains, 1.05, 8.0, {4.0: _runs(4.0, 1.06, 0.03), 8.0: b})
    assert below.endswith("within those intervals it may lie below 4 QPS (an interval reaches across 1.05x)")
    assert _edge_words(sim, gains, 1.05, 8.0, {8.0: b}) == ""  # 4 QPS one draw


def test_means_that_move_the_edge_replicate_the_next_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """decision._edge_noise (fault injection: the runs' means chosen per load): the one-draw edge is 4-8 QPS; 8 QPS's
    mean clears min_speedup, so the edge moves to 8-10 QPS and 10 QPS is run too -- every load at most once."""
    from types import SimpleNamespace

    from specwise.advisor import decision

    sc = small_scenario(1, (1.0,), 40, "moving")
    real = decide(sc, run_sweep(sc))
    best = {1.0: 1.5, 4.0: 1.2, 8.0: 1.0, 10.0: 0.9}
    sim = replace(
        real,
        baseline=tuple(replace(real.baseline[0], qps=q) for q in best),
        best_speedup_by_qps=best,
        best_k_by_qps={q: 3 if s > 1 else 0 for q, s in best.items()},
        capacity_bound_qps=(),
        results=tuple(replace(real.results[-1], qps=q) for q in best),
    )
    means = {4.0: 1.21, 8.0: 1.1, 10.0: 0.92}
    asked: list[float] = []

    def fake(sc: Any, sim: Any, qps: float, k: int, replicates: int, *_: Any) -> SamplingNoise:
        asked.append(qps)
        return _runs(qps, means[qps], 0.01, k)

    monkeypatch.setattr(decision, "sampling_noise", fake)
    inputs: Any = SimpleNamespace(operating_qps=1.0, replicates=5, min_speedup=1.05)
    out, edges = decision._edge_noise(inputs, sc, sim, "ngram", None, None)
    assert asked == [4.0, 8.0, 10.0] and [n.qps for n in edges] == [4.0, 8.0, 10.0]
    assert out.best_speedup_by_qps[8.0] == pytest.approx(1.1) and out.best_k_by_qps[8.0] == 3
