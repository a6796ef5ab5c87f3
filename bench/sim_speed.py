"""Simulator speed: CPU and wall seconds vs request count (1, 4 and 12 QPS, k = 0 and 4; 1k, 10k and 100k
requests, so 100k / (10 x 10k) shows how linearly it scales), events/s, and a 10-QPS x 9-k sweep.

Run:  .venv/bin/python bench/sim_speed.py [--out bench/results/sim_speed.json] [--sizes 1000 10000 100000]
Prints a table and writes JSON. Numbers are from the machine it runs on (CPU seconds: this process only).
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
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(req, sc.classes, engine, target, spec, np.random.default_rng(1))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    tokens = int(req.output_tokens.sum())
    return {
        "requests": n,
        "qps": qps,
        "k": k,
        "wall_s": wall,
        "cpu_s": cpu,
        "engine_steps": res.steps,
        "events_per_s": (res.steps + n) / wall,
        "output_tokens_per_wall_s": tokens / wall,
        "us_per_request": 1e6 * wall / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "sim_speed.json")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    args = parser.parse_args()
    rows = []
    print(f"{'requests':>9} {'qps':>5} {'k':>2} {'cpu s':>7} {'wall s':>8} {'steps':>8} {'events/s':>10} {'us/req':>7}")
    for qps in (1.0, 4.0, 12.0):
        for k in (0, 4):
            for n in args.sizes:
                r = time_requests(n, qps, k)
                rows.append(r)
                print(
                    f"{n:>9} {qps:>5g} {k:>2} {r['cpu_s']:>7.2f} {r['wall_s']:>8.2f} {r['engine_steps']:>8} "
                    f"{r['events_per_s']:>10.0f} {r['us_per_request']:>7.0f}"
                )
    linearity = _linearity(rows)
    for cell, ratio in linearity.items():
        print(f"{cell}: CPU s per request at {max(args.sizes)} requests / at 10,000 (1.0: linear): {ratio:.2f}")
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
                "linearity": linearity,
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


def _linearity(rows: list[dict[str, float]]) -> dict[str, float]:
    """Per (QPS, k): CPU seconds per request at the largest size over those at the smallest size >= 10,000 (or
    the smallest, if none is); 1.0 is linear."""
    out = {}
    for qps, k in sorted({(r["qps"], r["k"]) for r in rows}):
        cell = sorted((r for r in rows if r["qps"] == qps and r["k"] == k), key=lambda r: r["requests"])
        base = next((r for r in cell if r["requests"] >= 10_000), cell[0])
        out[f"qps={qps:g} k={k:g}"] = (cell[-1]["cpu_s"] / cell[-1]["requests"]) / (base["cpu_s"] / base["requests"])
    return out


if __name__ == "__main__":
    main()
