"""A sweep on Ray vs the local process pool (issue 15, "sweeps on Ray"): wall seconds of the 10-QPS x 9-k sweep of
bench/sim_speed.py (examples/llama70b-4xh100.toml, 1,000 requests per cell, 90 cells) at the same number of CPUs,
and whether the results are identical.

Run:  .venv/bin/python bench/ray_sweep.py [--cpus 2] [--repeats 3] [--out bench/results/ray_sweep.json]
Needs pip install 'specwise[ray]'. The Ray cluster is the one ``--executor ray`` starts (loopback only, ``--cpus``
CPUs); its start and shutdown are timed apart from the sweeps run on it. The first sweep on a fresh cluster also
starts Ray's worker processes (each imports specwise); later sweeps reuse them. Ray and local sweeps alternate
(the machine's other load falls on both alike). Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from specwise.executors import ExecutorSpec, open_executor
from specwise.executors.local import LocalExecutor
from specwise.scenario import load_scenario
from specwise.scenario.model import Scenario
from specwise.study.decide import decide
from specwise.study.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "examples" / "llama70b-4xh100.toml"


def scenario() -> Scenario:
    sc = load_scenario(SCENARIO)
    qps = tuple(float(q) for q in np.geomspace(0.5, 16, 10).round(2))
    return replace(sc, sweep=replace(sc.sweep, qps=qps, k_values=tuple(range(9)), num_requests=1000))


def timed_sweep(sc: Scenario, executor: Any) -> tuple[float, str]:
    t0 = time.perf_counter()
    result = decide(sc, run_sweep(sc, executor))
    return time.perf_counter() - t0, json.dumps(result.to_json(), sort_keys=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "ray_sweep.json")
    args = parser.parse_args()
    sc = scenario()
    cells = len(sc.sweep.qps) * len(sc.sweep.k_values)
    load_before = os.getloadavg()
    local, local_walls, ray_walls, docs = LocalExecutor(args.cpus), [], [], set()
    t0 = time.perf_counter()
    with open_executor(ExecutorSpec("ray"), args.cpus) as ray:
        ray_cpus = ray.workers  # starts the cluster
        start_s = time.perf_counter() - t0
        for _ in range(args.repeats):  # interleaved: a machine shared with other work loads both alike
            wall, doc = timed_sweep(sc, ray)
            ray_walls.append(wall)
            docs.add(doc)
            wall, doc = timed_sweep(sc, local)
            local_walls.append(wall)
            docs.add(doc)
        t1 = time.perf_counter()
    shutdown_s = time.perf_counter() - t1
    rows = {
        "local process pool": {"first_s": local_walls[0], "median_s": statistics.median(local_walls)},
        "ray (cluster started here)": {"first_s": ray_walls[0], "median_s": statistics.median(ray_walls)},
    }
    first_with_startup = start_s + ray_walls[0] + shutdown_s
    identical = len(docs) == 1
    print(f"{cells} cells x {sc.sweep.num_requests} requests, {args.cpus} CPUs, {args.repeats} sweeps each")
    print(f"{'executor':<28} {'first sweep s':>13} {'median s':>9}")
    for name, r in rows.items():
        print(f"{name:<28} {r['first_s']:>13.1f} {r['median_s']:>9.1f}")
    print(
        f"ray cluster start {start_s:.1f} s, shutdown {shutdown_s:.1f} s; "
        f"first sweep with both {first_with_startup:.1f} s"
    )
    print(f"every sweep's results identical: {identical}; load average before {load_before[0]:.1f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                },
                "command": f"python bench/ray_sweep.py --cpus {args.cpus} --repeats {args.repeats}",
                "scenario": str(SCENARIO.relative_to(ROOT)),
                "cells": cells,
                "requests_per_cell": sc.sweep.num_requests,
                "cpus": args.cpus,
                "ray_cluster_cpus": ray_cpus,
                "local_sweep_wall_s": local_walls,
                "ray_sweep_wall_s": ray_walls,
                "ray_start_s": start_s,
                "ray_shutdown_s": shutdown_s,
                "ray_first_sweep_with_start_and_shutdown_s": first_with_startup,
                "identical_results": identical,
                "load_average_1m_before": load_before[0],
                "load_average_1m_after": os.getloadavg()[0],
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
