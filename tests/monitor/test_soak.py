"""Soak: thousands of monitor rounds over a fault-injecting target (resets, outages, garbage, truncated pages,
histograms with missing buckets) -- the loop keeps going, reports each fault episode once, and its memory stays
flat. Bounded and self-stopping (a fixed number of rounds, a fake clock)."""

from __future__ import annotations

import io
import json
import random
import tracemalloc
from pathlib import Path

from specwise.errors import SpecwiseError
from specwise.metrics import parse_exposition
from specwise.metrics.exposition import Scrape
from specwise.monitor.dashboard import Dashboard
from specwise.monitor.loop import Target, evaluate_once
from specwise.monitor.rules import Thresholds
from specwise.monitor.sinks import json_lines
from specwise.monitor.store import MonitorStore

PAGE = (Path(__file__).resolve().parents[1] / "fixtures" / "vllm_metrics" / "ngram_after.txt").read_text()


def _scaled(factor: float) -> str:
    """The real vLLM page with every counter/histogram value scaled (time moving forward, or a reset)."""
    out = []
    for line in PAGE.splitlines():
        if line.startswith("#") or not line.strip() or "_created" in line:
            out.append(line)
            continue
        name, _, value = line.rpartition(" ")
        try:
            v = float(value)
        except ValueError:
            out.append(line)
            continue
        scalable = "_total" in name or "_bucket" in name or "_sum" in name or "_count" in name
        out.append(f"{name} {v * factor if scalable else v}")
    return "\n".join(out) + "\n"


def test_soak_with_faults_keeps_memory_flat(tmp_path: Path) -> None:
    rng = random.Random(5)
    pages = {f: parse_exposition(_scaled(f)) for f in (1.0, 1.5, 2.0, 2.5, 3.0)}
    missing_buckets = parse_exposition("\n".join(line for line in _scaled(3.5).splitlines() if 'le="0.5"' not in line))
    state = {"step": 0, "episodes": 0, "down": False}

    def fetch(url: str) -> Scrape:
        state["step"] += 1
        roll = rng.random()
        if roll < 0.04:
            if not state["down"]:
                state["episodes"] += 1
            state["down"] = True
            kind = rng.choice(("ConnectError", "ReadTimeout", "HTTP 500"))
            raise SpecwiseError(f"{url}: scrape failed: {kind}")
        if roll < 0.06:
            if not state["down"]:
                state["episodes"] += 1
            state["down"] = True
            garbage = rng.choice(("<html>oops</html>", PAGE[: rng.randint(10, 4000)] + "\x00{", "vllm:x{ 1"))
            return parse_exposition(garbage, url)  # raises SpecwiseError
        state["down"] = False
        if roll < 0.08:
            return missing_buckets
        return pages[rng.choice(sorted(pages))]  # includes decreases: counter resets

    log = io.StringIO()
    store = MonitorStore(tmp_path / "m.sqlite", retention_s=50.0)
    board = Dashboard(history=100)
    targets = [Target("http://a/metrics"), Target("http://b/metrics")]
    clock = iter(float(i) for i in range(10**6))
    try:
        tracemalloc.start()
        for round_ in range(700):
            evaluate_once(
                targets, Thresholds(min_drafts=1), store, json_lines(log), clock=lambda: next(clock), fetch=fetch
            )
            board.update(targets, float(round_))
            if round_ == 200:
                log.seek(0)
                log.truncate()  # the log sink's buffer is the caller's, not the monitor's memory
                warm, _ = tracemalloc.get_traced_memory()
            if round_ > 200 and round_ % 100 == 0:
                log.seek(0)
                log.truncate()
        end, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        board.close()
        store.close()
    assert end - warm < 512 * 1024, f"memory grew by {(end - warm) / 1024:.0f} KiB over 500 rounds"
    assert len(board.state()["targets"][0]["series"]["t"]) <= 100


def test_fault_episodes_are_reported_once_each() -> None:
    good = parse_exposition(_scaled(1.0))
    script = ["ok", "down", "down", "garbage", "ok", "ok", "down", "ok"]
    calls = iter(script)

    def fetch(url: str) -> Scrape:
        kind = next(calls)
        if kind == "down":
            raise SpecwiseError("scrape failed: ReadTimeout")
        if kind == "garbage":
            return parse_exposition("not { exposition", url)
        return good

    log = io.StringIO()
    target = Target("http://t/metrics")
    clock = iter(float(i) for i in range(100))
    for _ in script:
        evaluate_once([target], Thresholds(), None, json_lines(log), clock=lambda: next(clock), fetch=fetch)
    events = [json.loads(line)["event"] for line in log.getvalue().splitlines()]
    assert events == ["target_down", "target_up", "target_down", "target_up"]


def test_short_soak_against_misbehaving_servers(tmp_path: Path) -> None:
    """bench/monitor_soak.py for 20 s (the committed result is its 10-minute run): the real CLI against slowloris,
    a 50 MB page, NaN/negative/inf values and a healthy real page -- healthy windows on time, RSS bounded, each
    fault reported once, /api/state strict JSON, the run ending by itself."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "bench" / "monitor_soak.py"
    out = tmp_path / "soak.json"
    proc = subprocess.run(
        [sys.executable, str(script), "--duration", "20", "--interval", "1", "--slack", "3", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    doc = json.loads(out.read_text())
    assert doc["passed"], (doc["checks"], proc.stderr[-2000:])
    assert proc.returncode == 0
