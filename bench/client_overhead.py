"""Client overhead: how fast specwise's harness can send streamed requests, against a zero-latency mock.

The mock server (specwise.loadgen.mock_server, zero TTFT and chunk interval) runs in its own process; the
harness sends N requests per rate with Poisson arrivals. Reported: achieved request rate, scheduling lag
(start - scheduled) p50/p99, failures. On a 2-core machine the mock and the client share the cores.

With ``--vllm-python`` the same rates are also run by ``vllm bench serve`` (random dataset, same request count and
output length) against the same mock, for side-by-side achieved rate and TTFT (a zero-latency mock's TTFT is the
client's own overhead). ``vllm bench serve`` reports no scheduling lag.

Run:  .venv/bin/python bench/client_overhead.py [--vllm-python .venv-vllm/bin/python --tokenizer models/smollm2-135m]
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
from typing import Any

import numpy as np

from specwise.loadgen.client import ClientConfig, RequestSpec
from specwise.loadgen.runner import BenchPlan, LevelPlan, run_plan
from specwise.loadgen.store import ResultStore
from specwise.traffic import Arrivals

ROOT = Path(__file__).resolve().parents[1]
RATES = (50.0, 100.0, 200.0, 400.0, 800.0)


def vllm_bench(args: argparse.Namespace, url: str, rate: float) -> dict[str, Any]:
    """One ``vllm bench serve`` run at ``rate`` against the mock; its own JSON result, reduced."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            str(args.vllm_python),
            "-m",
            "vllm.entrypoints.cli.main",
            "bench",
            "serve",
            "--backend",
            "openai",
            "--base-url",
            url,
            "--endpoint",
            "/v1/completions",
            "--model",
            "mock",
            "--tokenizer",
            str(args.tokenizer),
            "--dataset-name",
            "random",
            "--random-input-len",
            "8",
            "--random-output-len",
            "4",
            "--num-prompts",
            str(args.requests),
            "--request-rate",
            str(rate),
            "--ignore-eos",
            "--seed",
            "0",
            "--disable-tqdm",
            "--save-result",
            "--result-dir",
            tmp,
            "--result-filename",
            "r.json",
            "--percentile-metrics",
            "ttft,e2el",
            "--metric-percentiles",
            "50,99",
        ]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
        if proc.returncode != 0:
            return {"target_rate_per_s": rate, "error": proc.stderr[-2000:]}
        res = json.loads((Path(tmp) / "r.json").read_text())
    row = {
        "target_rate_per_s": rate,
        "achieved_rate_per_s": res.get("request_throughput"),
        "completed": res.get("completed"),
        "failed": res.get("failed", args.requests - int(res.get("completed", 0))),
        "ttft_p50_ms": res.get("p50_ttft_ms"),
        "ttft_p99_ms": res.get("p99_ttft_ms"),
        "duration_s": res.get("duration"),
    }
    print(f"vllm bench serve {rate:>7g}/s: {row}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "client_overhead.json")
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--vllm-python", type=Path, help="also run `vllm bench serve` from this environment")
    parser.add_argument("--tokenizer", type=Path, default=ROOT / "models" / "smollm2-135m")
    args = parser.parse_args()
    mock = subprocess.Popen(
        [sys.executable, "-m", "specwise.loadgen.mock_server", "0", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert mock.stdout is not None
        url = mock.stdout.readline().strip()
        rows = []
        print(f"{'target/s':>9} {'achieved/s':>11} {'lag p50 ms':>11} {'lag p99 ms':>11} {'failed':>7}")
        for rate in RATES:
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
            ttft = np.array([r.ttft_s for r in ok if r.ttft_s is not None])
            span = max(r.end_s for r in records) - min(r.start_s for r in records)
            row = {
                "target_rate_per_s": rate,
                "achieved_rate_per_s": len(ok) / span,
                "wall_s": wall,
                "lag_p50_ms": float(np.percentile(lag, 50) * 1e3),
                "lag_p99_ms": float(np.percentile(lag, 99) * 1e3),
                "failed": len(records) - len(ok),
                "ttft_p50_ms": float(np.percentile(ttft, 50) * 1e3),
                "ttft_p99_ms": float(np.percentile(ttft, 99) * 1e3),
            }
            rows.append(row)
            print(
                f"{rate:>9g} {row['achieved_rate_per_s']:>11.1f} {row['lag_p50_ms']:>11.2f} {row['lag_p99_ms']:>11.2f} "
                f"{row['failed']:>7}"
            )
        vllm_rows = [vllm_bench(args, url, rate) for rate in RATES] if args.vllm_python else []
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
                "vllm_bench_serve_rows": vllm_rows,
            },
            indent=2,
        )
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
