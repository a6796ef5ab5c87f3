"""Fit the step-time model (perfmodel/v2.py, perfmodel/profiles.py) to the declared training families of the
published evidence set, then evaluate the held-back families with the frozen coefficients, and write both into
src/specwise/perfmodel/data/published_fit.json.

    .venv/bin/python scripts/fit_published.py [--max-nfev 40] [--starts 3 | --starts-from FILE] [--dry-run | --evaluate]

Training families (declared here, never chosen by results): SpecDecode-Bench (vLLM 0.10.1 measured speedups vs
batch size, its released traces for acceptance; Fig. 2's SGLang chain/tree runs) and the plain-decoding vLLM
measurements (InferenceX, vLLM #12101, InferenceBench, J. Musgrave). Every other family is validation only.
Needs scipy (a dev dependency).

How (declared before any held-back error was seen): the objective is the training records' log ratios plus two priors
from outside measurements and six weak regularisers on the engine terms the records do not determine (validate/fit.py);
scipy's trf with a soft_l1 loss runs on u = ln(value) - ln(start) (so its first trust region is one unit wide, not the
norm of the start), with our own finite-difference Jacobian (a uniform 0.5% step, validate/fit_diagnostics.py
FD_STEP_LN; since 2026-12-07 a coefficient the replay takes on a grid steps downward where the upward step would cross a
node, fit.GRID_NODES) and xtol = ftol = 1e-6 (trf's xtol test, |du| < xtol (xtol + |u|), is relative to the distance
from each start, so the starts do not share one stopping rule exactly). It starts from the declared initial values, from
the previous fit, and from a seeded perturbation of the initial values (ln 2 at most per coefficient), and keeps the
start with the lowest training cost. Each start's held-back errors are reported beside it and never used to choose. Each
start's vector is written into the file (``fit.starts[*].start``); ``--starts-from`` reruns them."""

from __future__ import annotations

import argparse
import datetime
import json
import math
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from specwise.catalog import catalog_gpus
from specwise.evidence.records import all_records
from specwise.validate import fit
from specwise.validate.anchor_grid import ANCHOR_CELLS, FGM_CELLS
from specwise.validate.fit_diagnostics import FD_STEP_LN, fd_jacobian, identifiability, soft_l1_cost
from specwise.validate.predict import Models, Prediction, Predictor, predict_all
from specwise.validate.stats import summarize, summarize_by_engine, summarize_by_engine_and_segment

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "specwise" / "perfmodel" / "data" / "published_fit.json"
TRAINING = ("specdecode-bench", "plain-decoding-vllm")
TOL = 1e-6
PERTURB_SEED = 0
START_MARGIN_LN = 1e-6  # a start is moved this far inside its bounds (scipy needs a strictly feasible start)
HELD_BACK_KEYS = (
    "records", "median_abs_rel_error", "p80_abs_rel_error", "within_25pct", "slowdowns", "slowdowns_predicted",
)  # fmt: skip
ANCHORS = (
    f"an anchored series' alpha (a lookup's match rate) is the root of the predicted speedup's linear interpolant over "
    f"{ANCHOR_CELLS} fixed cells, its records a blend of the two nodes around it; lookup.first_given_match is replayed "
    f"as a blend of its two nodes on a 1/{FGM_CELLS} grid (specwise/validate/anchor_grid.py)"
)
# before 2026-12-06
OLD_ANCHORS = "Illinois regula falsi on the replay's speedup (to 1e-3 in speedup or a 1e-4 bracket)"
_TRAIN: list[object] = []  # the training records, set before the worker processes fork


def starts(previous: dict[str, float] | None, n: int) -> list[tuple[str, np.ndarray]]:
    """The declared starting points, in order, strictly inside the bounds: the initial values, the previous fit's
    coefficients (``previous``, when it names every parameter or all but some added since, those at their initial
    values), then seeded perturbations of the initial values."""
    lo, hi = fit.bounds()
    initial = fit.initial()
    out = [("initial values", initial)]
    names = {p.name for p in fit.PARAMS}
    if previous is not None and set(previous) == names:
        out.append(("previous fit", fit.vector(previous)))
    elif previous is not None and set(previous) < names:  # a parameter added since: at its declared initial value
        added = sorted(names - set(previous))
        out.append(
            (f"previous fit, with {', '.join(added)} at the initial value", fit.vector(fit.with_initial(previous)))
        )
    rng = np.random.default_rng(PERTURB_SEED)
    while len(out) < n:
        note = f"initial values perturbed by up to ln 2 (numpy default_rng({PERTURB_SEED}), draw {len(out)})"
        out.append((note, initial + rng.uniform(-math.log(2.0), math.log(2.0), size=len(initial))))
    return [(name, np.clip(x, lo + START_MARGIN_LN, hi - START_MARGIN_LN)) for name, x in out[:n]]


class BadInput(Exception):
    """A user's mistake in what the script was given: said on stderr, exit 2."""


def recorded_starts(doc: dict[str, Any]) -> list[tuple[str, np.ndarray]]:
    """The starts a fit file records (``fit.starts[*].start``), to rerun exactly that fit."""
    try:
        return [(s["from"], fit.vector(s["start"])) for s in doc["fit"]["starts"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise BadInput(f"--starts-from: the file records no start vectors ({exc!r})") from exc


def read_starts(path: Path) -> list[tuple[str, np.ndarray]]:
    """:func:`recorded_starts` of the JSON file at ``path``."""
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise BadInput(f"--starts-from {path}: cannot read it ({exc.strerror or exc})") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"--starts-from {path}: not a JSON file ({exc})") from exc
    if not isinstance(doc, dict):
        raise BadInput(f"--starts-from {path}: not a fit file (a JSON object with fit.starts)")
    return recorded_starts(doc)


def fit_once(job: tuple[str, np.ndarray, int]) -> dict[str, Any]:
    """One trust-region fit from a start: its result, how many evaluations it took and the CPU it used."""
    label, start, max_nfev = job
    train = _TRAIN
    lo, hi = fit.bounds()
    memo: dict[bytes, np.ndarray] = {}
    t0 = time.process_time()

    def f(u: np.ndarray) -> np.ndarray:
        key = np.asarray(u, dtype=np.float64).tobytes()
        if key not in memo:
            memo[key] = fit.objective(train, start + u)  # type: ignore[arg-type]
            print(f"[{label[:24]}] evaluation {len(memo)}: cost {soft_l1_cost(memo[key], fit.F_SCALE):.5f}", flush=True)
        return memo[key].copy()  # scipy < 1.16 scales what it is given in place (robust loss)

    nodes = fit.grid_nodes_ln(start)  # in u = ln(value) - ln(start)

    def jac(u: np.ndarray) -> np.ndarray:
        return fd_jacobian(f, np.asarray(u, dtype=np.float64), f(u), lo - start, hi - start, nodes=nodes)

    u0 = np.zeros_like(start)
    res = least_squares(
        f, u0, jac=jac, bounds=(lo - start, hi - start), loss="soft_l1", f_scale=fit.F_SCALE,
        xtol=TOL, ftol=TOL, max_nfev=max_nfev,
    )  # fmt: skip
    ident = identifiability(res.jac, float(res.cost), [p.name for p in fit.PARAMS])
    return {
        "from": label,
        "start": fit.named(start),
        "x": (start + res.x).tolist(),
        "status": int(res.status),
        "message": str(res.message),
        "nfev": int(res.nfev),
        "njev": int(res.njev),
        "calls": len(memo),
        "cpu_s": round(time.process_time() - t0, 1),
        "cost0": soft_l1_cost(f(u0), fit.F_SCALE),
        "cost": float(res.cost),
        "optimality": float(res.optimality),
        "identifiability": ident.to_json(),
    }


def spread(results: list[dict[str, Any]]) -> dict[str, object]:
    """Each coefficient's range over every start, beside each start's training cost over the best's: where the
    starts stop at different costs, the optimizer stalls on a rugged cost, and a local standard deviation
    (``identifiability``) understates how far apart equally defensible fits lie."""
    best = min(float(r["cost"]) for r in results)
    values = {p.name: [r["parameters"][p.name] for r in results] for p in fit.PARAMS}
    return {
        "cost_over_best": [round(float(r["cost"]) / best, 4) for r in results],
        "min_max": {k: [min(v), max(v)] for k, v in values.items()},
        "max_over_min": {k: round(max(v) / min(v), 3) for k, v in values.items()},
    }


def held_back_summary(valid: list[Any], params: dict[str, float]) -> dict[str, object]:
    held = summarize(fit.predictions(valid, fit.vector(params))).to_json()
    return {k: held[k] for k in HELD_BACK_KEYS}


def fit_all(
    train: list[object], valid: list[Any], jobs: list[tuple[str, np.ndarray, int]]
) -> tuple[np.ndarray, int, dict[str, object]]:
    """Every start (two processes at a time), the lowest training cost kept; held-back errors per start are computed
    after the choice and only reported."""
    _TRAIN[:] = train
    with multiprocessing.get_context("fork").Pool(min(2, len(jobs))) as pool:
        results = pool.map(fit_once, jobs, chunksize=1)
    best = min(results, key=lambda r: float(r["cost"]))
    for r in results:
        r["parameters"] = fit.named(r["x"])
        r["held_back_reported_not_used"] = held_back_summary(valid, r["parameters"])
        for k in ("cost0", "cost", "optimality"):
            r[k] = round(float(r[k]), 6)
    keys = ("from", "status", "message", "nfev", "njev", "calls", "cpu_s", "cost0", "cost", "optimality")
    extra: dict[str, object] = {
        "optimizer": {k: best[k] for k in keys} | {"xtol": TOL, "ftol": TOL, "fd_step_ln": FD_STEP_LN},
        "priors": {
            p.name: {"median": p.prior.median, "sigma_ln": p.prior.sigma_ln, "weight": fit.PRIOR_WEIGHT,
                     "source": p.prior.source}
            for p in fit.PARAMS if p.prior
        },
        "identifiability": best["identifiability"],
        "starts": [{k: v for k, v in r.items() if k not in ("x", "identifiability")} for r in results],
        "spread": spread(results),
        "cpu_s_all_starts": round(sum(float(r["cpu_s"]) for r in results), 1),
    }  # fmt: skip
    return np.array(best["x"]), int(best["calls"]), extra


def kept_on_evaluate(previous: dict[str, Any], valid: list[Any]) -> dict[str, object]:
    """What ``--evaluate`` keeps of the fit's record, each start's held-back errors recomputed with today's replay."""
    keep = ("optimizer", "priors", "identifiability", "starts", "spread", "cpu_s_all_starts", "reproduce")
    extra = {k: previous["fit"][k] for k in keep if k in previous["fit"]}
    for s in extra.get("starts", []):  # type: ignore[attr-defined]
        s["held_back_reported_not_used"] = held_back_summary(valid, s["parameters"])
    return extra


def fitted_with(previous_fit: dict[str, Any]) -> str:
    """How anchors were solved when the kept coefficients were fitted (``--evaluate`` keeps them)."""
    return str(previous_fit.get("anchors_when_fitted", previous_fit.get("anchors", OLD_ANCHORS)))


def profile_json(profile: object) -> dict[str, object]:
    from dataclasses import asdict

    d = asdict(profile)  # type: ignore[call-overload]
    return {
        "description": d["description"],
        "gpu": d["gpu"],
        "overhead": {k: v for k, v in d["overhead"].items() if k != "rejection_fraction"},
        "chunked_prefill_with_spec": d["chunked_prefill_with_spec"],
        "batch_expansion_scorer": d["batch_expansion_scorer"],
        "fitted_on": list(TRAINING),
    }


def by_engine_and_segment(preds: list[Prediction]) -> dict[str, dict[str, object]]:
    """The held-back statistics per engine and per GPU segment (data-centre or consumer cards, the catalog's
    ``segment``), with the GPUs each ran on: the band a prediction for a consumer card carries comes from consumer
    cards' measurements."""
    out: dict[str, dict[str, object]] = {}
    for engine, by_segment in summarize_by_engine_and_segment(preds).items():
        for seg, summary in by_segment.items():
            gpus = sorted(
                {q.record.gpu for q in preds if q.record.engine == engine and q.status == "predicted"}
                & {name for name, g in catalog_gpus().items() if g.segment == seg}
            )
            out.setdefault(engine, {})[seg] = summary.to_json() | {"gpus": gpus}
    return out


def errors_json(train: list[Any], valid: list[Any], x: np.ndarray) -> tuple[dict[str, object], list[Prediction]]:
    """The fit's errors on its training families and on the held-back ones, and the analytic roofline's on both."""
    c = fit.coefficients(x)
    train_stats = summarize(fit.predictions(train, x))
    valid_preds = fit.predictions(valid, x)
    by_engine = {
        engine: summary.to_json()
        | {"gpus": sorted({q.record.gpu for q in valid_preds if q.record.engine == engine and q.status == "predicted"})}
        for engine, summary in summarize_by_engine(valid_preds).items()
    }
    roofline = Predictor(c.profiles, Models("roofline"), c.first_given_match)
    roof_valid_preds = predict_all(valid, roofline)
    roof_by_engine = {engine: summary.to_json() for engine, summary in summarize_by_engine(roof_valid_preds).items()}
    error = {
        "training": train_stats.to_json(),
        "validation": summarize(valid_preds).to_json(),
        "validation_by_engine": by_engine,
        "validation_by_engine_and_gpu_segment": by_engine_and_segment(valid_preds),
        "roofline": {
            "training": summarize(predict_all(train, roofline)).to_json(),
            "validation": summarize(roof_valid_preds).to_json(),
            "validation_by_engine": roof_by_engine,
            "validation_by_engine_and_gpu_segment": by_engine_and_segment(roof_valid_preds),
        },
    }
    return error, valid_preds


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-nfev", type=int, default=40, help="objective evaluations per start, Jacobians apart")
    ap.add_argument("--starts", type=int, default=3, help="starting points (declared order; see starts())")
    ap.add_argument(
        "--starts-from", type=Path, help="rerun the starts a fit file records (fit.starts[*].start) instead"
    )
    ap.add_argument("--dry-run", action="store_true", help="evaluate the initial coefficients; write nothing")
    ap.add_argument(
        "--evaluate",
        action="store_true",
        help="keep the fitted coefficients in the file, recompute the training and held-back errors, rewrite it",
    )
    return ap.parse_args()


def _priors() -> str:
    """The priors, counted by kind, as the method string names them."""
    weak = sum(1 for p in fit.PARAMS if p.prior and p.prior.source == fit.REGULARISER)
    outside = sum(1 for p in fit.PARAMS if p.prior) - weak
    return (
        f"{outside} priors from outside measurements and {weak} weak regularisers (sigma ln 10, at the initial value)"
    )


def main() -> int:
    args = parse_args()
    records = all_records()
    train = [r for r in records if r.family in TRAINING]
    valid = [r for r in records if r.family not in TRAINING]
    t0 = time.process_time()
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    extra: dict[str, object] = {}
    command = "python scripts/fit_published.py"
    if args.evaluate:
        x = fit.vector(previous["fit"]["parameters"])
        nfev = int(previous["fit"].get("evaluations", 0))
        extra, command = kept_on_evaluate(previous, valid), previous["fit"]["command"]
    elif args.dry_run:
        x, nfev = fit.initial(), 0
    else:
        if args.starts_from:
            chosen = read_starts(args.starts_from)
        else:
            chosen = starts(previous.get("fit", {}).get("parameters"), args.starts)
        x, nfev, extra = fit_all(train, valid, [(label, v, args.max_nfev) for label, v in chosen])
        command += f" --max-nfev {args.max_nfev} --starts {len(chosen)}"
        extra["reproduce"] = f"{command} --starts-from FILE, FILE a copy of this file (its fit.starts[*].start)"
    c = fit.coefficients(x)
    error, valid_preds = errors_json(train, valid, x)
    cpu = time.process_time() - t0 + float(extra.get("cpu_s_all_starts", 0.0))  # type: ignore[arg-type]
    doc = {
        "schema": "specwise.stepfit/1",
        "fit": {
            "training_families": list(TRAINING),
            "validation_families": sorted({r.family for r in valid}),
            "command": command,
            "date": previous["fit"]["date"] if args.evaluate else datetime.date.today().isoformat(),
            "errors_evaluated": datetime.date.today().isoformat(),
            "method": f"scipy least_squares (trf), soft_l1 loss (f_scale {fit.F_SCALE:g}) on log(predicted/published) "
            f"and {_priors()}, u = ln(value/start), forward differences of {FD_STEP_LN:g} in ln(value) (downward for a "
            f"coefficient replayed on a grid where the upward step would cross a node: {', '.join(fit.GRID_NODES)}), "
            f"xtol = ftol = {TOL:g}, lowest training cost over the declared starts",
            "anchors": ANCHORS,
            "anchors_when_fitted": fitted_with(previous["fit"]) if args.evaluate else ANCHORS,
            "evaluations": nfev,
            "cpu_s": previous["fit"]["cpu_s"] if args.evaluate else round(cpu, 1),  # the fit's workers included
            "parameters": dict(c.values),
        }
        | extra,
        "lookup": {"first_token_acceptance_given_match": c.first_given_match},
        "profiles": {name: profile_json(p) for name, p in c.profiles.items()},
        "error": error,
    }
    # what advise summarises as the held-back evidence nearest a deployment (validate/nearest.py), without replaying
    # it; tests/validate/test_nearest.py checks these against a live replay
    doc["held_back_predictions"] = {
        q.record.id: {"predicted_speedup": q.predicted_speedup, "k": q.k}
        for q in valid_preds
        if q.status == "predicted" and q.record.speculative and q.predicted_speedup is not None
    }
    if not args.dry_run:
        OUT.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {OUT}")
    print(json.dumps(doc["error"], indent=2))
    print(json.dumps(doc["fit"]["parameters"], indent=2))
    return 0 if all(math.isfinite(v) for v in np.atleast_1d(x)) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BadInput as exc:
        print(f"fit_published.py: {exc}", file=sys.stderr)
        sys.exit(2)
