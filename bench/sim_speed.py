"""Simulator speed: wall time vs request count, events/s, and a 10-QPS x 9-k sweep.

Run:  .venv/bin/python bench/sim_speed.py [--out bench/results/sim_speed.json]
Prints a table and writes JSON. Numbers are from the machine it runs on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from specwise.scenario import load_scenario
from specwise.sim.engine import EngineConfig, SpecConfig, simulate
from specwise.sim.workload import generate_requests
from specwise.study.decide import decide
from specwise.study.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "examples" / "llama70b-4xh100.toml"


def time_requests(n: int, qps: float, k: int) -> dict[str, float]:
    sc = load_scenario(SCENARIO)
    target, draft = sc.models.target, sc.models.draft_cost
    req = generate_requests(sc.classes, sc.sweep.arrivals.with_rate(qps), n, np.random.default_rng(0))
    engine = EngineConfig(
        kv_capacity_tokens=sc.kv_cache_tokens,
        max_num_seqs=sc.max_num_seqs,
        max_num_batched_tokens=sc.max_num_batched_tokens,
        overhead=sc.models.overhead,
    )
    spec = SpecConfig(k, draft) if k else None
    t0 = time.perf_counter()
    res = simulate(req, sc.classes, engine, target, spec, np.random.default_rng(1))
    wall = time.perf_counter() - t0
    tokens = int(req.output_tokens.sum())
    return {
        "requests": n,
        "qps": qps,
        "k": k,
        "wall_s": wall,
        "engine_steps": res.steps,
        "events_per_s": (res.steps + n) / wall,
        "output_tokens_per_wall_s": tokens / wall,
        "us_per_request": 1e6 * wall / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "sim_speed.json")
    args = parser.parse_args()
    rows = []
    print(f"{'requests':>9} {'qps':>5} {'k':>2} {'wall s':>8} {'steps':>8} {'events/s':>10} {'us/req':>8}")
    for qps, k in ((4.0, 4), (4.0, 0), (1.0, 4), (12.0, 4)):
        for n in (1000, 2500, 5000, 10000, 20000):
            r = time_requests(n, qps, k)
            rows.append(r)
            print(
                f"{n:>9} {qps:>5g} {k:>2} {r['wall_s']:>8.2f} {r['engine_steps']:>8} {r['events_per_s']:>10.0f} "
                f"{r['us_per_request']:>8.0f}"
            )
    sc = load_scenario(SCENARIO)
    qps = tuple(float(q) for q in np.geomspace(0.5, 16, 10).round(2))
    sc = replace(sc, sweep=replace(sc.sweep, qps=qps, k_values=tuple(range(9)), num_requests=1000))
    t0 = time.perf_counter()
    doc = decide(sc, run_sweep(sc))
    sweep_wall = time.perf_counter() - t0
    print(
        f"sweep 10 QPS x 9 k x 1000 requests: {sweep_wall:.1f} s with {os.cpu_count()} processes; "
        f"crossover {doc.crossover_qps}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                },
                "command": "python bench/sim_speed.py",
                "scaling": rows,
                "sweep": {
                    "qps": qps,
                    "k": list(range(9)),
                    "requests_per_cell": 1000,
                    "wall_s": sweep_wall,
                    "crossover_qps": doc.crossover_qps,
                    "best_k_by_qps": {f"{q:g}": k for q, k in doc.best_k_by_qps.items()},
                    "predictor": doc.predictor,
                },
            },
            indent=2,
        )
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
