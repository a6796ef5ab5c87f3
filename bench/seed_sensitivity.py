"""How much advise's answer on the shipped examples depends on the simulator's seed: each `examples/advise` scenario
is advised with `[sweep].seed` = 0 .. N-1 (the shipped files use 0), and the decision, headline and each candidate's
verdict, k and simulated speedup at the operating load are tabled per seed. The speedups' spread is the simulation's
own sampling noise at the scenario's `num_requests`; a decision that changes with the seed sits within that noise of
its band's edge (`min_speedup` / (1 - band) for enable, `min_speedup` / (1 + band) for disable).

`--replicates R` sets `[advise].replicates` (default: the scenario's, 5 unless it says): advise then decides at the
operating load on the mean of R runs (the sweep's and R - 1 replicates of its seed, on streams of their own) and its
90% interval, and each k's capacity on R saturated runs; `--replicates 1` is one draw, as advise decided before
2026-12-07 (bench/results/seed_sensitivity_one_draw.json).

Run:  .venv/bin/python bench/seed_sensitivity.py [--seeds 5] [--replicates R] [--out FILE.json]
Prints a table and writes JSON (each `advise` run as the CLI runs it, `--json`, in a subprocess).
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "advise"
# the flags the README runs these examples with (vLLM 0.9: the last release that runs Qwama at TP 4)
EXTRA = {
    "evidence-llama3-70b-qwama-v0": ["--vllm-version", "0.9"],
    "schedule-llama3-70b-qwama": ["--vllm-version", "0.9"],
}


def with_seed(text: str, seed: int) -> str:
    """The scenario's TOML with ``[sweep].seed`` set (added to its [sweep] table, or a new one)."""
    if re.search(r"(?m)^seed\s*=", text):
        return re.sub(r"(?m)^seed\s*=.*$", f"seed = {seed}", text)
    if re.search(r"(?m)^\[sweep\]\s*$", text):
        return re.sub(r"(?m)^\[sweep\]\s*$", f"[sweep]\nseed = {seed}", text, count=1)
    return text + f"\n[sweep]\nseed = {seed}\n"


def with_replicates(text: str, replicates: int | None) -> str:
    """The scenario's TOML with ``[advise].replicates`` set (None: as it is)."""
    if replicates is None:
        return text
    if re.search(r"(?m)^replicates\s*=", text):
        return re.sub(r"(?m)^replicates\s*=.*$", f"replicates = {replicates}", text)
    if re.search(r"(?m)^\[advise\]\s*$", text):
        return re.sub(r"(?m)^\[advise\]\s*$", f"[advise]\nreplicates = {replicates}", text, count=1)
    return text + f"\n[advise]\nreplicates = {replicates}\n"


def advise(scenario: Path, seed: int, extra: list[str], replicates: int | None = None) -> dict[str, Any]:
    text = with_replicates(with_seed(scenario.read_text(), seed), replicates)
    # beside the original, so the scenario's relative paths (profiles, traces) resolve as they do for it
    with tempfile.NamedTemporaryFile("w", suffix=".toml", dir=scenario.parent, prefix=".seed-", delete=False) as fh:
        fh.write(text)
        path = Path(fh.name)
    try:
        t0 = time.perf_counter()
        argv = [sys.executable, "-m", "specwise", "advise", "--scenario", str(path), "--json", *extra]
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
        wall = time.perf_counter() - t0
    finally:
        path.unlink()
    doc = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return {
        "seed": seed,
        "exit": proc.returncode,
        "wall_s": round(wall, 2),
        "decision": doc.get("decision"),
        "headline": doc.get("headline"),
        "named_load": named_load(doc.get("headline") or ""),
        "candidates": [
            {
                "candidate": c.get("candidate"),
                "verdict": c.get("verdict"),
                "k": c.get("k"),
                "speedup_at_operating_qps": c.get("speedup_at_operating_qps"),
                # what the verdict rests on with replicates: the runs' mean and its 90% interval (a disabled row
                # quotes no speedup_at_operating_qps, but its sampling is there)
                "sampling_mean": (c.get("sampling") or {}).get("mean"),
                "sampling_interval_90": (c.get("sampling") or {}).get("interval_90"),
                # the loads either side of an "enable below ~X QPS" edge, simulated as many times (2026-12-07)
                "edge_sampling": [
                    {"qps": e.get("qps"), "mean": e.get("mean"), "interval_90": e.get("interval_90")}
                    for e in c.get("edge_sampling") or ()
                ],
                # the k-by-batch-size schedule where it was run more than once (where it must switch a loss off)
                "schedule_repeated": [s for s in c.get("schedule_results") or () if s.get("interval_90")],
                # each k's capacity, and the 90% interval of those that are the mean of several saturated runs
                "capacity_per_s_by_k": (c.get("sim") or {}).get("capacity_per_s_by_k"),
                "capacity_interval_90_by_k": (c.get("sim") or {}).get("capacity_interval_90_by_k"),
            }
            for c in doc.get("candidates", [])
        ],
    }


def named_load(headline: str) -> float | None:
    """The load an "enable ... only while the load stays below ~X QPS" headline names; None in any other."""
    m = re.search(r"below ~([0-9.]+) QPS", headline)
    return float(m.group(1)) if m else None


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per example: the decisions seen, and per candidate the range of its speedup at the operating load."""
    spreads: dict[str, list[float]] = {}
    for run in runs:
        for c in run["candidates"]:
            if c["speedup_at_operating_qps"] is not None:
                spreads.setdefault(c["candidate"], []).append(float(c["speedup_at_operating_qps"]))
    return {
        "decisions": sorted({str(r["decision"]) for r in runs}),
        "headlines": len({str(r["headline"]) for r in runs}),
        "named_loads": sorted({r["named_load"] for r in runs if r.get("named_load") is not None}),
        "speedup_range": {
            name: [min(v), max(v), (max(v) - min(v)) / (sum(v) / len(v))] for name, v in sorted(spreads.items())
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--replicates", type=int, default=None, help="[advise].replicates (default: the scenario's)")
    ap.add_argument("--out", type=Path, default=None, help="default: bench/results/seed_sensitivity.json")
    ap.add_argument("--only", action="append", default=[], help="advise only this example (its file stem); repeat")
    args = ap.parse_args()
    if args.only and args.out is None:  # review s58: a subset would replace the shipped 9-example results
        ap.error("--only needs --out (a subset must not replace bench/results/seed_sensitivity.json)")
    args.out = args.out or ROOT / "bench" / "results" / "seed_sensitivity.json"
    results: dict[str, Any] = {}
    print(f"{'example':40} {'decisions over seeds':32} speedup at the operating load (min-max, spread)")
    for scenario in sorted(EXAMPLES.glob("*.toml")):
        if args.only and scenario.stem not in args.only:
            continue
        runs = [advise(scenario, seed, EXTRA.get(scenario.stem, []), args.replicates) for seed in range(args.seeds)]
        s = summary(runs)
        results[scenario.stem] = {"runs": runs, "summary": s}
        spread = "; ".join(f"{n}: {lo:.3f}-{hi:.3f} ({sp:.1%})" for n, (lo, hi, sp) in s["speedup_range"].items())
        named = f"; named loads {', '.join(f'~{q:g}' for q in s['named_loads'])} QPS" if s["named_loads"] else ""
        print(f"{scenario.stem:40} {', '.join(s['decisions']):32} {spread or '-'}{named}")
    doc = {
        "command": f"python bench/seed_sensitivity.py --seeds {args.seeds}"
        + (f" --replicates {args.replicates}" if args.replicates is not None else "")
        + "".join(f" --only {name}" for name in args.only),
        "replicates": args.replicates,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "seeds": list(range(args.seeds)),
        "examples": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
