"""Monitor overhead: CPU per evaluation round of 100 scrape targets (the issue's "100 targets every 5 s").

The targets are 100 monitor targets on one exporter in its own process (its CPU is not counted): specwise's
zero-latency mock vLLM server (small page), or with ``--page FILE`` a static server of a real vLLM /metrics page
(tests/fixtures/vllm_metrics/, captured from vLLM 0.32 CPU with speculation). Each round scrapes and parses every
target's /metrics, windows it, checks the rules and updates the alert state -- what one `specwise monitor`
interval does (16 scrapes at a time). Reported: CPU seconds of the monitor process per round and the share of one
core at a 5 s interval.

Run:  .venv/bin/python bench/monitor_overhead.py [--targets 100] [--rounds 20]
      .venv/bin/python bench/monitor_overhead.py --page tests/fixtures/vllm_metrics/ngram_after.txt \
          --out bench/results/monitor_overhead_vllm_page.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from specwise.monitor.loop import Target, evaluate_once
from specwise.monitor.rules import Thresholds

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--page", type=Path, help="serve this exposition text as /metrics instead of the mock")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/monitor_overhead.json")
    args = ap.parse_args()
    if args.page:
        site = Path(tempfile.mkdtemp())
        shutil.copy(args.page, site / "metrics")
        port = 18000 + os.getpid() % 1000
        mock = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(site)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        time.sleep(1.0)
    else:
        mock = subprocess.Popen(
            [sys.executable, "-m", "specwise.loadgen.mock_server"], stdout=subprocess.PIPE, text=True
        )
        url = mock.stdout.readline().strip()  # type: ignore[union-attr]
    try:
        for i in range(0 if args.page else 20):  # counters and histograms with data in them
            httpx.post(url + "/v1/completions", json={"model": "m", "prompt": "x", "max_tokens": 8 + i}, timeout=10)
        size = len(httpx.get(url + "/metrics", timeout=10).content)
        targets = [Target(url + "/metrics") for _ in range(args.targets)]
        evaluate_once(targets, Thresholds(), None, None, workers=16)  # warm-up: first scrape of every target
        cpu, wall = [], []
        for _ in range(args.rounds):
            c0, w0 = time.process_time(), time.perf_counter()
            evaluate_once(targets, Thresholds(), None, None, workers=16)  # as the CLI loop does
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
    finally:
        mock.terminate()
        mock.wait(timeout=10)
    cpu.sort()
    wall.sort()
    doc = {
        "command": f"python bench/monitor_overhead.py --targets {args.targets} --rounds {args.rounds}"
        + (f" --page {args.page}" if args.page else ""),
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "targets": args.targets,
        "page": str(args.page) if args.page else "specwise mock server",
        "metrics_page_bytes": size,
        "cpu_s_per_round_median": round(cpu[len(cpu) // 2], 4),
        "cpu_s_per_round_max": round(cpu[-1], 4),
        "wall_s_per_round_median": round(wall[len(wall) // 2], 4),
        "cpu_share_of_one_core_at_5s_interval": round(cpu[len(cpu) // 2] / 5.0, 4),
    }
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
