"""Fit the step-time model (perfmodel/v2.py, perfmodel/profiles.py) to the declared training families of the
published evidence set, then evaluate the held-back families with the frozen coefficients, and write both into
src/specwise/perfmodel/data/published_fit.json.

    .venv/bin/python scripts/fit_published.py [--max-nfev 60] [--dry-run]

Training families (declared here, never chosen by results): SpecDecode-Bench (vLLM 0.10.1 measured speedups vs
batch size, its released traces for acceptance; Fig. 2's SGLang chain/tree runs) and the plain-decoding vLLM
measurements (InferenceX, vLLM #12101, InferenceBench, J. Musgrave). Every other family is validation only.
Needs scipy (a dev dependency).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from specwise.catalog import catalog_gpus
from specwise.evidence.records import all_records
from specwise.validate import fit
from specwise.validate.predict import Models, Prediction, Predictor, predict_all
from specwise.validate.stats import summarize, summarize_by_engine, summarize_by_engine_and_segment

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "specwise" / "perfmodel" / "data" / "published_fit.json"
TRAINING = ("specdecode-bench", "plain-decoding-vllm")


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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-nfev", type=int, default=60)
    ap.add_argument("--dry-run", action="store_true", help="evaluate the initial coefficients; write nothing")
    ap.add_argument(
        "--evaluate",
        action="store_true",
        help="keep the fitted coefficients in the file, recompute the training and held-back errors, rewrite it",
    )
    args = ap.parse_args()
    records = all_records()
    train = [r for r in records if r.family in TRAINING]
    valid = [r for r in records if r.family not in TRAINING]
    x0 = fit.initial()
    t0 = time.process_time()
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    if args.evaluate:
        x = np.log([previous["fit"]["parameters"][p.name] for p in fit.PARAMS])
        nfev = int(previous["fit"].get("evaluations", 0))
    elif args.dry_run:
        x = x0
        nfev = 0
    else:
        lo, hi = fit.bounds()
        res = least_squares(
            lambda x: fit.residuals(train, x),
            x0,
            bounds=(lo, hi),
            loss="soft_l1",
            f_scale=0.1,
            diff_step=0.02,
            max_nfev=args.max_nfev,
            verbose=1,
        )
        x, nfev = res.x, res.nfev
    c = fit.coefficients(x)
    train_stats = summarize(fit.predictions(train, x))
    valid_preds = fit.predictions(valid, x)
    valid_stats = summarize(valid_preds)
    by_engine = {
        engine: summary.to_json()
        | {"gpus": sorted({q.record.gpu for q in valid_preds if q.record.engine == engine and q.status == "predicted"})}
        for engine, summary in summarize_by_engine(valid_preds).items()
    }
    by_segment = by_engine_and_segment(valid_preds)
    roofline = Predictor(c.profiles, Models("roofline"), c.first_given_match)
    roof_train = summarize(predict_all(train, roofline))
    roof_valid_preds = predict_all(valid, roofline)
    roof_valid = summarize(roof_valid_preds)
    roof_by_engine = {engine: summary.to_json() for engine, summary in summarize_by_engine(roof_valid_preds).items()}
    cpu = time.process_time() - t0
    command = "python scripts/fit_published.py" + (f" --max-nfev {args.max_nfev}" if not args.dry_run else "")
    if args.evaluate:
        command = previous["fit"]["command"]
    doc = {
        "schema": "specwise.stepfit/1",
        "fit": {
            "training_families": list(TRAINING),
            "validation_families": sorted({r.family for r in valid}),
            "command": command,
            "date": previous["fit"]["date"] if args.evaluate else datetime.date.today().isoformat(),
            "errors_evaluated": datetime.date.today().isoformat(),
            "method": "scipy least_squares, soft_l1 loss (f_scale 0.1) on log(predicted/published), log parameters",
            "evaluations": nfev,
            "cpu_s": previous["fit"]["cpu_s"] if args.evaluate else round(cpu, 1),
            "parameters": {k: v for k, v in c.values.items()},
        },
        "lookup": {"first_token_acceptance_given_match": c.first_given_match},
        "profiles": {name: profile_json(p) for name, p in c.profiles.items()},
        "error": {
            "training": train_stats.to_json(),
            "validation": valid_stats.to_json(),
            "validation_by_engine": by_engine,
            "validation_by_engine_and_gpu_segment": by_segment,
            "roofline": {
                "training": roof_train.to_json(),
                "validation": roof_valid.to_json(),
                "validation_by_engine": roof_by_engine,
                "validation_by_engine_and_gpu_segment": by_engine_and_segment(roof_valid_preds),
            },
        },
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
    sys.exit(main())
