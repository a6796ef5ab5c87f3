"""The training cost along the straight line (in ln(coefficient)) from where one declared start of the published fit
ended to the kept fit: a diagnostic of why a start stopped short, never used to choose coefficients.

    .venv/bin/python scripts/fit_line.py [--start N] [--t 0,0.001,0.01,0.1,0.5,1]

A cost that falls monotonically to the kept fit says the start stalled in a valley (its steps rejected), not at
another minimum; a rise on the way says there is a barrier between them. Reads
src/specwise/perfmodel/data/published_fit.json; writes nothing. Each point replays every training record (~3 CPU s).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
from pathlib import Path

import numpy as np

from specwise.evidence.records import all_records
from specwise.validate import fit
from specwise.validate.fit_diagnostics import soft_l1_cost

ROOT = Path(__file__).resolve().parents[1]
FIT = ROOT / "src" / "specwise" / "perfmodel" / "data" / "published_fit.json"
_LINE: list[np.ndarray] = []  # the two ends, set before the worker processes fork
_TRAINING: list[str] = []  # the fit file's training families


def cost_at(t: float) -> float:
    a, b = _LINE
    train = [r for r in all_records() if r.family in _TRAINING]
    return soft_l1_cost(fit.objective(train, a + t * (b - a)), fit.F_SCALE)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--start", type=int, default=0, help="which of fit.starts (0: the initial values)")
    ap.add_argument("--t", default="0,0.001,0.01,0.05,0.1,0.25,0.5,0.75,0.9,1", help="points, 0 = start's end")
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    try:
        ts = [float(v) for v in args.t.split(",")]
    except ValueError:
        print(f"--t {args.t!r}: not a comma list of numbers", file=sys.stderr)
        return 2
    doc = json.loads(FIT.read_text())["fit"]
    if not 0 <= args.start < len(doc["starts"]):
        print(f"--start {args.start}: the fit records {len(doc['starts'])} starts", file=sys.stderr)
        return 2
    _TRAINING[:] = doc["training_families"]
    _LINE[:] = [fit.vector(doc["starts"][args.start]["parameters"]), fit.vector(doc["parameters"])]
    print(f"from the end of start {args.start} ({doc['starts'][args.start]['from']}) to the kept fit")
    print("ln(kept / start's end):", np.round(_LINE[1] - _LINE[0], 3).tolist())
    with multiprocessing.get_context("fork").Pool(2) as pool:
        for t, c in zip(ts, pool.map(cost_at, ts), strict=True):
            print(f"t = {t:<6g} training cost {c:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
