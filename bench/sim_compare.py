"""Simulator CPU time: this tree against another git checkout of specwise, the same jobs in one run.

    .venv/bin/python bench/sim_compare.py --base /path/to/old/checkout [--requests 10000]

Each job (examples/llama70b-4xh100.toml, N requests at a QPS, k = 0 or 4) runs in a fresh subprocess per tree,
alternating trees, ``--repeat`` times; the least child CPU seconds (resource.getrusage) count, so other load on the
machine counts as little as it can. The current tree is measured with the roofline (the predictor the old tree
had) and with the published fit (the new default). Results go to bench/results/sim_compare.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import resource, sys, time
import numpy as np
from pathlib import Path
from specwise.scenario import load_scenario
from specwise.sim.engine import EngineConfig, SpecConfig, simulate
from specwise.sim.workload import generate_requests
n, qps, k, predictor = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
path = Path(sys.argv[5])
try:
    from specwise.perfmodel.factory import PredictorChoice
    sc = load_scenario(path, PredictorChoice(predictor))
    target, draft, extra = sc.models.target, sc.models.draft_cost, {"overhead": sc.models.overhead}
except ImportError:  # the tree before the seams refactor
    from specwise.sim.sweep import build_models
    sc = load_scenario(path)
    (target, draft), extra = build_models(sc), {}
req = generate_requests(sc.classes, sc.sweep.arrivals.with_rate(qps), n, np.random.default_rng(0))
engine = EngineConfig(kv_capacity_tokens=sc.kv_cache_tokens, max_num_seqs=sc.max_num_seqs,
                      max_num_batched_tokens=sc.max_num_batched_tokens, **extra)
spec = SpecConfig(k, draft) if k else None
t0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime
res = simulate(req, sc.classes, engine, target, spec, np.random.default_rng(1))
print(resource.getrusage(resource.RUSAGE_SELF).ru_utime - t0, res.steps)
"""


def run(tree: Path, n: int, qps: float, k: int, predictor: str) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    scenario = ROOT / "examples" / "llama70b-4xh100.toml"
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(n), str(qps), str(k), predictor, str(scenario)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    cpu, steps = out.stdout.split()
    return float(cpu), int(steps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=Path, required=True, help="another specwise checkout (its src/ is imported)")
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs per job and tree; the least CPU time counts")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "sim_compare.json")
    args = ap.parse_args()
    rows = []
    print(f"{'qps':>5} {'k':>2} {'base cpu s':>10} {'roofline':>9} {'ratio':>6} {'pub-fit':>8} {'ratio':>6}")
    for qps in (1.0, 4.0, 12.0):
        for k in (0, 4):
            runs: dict[str, list[tuple[float, int]]] = {"base": [], "roofline": [], "fit": []}
            for _ in range(args.repeat):  # alternating, so drifting load hits every tree alike
                runs["base"].append(run(args.base, args.requests, qps, k, "roofline"))
                runs["roofline"].append(run(ROOT, args.requests, qps, k, "roofline"))
                runs["fit"].append(run(ROOT, args.requests, qps, k, "published-fit"))
            (base, base_steps), (roof, roof_steps), (fit, fit_steps) = (
                min(runs[t]) for t in ("base", "roofline", "fit")
            )
            rows.append(
                {
                    "qps": qps,
                    "k": k,
                    "base_cpu_s": base,
                    "roofline_cpu_s": roof,
                    "published_fit_cpu_s": fit,
                    "roofline_vs_base": roof / base,
                    "published_fit_vs_base": fit / base,
                    "steps": {"base": base_steps, "roofline": roof_steps, "published_fit": fit_steps},
                }
            )
            print(f"{qps:>5g} {k:>2} {base:>10.2f} {roof:>9.2f} {roof / base:>6.2f} {fit:>8.2f} {fit / base:>6.2f}")
    doc = {
        "command": f"python bench/sim_compare.py --base BASE --requests {args.requests} --repeat {args.repeat}",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "requests": args.requests,
        "rows": rows,
    }
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
