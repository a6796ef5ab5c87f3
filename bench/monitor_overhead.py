"""Monitor overhead: CPU seconds per evaluation round of N scrape targets ("100 targets every 5 s", "1,000 every 15 s").

The targets are N monitor targets on one server in its own process (its CPU is not counted): the ``healthy`` fake of
:mod:`specwise.monitor.fake_servers` serving a real vLLM /metrics page (tests/fixtures/vllm_metrics/ngram_after.txt,
54 KB, captured from vLLM with speculation) whose counters and histograms grow with time, over HTTP/1.1 keep-alive.
Each round does what one `specwise monitor` interval does: scrape every target at once, parse, vet, window, rules,
alert state, and (``--store``, the default) write every window to SQLite in one commit. Reported: the monitor
process's CPU seconds per round (time.process_time: the other process and other load on the machine do not count)
and the share of one core at ``--interval``.

``--compare`` also runs, in the same process and run, the previous implementation's path on the same targets: a
pooled ``httpx.Client`` per scrape, the full ``prometheus_client`` parse of the page, 16 threads, one commit per
window -- and reports the ratio.

Run:  python bench/monitor_overhead.py --targets 100 --interval 5 --compare
      python bench/monitor_overhead.py --targets 1000 --interval 15 --rounds 8 --out bench/results/monitor_1000.json
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from specwise.metrics import parse_exposition
from specwise.metrics.exposition import Scrape
from specwise.monitor.fetch import Scraper
from specwise.monitor.loop import Target, evaluate_once, window_parser
from specwise.monitor.rules import Thresholds
from specwise.monitor.store import MonitorStore

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "tests/fixtures/vllm_metrics/ngram_after.txt"


def _rounds(
    targets: list[Target], rounds: int, interval: float, one_round: Callable[[], None]
) -> tuple[list[float], list[float]]:
    """CPU and wall seconds of each round; rounds start ``interval`` apart (the server's page moves meanwhile)."""
    one_round()  # warm-up: connections, first scrape of every target, parser memo
    cpu, wall = [], []
    for _ in range(rounds):
        time.sleep(min(interval, 1.0))
        c0, w0 = time.process_time(), time.perf_counter()
        one_round()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    windows = sum(1 for t in targets if t.last is not None)
    assert windows == len(targets), f"only {windows} of {len(targets)} targets have a window"
    return sorted(cpu), sorted(wall)


def _summary(cpu: list[float], wall: list[float], interval: float) -> dict[str, float]:
    med = cpu[len(cpu) // 2]
    return {
        "cpu_s_per_round_median": round(med, 4),
        "cpu_s_per_round_max": round(cpu[-1], 4),
        "wall_s_per_round_median": round(wall[len(wall) // 2], 4),
        "cpu_share_of_one_core": round(med / interval, 4),
    }


def new_path(url: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    targets = [Target(url) for _ in range(args.targets)]
    store = MonitorStore(tmp / "new.sqlite", 3600.0) if args.store else None
    scraper = Scraper(window_parser(), timeout_s=min(10.0, 0.8 * args.interval))
    try:
        cpu, wall = _rounds(
            targets,
            args.rounds,
            args.interval,
            lambda: evaluate_once(targets, Thresholds(), store, None, scraper=scraper),
        )
    finally:
        scraper.close()
        if store is not None:
            store.close()
    return _summary(cpu, wall, args.interval)


class _OldStore(MonitorStore):
    """The previous store: one commit (and one prune) per window."""

    def add_window(self, url: str, end_s: float, stats: dict[str, Any]) -> None:
        super().add_window(url, end_s, stats)
        self.commit()


def old_path(url: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    client = httpx.Client(limits=httpx.Limits(max_keepalive_connections=200))

    def fetch(u: str) -> Scrape:
        return parse_exposition(client.get(u, timeout=10.0).text, u)

    targets = [Target(url) for _ in range(args.targets)]
    store = _OldStore(tmp / "old.sqlite", 3600.0) if args.store else None
    try:
        cpu, wall = _rounds(
            targets,
            args.rounds,
            args.interval,
            lambda: evaluate_once(targets, Thresholds(), store, None, fetch=fetch, workers=16),
        )
    finally:
        client.close()
        if store is not None:
            store.close()
    return _summary(cpu, wall, args.interval)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--interval", type=float, default=5.0, help="the monitor interval the CPU share is taken at")
    ap.add_argument("--page", type=Path, default=PAGE)
    ap.add_argument("--no-store", dest="store", action="store_false", help="do not write windows to SQLite")
    ap.add_argument("--compare", action="store_true", help="also run the previous implementation's path")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/monitor_overhead_vllm_page.json")
    args = ap.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-m", "specwise.monitor.fake_servers", "healthy", "--page", str(args.page)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = json.loads(server.stdout.readline())["healthy"]
        size = len(httpx.get(url, timeout=10).content)
        with tempfile.TemporaryDirectory() as tmp:
            new = new_path(url, args, Path(tmp))
            old = old_path(url, args, Path(tmp)) if args.compare else None
    finally:
        server.terminate()
        server.wait(timeout=10)
    doc: dict[str, Any] = {
        "command": "python " + " ".join(sys.argv),
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "targets": args.targets,
        "interval_s": args.interval,
        "rounds": args.rounds,
        "page": str(args.page.relative_to(ROOT) if args.page.is_relative_to(ROOT) else args.page),
        "metrics_page_bytes": size,
        "store": args.store,
        "monitor": new,
        "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if old is not None:
        doc["previous_implementation"] = old
        doc["cpu_ratio_previous_over_new"] = round(old["cpu_s_per_round_median"] / new["cpu_s_per_round_median"], 2)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
