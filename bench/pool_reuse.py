"""One process pool per advise against a fresh pool per map: wall and CPU seconds of ``advise`` on shipped examples.

advise maps its simulations 4-5 times per candidate (the sweep, the capacity replicates, the operating load's and
the edge loads' replicates); a fresh pool per map pays its workers' start and imports each time. This runs each
example with three executors, in turns, in this one process (so the machine's load is shared alike):
``in-process`` (``LocalExecutor(1)``: no pool), ``pool per map`` (``LocalExecutor(2)``, the behaviour before
2026-12-07) and ``one pool`` (``LocalExecutor(2, keep_pool=True)``, what ``open_executor`` gives the CLI and the
API now), and checks that all three give the same advice.

Run:  .venv/bin/python bench/pool_reuse.py [--repeats 3] [--start-method fork|forkserver|spawn] [--out FILE]
Prints a table (median of the repeats) and writes JSON. CPU seconds: this process and its reaped children (under
forkserver the workers are the fork server's children, not this process's: their CPU is not counted, compare wall).
Results: bench/results/pool_reuse.json (fork, Linux's default to Python 3.13) and pool_reuse_forkserver.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs
from specwise.executors.local import LocalExecutor

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("schedule-llama31-70b-1b", "summarize-low-qps", "evidence-llama31-8b-eagle-rtx3090")
EXECUTORS: dict[str, Callable[[], LocalExecutor]] = {
    "in-process": lambda: LocalExecutor(1),
    "pool per map": lambda: LocalExecutor(2),
    "one pool": lambda: LocalExecutor(2, keep_pool=True),
}


def cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def one_run(name: str, make: Callable[[], LocalExecutor]) -> tuple[float, float, dict[str, Any]]:
    inputs = load_inputs(ROOT / "examples" / "advise" / f"{name}.toml")
    executor = make()
    wall0, cpu0 = time.perf_counter(), cpu_s()
    try:
        doc = advise(inputs, executor=executor).to_json()
    finally:
        executor.close()  # a kept pool's workers are reaped here, so their CPU is counted
    wall, cpu = time.perf_counter() - wall0, cpu_s() - cpu0
    doc.pop("generated_at", None)
    return wall, cpu, doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--start-method",
        choices=("fork", "forkserver", "spawn"),
        help="how pool workers start (default: this platform's; Python 3.14 made forkserver Linux's, spawn is macOS's)",
    )
    args = ap.parse_args()
    if args.start_method:
        multiprocessing.set_start_method(args.start_method)
    method = multiprocessing.get_start_method()
    rows = []
    for name in EXAMPLES:
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in EXECUTORS}
        docs: dict[str, str] = {}
        for _ in range(args.repeats):
            for label, make in EXECUTORS.items():  # in turns: a load spike hits each alike
                wall, cpu, doc = one_run(name, make)
                times[label].append((wall, cpu))
                docs[label] = json.dumps(doc, sort_keys=True)
        same = len(set(docs.values())) == 1
        for label, runs in times.items():
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            row = {"example": name, "executor": label, "start_method": method, "wall_s": wall, "cpu_s": cpu}
            rows.append({**row, "same_advice": same})
            print(f"{name:36s} {method:10s} {label:13s} wall {wall:6.2f} s  cpu {cpu:6.2f} s  same advice: {same}")
    out = {
        "command": "python bench/pool_reuse.py"
        + (f" --repeats {args.repeats}" if args.repeats != 3 else "")
        + (f" --start-method {args.start_method}" if args.start_method else ""),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "repeats": args.repeats,
        "rows": rows,
    }
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
