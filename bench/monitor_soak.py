"""Monitor soak: `specwise monitor` for a long run against four loopback servers that misbehave, and what it did.

The servers (:mod:`specwise.monitor.fake_servers`, one process): ``healthy`` (a real vLLM page whose counters grow),
``slowloris`` (one header byte a second, forever), ``huge`` (a 50 MB page, with and without Content-Length) and
``badvalues`` (NaN and +Inf gauges on every scrape; every other scrape a counter at -1e6 and another at +Inf). The
monitor is the real CLI in its own process (``--serve`` dashboard on, history in a temporary SQLite file). Recorded
and checked:

* every healthy window on time: consecutive windows of the healthy server at most ``--interval`` + ``--slack``
  seconds apart, the first within two intervals of the start, and about duration / interval of them;
* the monitor's memory: resident set size polled every second (and the kernel's high-water mark), max <
  ``--max-rss-mib``;
* each fault reported once: exactly one ``target_down`` for slowloris and for huge (never a ``target_up``), exactly
  one ``fault`` per kind (non-finite sample, impossible counter) for badvalues, nothing for healthy;
* badvalues' windows never negative or non-finite; /api/state always strict JSON (no NaN), polled every 5 s;
* the run ends by itself at ``--duration`` (a hung server does not hold it) with exit status 0 or 1.

Run:  python bench/monitor_soak.py --duration 600 --out bench/results/monitor_soak.json
      python bench/monitor_soak.py --duration 20 --interval 1        # the short version tests/monitor runs
Exit status 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "tests/fixtures/vllm_metrics/ngram_after.txt"


def _rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB; zeros once it is gone."""
    try:
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
        )
    except OSError:
        return 0, 0
    return int(fields.get("VmRSS", "0 kB").split()[0]), int(fields.get("VmHWM", "0 kB").split()[0])


def _strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"non-JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


class Watcher:
    """Polls the monitor's RSS every second and its /api/state every 5 s while it runs."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.rss_max_kib = self.hwm_kib = 0
        self.dashboard: str | None = None
        self.state_polls = 0
        self.state_errors: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last_state = 0.0
        while self.proc.poll() is None:
            rss, hwm = _rss_kib(self.proc.pid)
            self.rss_max_kib, self.hwm_kib = max(self.rss_max_kib, rss), max(self.hwm_kib, hwm)
            if self.dashboard and time.monotonic() - last_state >= 5.0:
                last_state = time.monotonic()
                try:
                    with urllib.request.urlopen(self.dashboard + "api/state", timeout=5) as resp:
                        _strict(resp.read().decode())
                    self.state_polls += 1
                except ValueError as exc:
                    self.state_errors.append(f"{type(exc).__name__}: {exc}"[:200])
                except OSError as exc:
                    # A poll racing the monitor's own shutdown at the end of --duration is not a dashboard fault.
                    try:
                        self.proc.wait(timeout=2.0)
                    except subprocess.TimeoutExpired:
                        self.state_errors.append(f"{type(exc).__name__}: {exc}"[:200])
            time.sleep(1.0)


def _events(stdout: str) -> tuple[list[dict[str, Any]], str | None]:
    events, dashboard = [], None
    for line in stdout.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("event") == "dashboard":
            dashboard = e["url"]
        elif "url" in e:
            events.append(e)
    return events, dashboard


def _windows(db: Path, url: str) -> list[tuple[float, dict[str, Any]]]:
    con = sqlite3.connect(str(db))
    try:
        rows = con.execute("SELECT end_s, stats FROM windows WHERE url = ? ORDER BY end_s", (url,)).fetchall()
    finally:
        con.close()
    return [(float(t), json.loads(s)) for t, s in rows]


def _rates_ok(stats: dict[str, Any]) -> bool:
    keys = ("draft_tokens_per_s", "accepted_tokens_per_s", "generation_tokens_per_s", "requests_per_s")
    values = [stats.get(k) for k in keys]
    return all(v is None or (isinstance(v, int | float) and math.isfinite(v) and v >= 0) for v in values)


def _checks(args: argparse.Namespace, urls: dict[str, str], run: dict[str, Any], db: Path) -> dict[str, Any]:
    events: list[dict[str, Any]] = run["events"]

    def kinds(url: str) -> list[str]:
        return [e["event"] + (":" + e["fault"] if "fault" in e else "") for e in events if e["url"] == url]

    healthy = _windows(db, urls["healthy"])
    times = [t for t, _ in healthy]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    expected = int(args.duration / args.interval)
    bad_windows = _windows(db, urls["badvalues"])
    out: dict[str, Any] = {
        "healthy_windows": len(healthy),
        "healthy_windows_expected_about": expected,
        "healthy_first_window_after_s": round(times[0] - run["started_at"], 3) if times else None,
        "healthy_max_gap_s": round(max(gaps), 3) if gaps else None,
        "healthy_gaps_over_interval_plus_slack": sum(1 for g in gaps if g > args.interval + args.slack),
        "events_by_server": {kind: kinds(url) for kind, url in urls.items()},
        "badvalues_windows": len(bad_windows),
        "badvalues_windows_with_negative_or_nonfinite_rates": sum(1 for _, s in bad_windows if not _rates_ok(s)),
    }
    ok = {
        "healthy_windows_on_time": bool(times)
        and out["healthy_gaps_over_interval_plus_slack"] == 0
        and out["healthy_first_window_after_s"] <= 2 * args.interval + args.slack
        and len(healthy) >= expected - 2,
        "rss_under_limit": run["rss_max_mib"] < args.max_rss_mib,
        "slowloris_reported_once": kinds(urls["slowloris"]) == ["target_down"],
        "huge_reported_once": kinds(urls["huge"]) == ["target_down"],
        "badvalues_each_fault_once": sorted(kinds(urls["badvalues"]))
        == ["fault:impossible_counter", "fault:non_finite_sample"],
        "healthy_no_faults": not [k for k in kinds(urls["healthy"]) if k != "alert" and k != "resolved"],
        "badvalues_windows_sane": bad_windows != [] and out["badvalues_windows_with_negative_or_nonfinite_rates"] == 0,
        "api_state_strict_json": run["api_state_polls"] > 0 and not run["api_state_errors"],
        "ended_on_time": run["exit_code"] in (0, 1) and run["wall_s"] <= args.duration + args.interval + 10,
    }
    out["checks"] = ok
    out["passed"] = all(ok.values())
    return out


def _run_monitor(args: argparse.Namespace, urls: dict[str, str], db: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "specwise.cli", "monitor"]
    for kind in ("healthy", "slowloris", "huge", "badvalues"):
        cmd += ["--url", urls[kind]]
    cmd += ["--interval", str(args.interval), "--duration", str(args.duration), "--db", str(db)]
    cmd += ["--serve", "127.0.0.1:0", "--min-drafts", "1"]
    started = time.time()
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watcher = Watcher(proc)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # {"event": "dashboard", "url": ...}
    watcher.dashboard = _events(first)[1]
    watcher.thread.start()
    rest, err = proc.communicate(timeout=args.duration + 120)
    wall = time.monotonic() - t0
    watcher.thread.join(5)
    events, _ = _events(first + rest)
    return {
        "command": " ".join(cmd[1:]),
        "started_at": started,
        "wall_s": round(wall, 2),
        "exit_code": proc.returncode,
        "stderr": err[-2000:],
        "rss_max_mib": round(max(watcher.rss_max_kib, watcher.hwm_kib) / 1024, 1),
        "api_state_polls": watcher.state_polls,
        "api_state_errors": watcher.state_errors[:5],
        "events": events,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=600.0, help="seconds the monitor runs (default 600)")
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--slack", type=float, default=1.0, help="seconds a healthy window may be late")
    ap.add_argument("--max-rss-mib", type=float, default=200.0)
    ap.add_argument("--page", type=Path, default=PAGE)
    ap.add_argument("--out", type=Path, help="write the result JSON here")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    servers = subprocess.Popen(
        [sys.executable, "-m", "specwise.monitor.fake_servers", "--page", str(args.page)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert servers.stdout is not None
        urls = json.loads(servers.stdout.readline())
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "monitor.sqlite"
            run = _run_monitor(args, urls, db)
            result = _checks(args, urls, run, db)
    finally:
        servers.terminate()
        servers.wait(timeout=10)
    doc = {
        "command": "python bench/monitor_soak.py " + " ".join(sys.argv[1:]),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "duration_s": args.duration,
        "interval_s": args.interval,
        "servers": urls,
        "monitor": {k: v for k, v in run.items() if k != "events"},
        "events": run["events"],
        **result,
    }
    text = json.dumps(doc, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(json.dumps({k: doc[k] for k in ("checks", "passed")}, indent=2))
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
