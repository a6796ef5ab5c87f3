"""advise simulates the loads either side of the edge an "enable below ~X QPS" names as many times as the
operating load (study/replicates.edge_loads, advisor/decision._edge_noise), and the k-by-batch-size schedule as
many times where it must switch a loss off (advisor/schedule.schedule_checks): on one draw each, the named load
moved ~5.7-6.4 and ~7.1-7.8 QPS with the seed, and the schedule's 0.99x at 8 QPS turned one example's headline
(bench/seed_sensitivity.py, 2026-12-07)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs
from specwise.advisor.schedule import schedule_checks
from specwise.contracts.advice import EVEN_WITHIN, SamplingNoise, ScheduleCheck
from specwise.contracts.document import Fields
from specwise.scenario import parse_scenario
from specwise.study.decide import decide, falls_below
from specwise.study.sweep import run_sweep
from specwise.units import fmt_about

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
    assert "8 QPS even with no speculation" in cand["reason"]


def test_a_repeated_check_s_first_run_is_the_one_run_check() -> None:
    """schedule_checks: replicate 0 of a repeated load is the check as run once (the sweep's baseline draw), and
    the loads not repeated are unchanged."""
    sc = parse_scenario(
        {
            "name": "sched",
            "deployment": {"target": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100-SXM-80GB", "max_model_len": 4096},
            "speculation": {"method": "ngram", "acceptance": 0.6, "k": [0, 3]},
            "sweep": {"qps": [2.0, 6.0], "num_requests": 40, "seed": 1},
            "workload": [
                {
                    "name": "chat",
                    "prompt_tokens": {"dist": "lognormal", "mean": 600, "cv": 0.5, "min": 16, "max": 3000},
                    "output_tokens": {"dist": "lognormal", "mean": 150, "cv": 0.6, "min": 8, "max": 800},
                }
            ],
        }
    )
    sim = decide(sc, run_sweep(sc))
    schedule = ((1, 8, 3), (9, sc.max_num_seqs, 0))
    once = schedule_checks(sc, sim, schedule)
    repeated = schedule_checks(sc, sim, schedule, (6.0,), 3)
    assert repeated[0] == once[0] and repeated[1].runs == 3 and once[1].runs == 1
    first = once[1].speedup_e2e
    assert first is not None and repeated[1].interval_90 is not None
    assert repeated[1].speedup_e2e != first  # a mean of three draws, not the first one
