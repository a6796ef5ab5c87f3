"""Client overhead: how fast specwise's harness can send streamed requests, against a zero-latency mock.

The mock server (specwise.loadgen.mock_server, zero TTFT and chunk interval) runs in its own process; the
harness sends N requests per rate with Poisson arrivals. Reported: achieved request rate, scheduling lag
(start - scheduled) p50/p99, failures. On a 2-core machine the mock and the client share the cores.

Run:  .venv/bin/python bench/client_overhead.py [--out bench/results/client_overhead.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from specwise.loadgen.client import ClientConfig, RequestSpec
from specwise.loadgen.runner import BenchPlan, LevelPlan, run_plan
from specwise.loadgen.store import ResultStore
from specwise.sim.distributions import Arrivals

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "client_overhead.json")
    parser.add_argument("--requests", type=int, default=600)
    args = parser.parse_args()
    mock = subprocess.Popen(
        [sys.executable, "-m", "specwise.loadgen.mock_server", "0", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert mock.stdout is not None
        url = mock.stdout.readline().strip()
        rows = []
        print(f"{'target/s':>9} {'achieved/s':>11} {'lag p50 ms':>11} {'lag p99 ms':>11} {'failed':>7}")
        for rate in (50.0, 100.0, 200.0, 400.0, 800.0):
            reqs = tuple(RequestSpec(f"r{i}", "hello", 4) for i in range(args.requests))
            plan = BenchPlan(
                client=ClientConfig(base_url=url, model="mock", request_timeout_s=30),
                levels=(LevelPlan(0, rate, reqs),),
                arrivals=Arrivals("poisson", rate),
                metrics_url=None,
            )
            with tempfile.TemporaryDirectory() as tmp:
                store = ResultStore(Path(tmp) / "o.sqlite")
                t0 = time.perf_counter()
                asyncio.run(run_plan(plan, store, "o"))
                wall = time.perf_counter() - t0
                records = store.records("o")
                store.close()
            lag = np.array([r.start_s - r.scheduled_s for r in records])
            ok = [r for r in records if r.ok]
            span = max(r.end_s for r in records) - min(r.start_s for r in records)
            row = {
                "target_rate_per_s": rate,
                "achieved_rate_per_s": len(ok) / span,
                "wall_s": wall,
                "lag_p50_ms": float(np.percentile(lag, 50) * 1e3),
                "lag_p99_ms": float(np.percentile(lag, 99) * 1e3),
                "failed": len(records) - len(ok),
            }
            rows.append(row)
            print(
                f"{rate:>9g} {row['achieved_rate_per_s']:>11.1f} {row['lag_p50_ms']:>11.2f} {row['lag_p99_ms']:>11.2f} "
                f"{row['failed']:>7}"
            )
    finally:
        mock.terminate()
        mock.wait(timeout=10)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "command": "python bench/client_overhead.py",
                "requests_per_rate": args.requests,
                "rows": rows,
            },
            indent=2,
        )
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
