"""Which training records make the published fit's cost non-smooth at the kept coefficients: a diagnostic of why the
optimizer's steps are rejected there, never used to choose coefficients.

    .venv/bin/python scripts/fit_kinks.py [--fit FILE] [--start N] [--plain-steps] [--s 1e-2,...] [--h 1e-4] [--top 12]

The numbers the 2026-12-07 README paragraph quotes from before the node-aware steps (87f03f1's fit, plain steps):

    git show 87f03f1:src/specwise/perfmodel/data/published_fit.json > /tmp/fit-87f03f1.json
    .venv/bin/python scripts/fit_kinks.py --fit /tmp/fit-87f03f1.json --plain-steps [--start 0]

It takes the direction the optimizer would step in from the kept fit -- down the soft_l1 cost's gradient, from the same
forward-difference Jacobian (0.5% steps, away from a grid node, validate/fit_diagnostics.py) -- and replays every
training record at the kept point and at +-s along it (s in ln(coefficient), the direction of unit length). For a record
whose residual r = ln(predicted / published) is smooth there, (r(+s) - r(0)) / s and (r(0) - r(-s)) / s agree more
closely as s shrinks. A *kink* (a max() switching side, a best k changing, an interpolant's node) leaves their
difference about the same at every s; a *jump* (a discrete event of the replay -- a step more or less, a request
admitted one step earlier) leaves r(+s) - r(0) itself about the same at every s. Each class is listed with the records'
ids. Beside it, the cost's gradient by central differences of ``--h`` in ln: where it is far from the forward-difference
gradient, the forward step straddles curvature (on a smooth cost a forward difference estimates g + H h / 2) or a kink
(across a grid node it is a secant of two pieces). Reads src/specwise/perfmodel/data/published_fit.json (or ``--fit``);
writes nothing. Each point replays every training record (~3 CPU s).
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
from specwise.validate.fit_diagnostics import FD_STEP_LN, fd_steps, soft_l1_cost

ROOT = Path(__file__).resolve().parents[1]
FIT = ROOT / "src" / "specwise" / "perfmodel" / "data" / "published_fit.json"
_TRAINING: list[str] = []  # the fit file's training families, set before the worker processes fork
SMALL = 1e-9  # a change in a residual below this is rounding, not a change


def _train() -> list[object]:
    return [r for r in all_records() if r.family in _TRAINING]


def objective_at(x: np.ndarray) -> np.ndarray:
    return fit.objective(_train(), x)  # type: ignore[arg-type]


def soft_l1_gradient(jac: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The gradient of scipy's soft_l1 cost (``soft_l1_cost``) through the residuals' Jacobian: J^T (r / sqrt(1 + z)),
    z = (r / f_scale)^2."""
    z = (r / fit.F_SCALE) ** 2
    return jac.T @ (r / np.sqrt(1.0 + z))


def classify(r0: np.ndarray, plus: list[np.ndarray], minus: list[np.ndarray], s: list[float]) -> dict[str, list[int]]:
    """Residual rows that jump or kink along the line (module docstring): judged on the two smallest steps, where a
    smooth residual's one-sided slopes differ by ~10x less at the smaller step and its change shrinks ~10x."""
    order = np.argsort(s)
    a, b = order[0], order[1]  # the smallest step, then the next
    out: dict[str, list[int]] = {"jump": [], "kink": []}
    for i in range(len(r0)):
        d_small = max(abs(plus[a][i] - r0[i]), abs(r0[i] - minus[a][i]))
        d_next = max(abs(plus[b][i] - r0[i]), abs(r0[i] - minus[b][i]))
        if d_small > SMALL and d_small > 0.5 * d_next:
            out["jump"].append(i)
            continue
        kink_small = abs((plus[a][i] - r0[i]) / s[a] - (r0[i] - minus[a][i]) / s[a])
        kink_next = abs((plus[b][i] - r0[i]) / s[b] - (r0[i] - minus[b][i]) / s[b])
        if kink_small > 1e-3 and kink_small > 0.5 * kink_next:
            out["kink"].append(i)
    return out


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--s", default="1e-2,1e-3,1e-4,1e-5", help="steps along the direction, in ln(coefficient)")
    ap.add_argument("--top", type=int, default=12, help="rows listed per class")
    ap.add_argument("--start", type=int, help="at the end of fit.starts[N] instead of the kept fit")
    ap.add_argument(
        "--fit", type=Path, default=FIT, help="another fit file (a coefficient it lacks: its initial value)"
    )
    ap.add_argument(
        "--plain-steps",
        action="store_true",
        help="forward steps upward, grid nodes ignored (the Jacobian before 2026-12-07)",
    )
    ap.add_argument("--h", type=float, default=1e-4, help="the central-difference step, in ln(coefficient)")
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    try:
        steps = sorted({float(v) for v in args.s.split(",")}, reverse=True)
    except ValueError:
        print(f"--s {args.s!r}: not a comma list of numbers", file=sys.stderr)
        return 2
    if len(steps) < 2 or min(steps) <= 0:
        print("--s: give at least two positive steps", file=sys.stderr)
        return 2
    try:
        doc = json.loads(args.fit.read_text())["fit"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"--fit {args.fit}: not a readable fit file ({exc})", file=sys.stderr)
        return 2
    _TRAINING[:] = doc["training_families"]
    if args.start is not None and not 0 <= args.start < len(doc["starts"]):
        print(f"--start {args.start}: the fit records {len(doc['starts'])} starts", file=sys.stderr)
        return 2
    at = doc["parameters"] if args.start is None else doc["starts"][args.start]["parameters"]
    x0 = fit.vector(fit.with_initial(at))
    print(
        "at the kept fit"
        if args.start is None
        else f"at the end of start {args.start} ({doc['starts'][args.start]['from']})"
    )
    train = _train()
    predicted = fit.predictions(train, x0)  # type: ignore[arg-type]
    ids = [p.record.id for p in predicted if p.status == "predicted"]
    ks = {p.record.id: p.k for p in predicted}
    ids += [f"prior: {p.name}" for p in fit.PARAMS if p.prior]
    low, high = fit.bounds()
    nodes = None if args.plain_steps else fit.grid_nodes_ln(np.zeros_like(x0))
    h = fd_steps(x0, low, high, FD_STEP_LN, nodes)  # what the optimizer takes (--plain-steps: took)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        r0 = objective_at(x0)
        cols = pool.map(objective_at, [x0 + np.eye(len(x0))[j] * h[j] for j in range(len(x0))])
        jac = np.column_stack([(c - r0) / h[j] for j, c in enumerate(cols)])
        g = soft_l1_gradient(jac, r0)
        d = -g / np.linalg.norm(g)
        points = [x0 + sign * s * d for s in steps for sign in (1.0, -1.0)]
        rs = pool.map(objective_at, points)
        eye = np.eye(len(x0)) * args.h
        central = pool.map(objective_at, [x0 + sign * eye[j] for j in range(len(x0)) for sign in (1.0, -1.0)])
    plus, minus = rs[0::2], rs[1::2]
    c0 = soft_l1_cost(r0, fit.F_SCALE)
    print(
        f"training cost {c0:.9f}, |gradient| {np.linalg.norm(g):.4g} "
        + (
            "(forward differences, 0.5% steps upward: --plain-steps)"
            if args.plain_steps
            else "(forward differences, 0.5% steps, as the optimizer takes them)"
        )
    )
    print(
        "direction (ln units, unit length):", {p.name: round(float(v), 3) for p, v in zip(fit.PARAMS, d, strict=True)}
    )
    for s, rp, rm in zip(steps, plus, minus, strict=True):
        cp, cm = soft_l1_cost(rp, fit.F_SCALE), soft_l1_cost(rm, fit.F_SCALE)
        print(f"s = {s:<7g} cost(+s) - cost(0) = {cp - c0:+.3e}   cost(-s) - cost(0) = {cm - c0:+.3e}")
    g_central = np.array(
        [
            (soft_l1_cost(central[2 * j], fit.F_SCALE) - soft_l1_cost(central[2 * j + 1], fit.F_SCALE)) / (2 * args.h)
            for j in range(len(x0))
        ]
    )
    print(
        f"gradient, forward differences of 0.5% (the optimizer's) vs central differences of {args.h:g} in ln: "
        f"largest |component| {np.abs(g).max():.4g} vs {np.abs(g_central).max():.4g}"
    )
    for p, gf, gc in zip(fit.PARAMS, g, g_central, strict=True):
        print(f"  {p.name:<26} {gf:+.4e}  {gc:+.4e}")
    found = classify(r0, list(plus), list(minus), steps)
    small = int(np.argmin(steps))
    for kind, rows in found.items():
        print(f"{kind}s: {len(rows)} of {len(r0)} residual rows")
        rows = sorted(rows, key=lambda i: -abs(plus[small][i] - minus[small][i]))
        for i in rows[: args.top]:
            print(
                f"  {ids[i]} (k {ks.get(ids[i], '-')}): r(0) {r0[i]:+.5f}, "
                + ", ".join(
                    f"s={s:g}: {rp[i] - r0[i]:+.2e}/{r0[i] - rm[i]:+.2e}"
                    for s, rp, rm in zip(steps, plus, minus, strict=True)
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
