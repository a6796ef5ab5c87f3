"""Profiler benchmark on the real Qwen2.5-Coder 0.5B (draft) -> 1.5B (target) pair, HumanEval prompts.

Phases (each written to the JSON as soon as it finishes, so a long run that is stopped keeps what it measured):
  A  profile, shared contexts, T in {0, 0.5, 0.7, 1.0}, both drafting modes, k = 1..8  (timed)
  B  bare teacher-forced passes of both models over the same tokens as A              (timed: the 1.3x goal)
  C  profile, per-temperature contexts at T in {0, 1} + quantisation what-ifs          (alpha(T) table, deltas)
  D  the real speculative sampling loop, k = 4, on the same prompts as C               (agreement, CPU speedup,
     and its wall time at 4 temperatures vs A: the 10x goal)
  E  estimators on the loop's prompts at T = 1: the realized acceptance coins (the profiler's default) and the
     per-context means sum min(p, q) (the earlier method) on the same continuations, against phase D's loop

Run:  make models-qwen && .venv/bin/python bench/profile_qwen.py [--prompts 20] [--tokens 128] [--phases ABCD]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specwise.contracts.profile import ProfileResult
from specwise.fileio import write_json_atomic
from specwise.loadgen.workload import load_prompts
from specwise.profiler import analysis
from specwise.profiler.bootstrap import ratio_ci
from specwise.profiler.counting import model_draft_proposals
from specwise.profiler.forward import continuation_logits, sample_continuations, shared_vocab
from specwise.profiler.quantize_spec import parse_quantize
from specwise.profiler.runner import Prompt, Timings, load_pair, run_profile, tokenize
from specwise.profiler.sampling import probs
from specwise.profiler.settings import ProfileSettings
from specwise.profiler.specloop import autoregressive_generate, speculative_generate
from specwise.profiler.verify import path_counts, predicted_rate

ROOT = Path(__file__).resolve().parents[1]


def table(results: Sequence[ProfileResult], k: int) -> list[dict[str, Any]]:
    out = []
    for r in results:
        if r.workload_class is not None:
            continue
        row = next(b for b in r.by_k if b.k == k)
        out.append(
            {
                "temperature": r.temperature,
                "drafting": r.drafting,
                "quantization": dict(r.quantization),
                "alpha_mean": r.alpha_mean,
                f"acceptance_rate_k{k}": row.acceptance_rate,
                f"mean_acceptance_length_k{k}": row.mean_acceptance_length,
                "ci95": list(row.ci95),
            }
        )
    return out


def subset_rate(results: Sequence[ProfileResult], temp: float, drafting: str, k: int, n: int) -> float | None:
    """accepted / draft tokens summed over the per-prompt classes p00..p{n-1} (same prompts as the loop)."""
    acc = tok = 0.0
    for r in results:
        cls = r.workload_class
        if cls and int(cls[1:]) < n and r.temperature == temp and r.drafting == drafting and not r.quantization:
            row = next(b for b in r.by_k if b.k == k)
            acc += row.num_accepted_tokens
            tok += row.num_draft_tokens
    return round(acc / tok, 6) if tok else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=str(ROOT / "models/qwen2.5-coder-1.5b"))
    ap.add_argument("--draft", default=str(ROOT / "models/qwen2.5-coder-0.5b"))
    ap.add_argument("--prompts", type=int, default=20)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--phases", default="ABCD")
    ap.add_argument(
        "--quantize",
        default="draft=int8;target=int4;draft=int8,target=int4",
        help="quantisation what-ifs for phase C, ';'-separated",
    )
    ap.add_argument("--loop-prompts", type=int, default=20, help="prompts for the loop (phase D)")
    ap.add_argument("--loop-jobs", default="0:greedy,1:greedy,1:probabilistic,0.5:greedy,0.7:greedy")
    ap.add_argument("--loop-key", default="phase_D_loop", help="JSON key for phase D (keeps earlier loop runs)")
    ap.add_argument("--skip-speedup", action="store_true", help="phase D: skip the T=0 CPU speedup timing")
    ap.add_argument("--paths", type=int, default=1, help="phase E: continuations per prompt (seeds 0..N-1)")
    ap.add_argument("--e-seed", type=int, default=1000, help="phase E: first continuation seed")
    ap.add_argument("--e-key", default="phase_E_estimators", help="phase E: JSON key")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/profile_qwen.json")
    args = ap.parse_args()
    doc: dict[str, Any] = {
        "command": "python bench/profile_qwen.py " + f"--prompts {args.prompts} --tokens {args.tokens}",
        "machine": {"cpu_threads": torch.get_num_threads(), "platform": platform.platform()},
        "target": args.target,
        "draft": args.draft,
        "prompts": f"builtin:humaneval first {args.prompts}",
        "max_new_tokens": args.tokens,
    }
    if args.out.exists():
        doc.update({k: v for k, v in json.loads(args.out.read_text()).items() if k.startswith("phase_")})
    items = load_prompts(Path("builtin:humaneval"))[: args.prompts]
    prompts = [Prompt(i.prompt, i.workload_class) for i in items]
    base = ProfileSettings(k_values=tuple(range(1, 9)), max_new_tokens=args.tokens, batch_size=10)
    t0 = time.perf_counter()
    loaded = load_pair(args.target, args.draft, base, len(prompts), Timings())
    doc["load_s"] = round(time.perf_counter() - t0, 1)

    def save() -> None:
        write_json_atomic(args.out, doc)
        print(json.dumps({k: v for k, v in doc.items() if k.startswith("phase_")}, indent=1)[-1500:], flush=True)

    if "A" in args.phases:
        s = ProfileSettings(**{**vars(base), "temperatures": (0.0, 0.5, 0.7, 1.0), "contexts": "shared"})
        tm = Timings()
        t0 = time.perf_counter()
        results, conts, ids = run_profile(loaded, prompts, s, timings=tm)
        wall = time.perf_counter() - t0
        doc["phase_A_profile_shared"] = {
            "wall_s": round(wall, 1),
            "timing_s": tm.as_dict(),
            "table_k4": table(results, 4),
        }
        save()
        if "B" in args.phases:
            cont = conts[0.0]
            t0 = time.perf_counter()
            for i, p in enumerate(ids):
                continuation_logits(loaded.target, p, cont[i])
            t_target = time.perf_counter() - t0
            t0 = time.perf_counter()
            for i, p in enumerate(ids):
                continuation_logits(loaded.draft, p, cont[i])
            t_draft = time.perf_counter() - t0
            bare = t_target + t_draft
            analysis_wall = tm.target_forward_s + tm.draft_forward_s + tm.analysis_s
            doc["phase_B_bare_forwards"] = {
                "target_s": round(t_target, 1),
                "draft_s": round(t_draft, 1),
                "profile_excluding_continuations_s": round(analysis_wall, 1),
                "ratio_excluding_continuations": round(analysis_wall / bare, 3),
                "ratio_including_continuations": round(wall / bare, 3),
            }
            save()
    results_c: tuple[ProfileResult, ...] = ()
    ids_c: list[list[int]] = []
    if "C" not in args.phases:
        ids_c = tokenize(loaded.tokenizer, prompts, base.max_prompt_tokens)  # phase D alone: no unpaired prediction
    if "C" in args.phases:
        s = ProfileSettings(
            **{
                **vars(base),
                "temperatures": (0.0, 1.0),
                "quantizations": tuple(parse_quantize(q) for q in args.quantize.split(";") if q),
            }
        )
        tm = Timings()
        t0 = time.perf_counter()
        # one class per prompt, so the prediction over the loop's subset of prompts is an exact sum of counters
        labelled = [Prompt(p.text, f"p{i:02d}") for i, p in enumerate(prompts)]
        results_c, _, ids_c = run_profile(loaded, labelled, s, timings=tm)
        doc["phase_C_profile_per_temperature"] = {
            "wall_s": round(time.perf_counter() - t0, 1),
            "timing_s": tm.as_dict(),
            "table_k4": table(results_c, 4),
            "results": [r.to_json() for r in results_c if r.workload_class is None],
        }
        save()
    if "D" in args.phases:
        jobs = [(float(j.split(":")[0]), j.split(":")[1]) for j in args.loop_jobs.split(",")]
        doc.setdefault(args.loop_key, {"k": 4, "prompts": args.loop_prompts, "jobs": []})
        rows = doc[args.loop_key]["jobs"]
        for temp, drafting in jobs:
            t0 = time.perf_counter()
            acc = dt = drafts = toks = 0.0
            per_prompt = []
            for i, p in enumerate(ids_c[: args.loop_prompts]):
                r = speculative_generate(loaded.target, loaded.draft, p, args.tokens, 4, temp, drafting, seed=i)
                acc += r.counts.accepted_tokens
                dt += r.counts.draft_tokens
                drafts += r.counts.drafts
                toks += r.tokens
                pc = path_counts(loaded.target, loaded.draft, p, r.output, args.tokens, temp, drafting, 4, base)
                per_prompt.append(
                    {
                        "loop": [r.counts.drafts, r.counts.draft_tokens, r.counts.accepted_tokens],
                        "paired_prediction": [
                            round(pc.drafts, 4),
                            round(pc.draft_tokens, 4),
                            round(pc.accepted_tokens, 4),
                        ],
                    }
                )
                print(f"loop T={temp} {drafting} prompt {i}: {per_prompt[-1]}", flush=True)
            wall = time.perf_counter() - t0
            loop_rows = np.array([x["loop"] for x in per_prompt])
            paired_rows = np.array([x["paired_prediction"] for x in per_prompt])
            lo, hi = ratio_ci(loop_rows[:, 2], loop_rows[:, 1], np.random.default_rng(0), 1000)
            paired_rate = float(paired_rows[:, 2].sum() / paired_rows[:, 1].sum())
            rows.append(
                {
                    "temperature": temp,
                    "drafting": drafting,
                    "wall_s": round(wall, 1),
                    "tokens": int(toks),
                    "measured_acceptance_rate": round(acc / dt, 4),
                    "measured_mean_acceptance_length": round(1 + acc / drafts, 3),
                    "measured_ci95": [round(lo, 4), round(hi, 4)],
                    "paired_predicted_acceptance_rate": round(paired_rate, 4),
                    "paired_difference": round(acc / dt - paired_rate, 4),
                    "per_prompt": per_prompt,
                    "predicted_acceptance_rate": subset_rate(results_c, temp, drafting, 4, args.loop_prompts),
                    "predicted_acceptance_rate_all_prompts": predicted_rate(results_c, temp, drafting, 4),
                }
            )
            save()
        if not args.skip_speedup:
            n_ar = 3
            t_spec = t_ar = 0.0
            for i, p in enumerate(ids_c[:n_ar]):
                r = speculative_generate(loaded.target, loaded.draft, p, args.tokens, 4, 0.0, "greedy", seed=i)
                t_spec += r.wall_s
                t_ar += autoregressive_generate(loaded.target, p, r.tokens, 0.0, seed=i)
            doc[args.loop_key]["cpu_speedup_T0_k4"] = {
                "prompts": n_ar,
                "spec_s": round(t_spec, 1),
                "ar_s": round(t_ar, 1),
                "speedup": round(t_ar / t_spec, 3),
            }
            save()
    if "E" in args.phases:
        doc[args.e_key] = phase_e(loaded, prompts[: args.loop_prompts], args.tokens, args.paths, doc, args.e_seed)
        save()


def phase_e(
    loaded: Any, prompts: list[Prompt], tokens: int, paths: int, doc: dict[str, Any], seed0: int = 1000
) -> dict[str, Any]:
    """Both estimators at T = 1, k = 4, on the same sampled continuations of the loop's prompts; per path, the
    realized counters and where the path first crosses an end-of-text token (EOS is ignored, as in the loop);
    and where the loop's rate falls in the distribution of one-path-per-prompt rates drawn from these paths."""
    t0 = time.perf_counter()
    eos = {t for t in (loaded.tokenizer.eos_token_id, loaded.tokenizer.pad_token_id) if t is not None}
    per_path: list[dict[str, Any]] = []
    ids = tokenize(loaded.tokenizer, prompts, 1024)
    pad = loaded.tokenizer.pad_token_id or 0
    sums = {(d, e): [0.0, 0.0, 0.0] for d in ("greedy", "probabilistic") for e in ("realized", "expected")}
    for seed in range(seed0, seed0 + paths):
        conts = sample_continuations(loaded.target, ids, tokens + 4, 1.0, seed, 10, pad_id=pad)
        for prompt_index, (pid, cont) in enumerate(zip(ids, conts, strict=True)):
            first_eos = next((i for i, t in enumerate(cont[:tokens]) if t in eos), None)
            entry: dict[str, Any] = {"prompt": prompt_index, "seed": seed, "first_eos": first_eos}
            lt = continuation_logits(loaded.target, pid, cont)
            ld = continuation_logits(loaded.draft, pid, cont)
            lt, ld = shared_vocab(lt, ld)
            p, q = probs(lt, 1.0), probs(ld, 1.0)
            for drafting in ("greedy", "probabilistic"):
                expected = analysis.draft_accept_probs(p, q, drafting, ld)
                per = {
                    "expected": expected,
                    "realized": analysis.realized_accept_probs(p, q, drafting, ld, cont, expected),
                }
                for est, acc in per.items():
                    c = analysis.counts_by_k([*model_draft_proposals(acc, tokens, 4)], [4])[0]
                    row = sums[(drafting, est)]
                    row[0], row[1], row[2] = row[0] + c[0], row[1] + c[1], row[2] + c[2]
                    if est == "realized":
                        entry[drafting] = [round(float(c[0]), 4), round(float(c[1]), 4), round(float(c[2]), 4)]
            per_path.append(entry)
            print(f"phase E path {entry}", flush=True)
    loop = {(j["temperature"], j["drafting"]): j for j in doc.get("phase_D_loop", {}).get("jobs", [])}
    rows = []
    for (drafting, est), (drafts, draft_tokens, accepted) in sums.items():
        measured = loop.get((1.0, drafting), {}).get("measured_acceptance_rate")
        rate = accepted / draft_tokens
        rows.append(
            {
                "drafting": drafting,
                "estimator": est,
                "predicted_acceptance_rate_k4": round(rate, 4),
                "predicted_mean_acceptance_length_k4": round(1 + accepted / drafts, 3),
                "loop_measured_acceptance_rate_k4": measured,
                "difference_loop_minus_predicted": None if measured is None else round(measured - rate, 4),
            }
        )
    return {
        "command": f"python bench/profile_qwen.py --phases E --loop-prompts {len(prompts)} --paths {paths}",
        "temperature": 1.0,
        "k": 4,
        "prompts": len(prompts),
        "continuations_per_prompt": paths,
        "wall_s": round(time.perf_counter() - t0, 1),
        "rows": rows,
        "paths": per_path,
        "loop_percentile": _loop_percentile(per_path, doc, len(prompts)),
    }


def _loop_percentile(per_path: list[dict[str, Any]], doc: dict[str, Any], n_prompts: int) -> dict[str, Any]:
    """Draw one of the sampled paths per prompt 10,000 times: the spread of a 10-path acceptance rate, and the
    share of draws at or below what the loop measured on its own 10 paths."""
    rng = np.random.default_rng(0)
    loop = {(j["temperature"], j["drafting"]): j for j in doc.get("phase_D_loop", {}).get("jobs", [])}
    out: dict[str, Any] = {}
    for drafting in ("greedy", "probabilistic"):
        by_prompt = [np.array([e[drafting] for e in per_path if e["prompt"] == i]) for i in range(n_prompts)]
        if any(len(b) == 0 for b in by_prompt):
            continue
        picks = [b[rng.integers(0, len(b), 10_000)] for b in by_prompt]  # (draws, 3) per prompt
        total = np.sum(picks, axis=0)
        rates = total[:, 2] / total[:, 1]
        measured = loop.get((1.0, drafting), {}).get("measured_acceptance_rate")
        out[drafting] = {
            "rate_p2_5_p50_p97_5": [round(float(x), 4) for x in np.percentile(rates, [2.5, 50, 97.5])],
            "loop_measured": measured,
            "share_at_or_below_loop": None if measured is None else round(float(np.mean(rates <= measured)), 4),
        }
    return out


if __name__ == "__main__":
    main()
