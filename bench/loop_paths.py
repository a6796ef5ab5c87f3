"""Per-path acceptance of the real speculative sampling loop vs the target's own samples (Qwen2.5-Coder 0.5B ->
1.5B, HumanEval prompts, T = 1): is the loop's output distributed like the profiler's continuations?

Each path (128 tokens after the prompt) comes from one sampler:
  loop   the proof loop (specwise.profiler.specloop.speculative_generate), k = 4, probabilistic or greedy drafting;
         its own vLLM-style counters are kept
  ar     plain decoding, one token per forward with a KV cache (specloop.autoregressive_sample)
  batch  the profiler's batched continuation sampler (specwise.profiler.forward.sample_continuations)
and then gets, from one teacher-forced pass of each model over it: the profiler's predicted counters for the path
(realized coins and per-context means, k = 4 walk), the first EOS, and a surprisal martingale
z = sum_t (-log p_t(x_t) - H(p_t)) / sqrt(sum_t Var_t), which has mean 0 and variance 1 for any path that is
really a sample of p (a sampler that favours surprising tokens shows z > 0, one that favours likely tokens z < 0).

Run (appends one JSON line per path; reruns skip paths already there). What is in bench/results (~75 min here):
  .venv/bin/python bench/loop_paths.py --kind loop --seeds 0,1,2,3,4,5
  .venv/bin/python bench/loop_paths.py --kind loop --prompts 20 --seeds 0,1
  .venv/bin/python bench/loop_paths.py --kind batch --seeds 2000,2001,2002
  .venv/bin/python bench/loop_paths.py --kind batch --prompts 20 --seeds 2000,2001
  .venv/bin/python bench/loop_paths.py --kind ar --seeds 5,6
  .venv/bin/python bench/loop_paths.py --kind loop --drafting greedy --prompts 20 --seeds 0   # stopped at 18 prompts
  .venv/bin/python bench/loop_paths.py --summary            # table + bench/results/loop_paths_qwen.json
The SmolLM2 pair (after the walk and the loop moved to start at output position 1, 10 paths, ~5 min here):
  OMP_NUM_THREADS=1 .venv/bin/python bench/loop_paths.py --target models/smollm2-135m \
      --draft models/smollm2-135m-draft4 --out $PWD/bench/results/loop_paths_smollm2.jsonl --seeds 0
  .venv/bin/python bench/loop_paths.py --out $PWD/bench/results/loop_paths_smollm2.jsonl \
      --summary-out $PWD/bench/results/loop_paths_smollm2.json --summary
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specwise.fileio import write_json_atomic
from specwise.loadgen.workload import load_prompts
from specwise.profiler import analysis
from specwise.profiler.bootstrap import ratio_ci
from specwise.profiler.counting import model_draft_proposals, walk
from specwise.profiler.forward import continuation_logits, sample_continuations, shared_vocab
from specwise.profiler.runner import Prompt, Timings, load_pair, tokenize
from specwise.profiler.sampling import probs
from specwise.profiler.settings import ProfileSettings
from specwise.profiler.specloop import autoregressive_sample, speculative_generate

ROOT = Path(__file__).resolve().parents[1]
K = 4


def surprisal_z(p: torch.Tensor, path: list[int]) -> float:
    pd = p.double()
    lp = pd.gather(-1, torch.tensor(path)[:, None]).squeeze(-1).clamp(min=1e-300).log()
    logp = pd.clamp(min=1e-300).log()
    h = -(pd * logp).sum(-1)
    var = (pd * logp**2).sum(-1) - h**2
    return float((-lp - h).sum() / var.sum().sqrt())


def measure(loaded: Any, prompt: list[int], path: list[int], n: int, drafting: str) -> dict[str, Any]:
    lt = continuation_logits(loaded.target, prompt, path)
    ld = continuation_logits(loaded.draft, prompt, path)
    lt, ld = shared_vocab(lt, ld)
    p, q = probs(lt, 1.0), probs(ld, 1.0)
    expected = analysis.draft_accept_probs(p, q, drafting, ld)
    realized = analysis.realized_accept_probs(p, q, drafting, ld, path, expected)
    ce, cr = (walk(model_draft_proposals(a, n, K), K) for a in (expected, realized))
    return {
        "realized": [cr.drafts, cr.draft_tokens, cr.accepted_tokens],
        "expected": [ce.drafts, ce.draft_tokens, ce.accepted_tokens],
        "z": surprisal_z(p[:n], path[:n]),
    }


def generate(args: argparse.Namespace) -> None:
    items = load_prompts(Path("builtin:humaneval"))[: args.prompts]
    prompts = [Prompt(i.prompt, i.workload_class) for i in items]
    base = ProfileSettings(k_values=(K,), max_new_tokens=args.tokens, batch_size=10)
    loaded = load_pair(args.target, args.draft, base, len(prompts), Timings())
    ids = tokenize(loaded.tokenizer, prompts, base.max_prompt_tokens)
    eos = loaded.tokenizer.convert_tokens_to_ids("<|endoftext|>")
    done = set()
    if args.out.exists():
        done = {(r["kind"], r["drafting"], r["seed"], r["prompt"]) for r in map(json.loads, args.out.open())}
    n = args.tokens
    for seed in args.seeds:
        batch = None
        for i in range(len(ids)):
            if (args.kind, args.drafting, seed, i) in done:
                continue
            t0 = time.perf_counter()
            own = None
            if args.kind == "loop":  # seed * 100 + i: seed 0 is bench/profile_qwen.py phase D's run
                res = speculative_generate(
                    loaded.target, loaded.draft, ids[i], n, K, 1.0, args.drafting, seed * 100 + i
                )
                path, own = list(res.output), [res.counts.drafts, res.counts.draft_tokens, res.counts.accepted_tokens]
            elif args.kind == "ar":
                path = list(autoregressive_sample(loaded.target, ids[i], n + K, 1.0, seed * 100 + i))
            else:
                if batch is None:
                    pad = loaded.tokenizer.pad_token_id or 0
                    batch = sample_continuations(loaded.target, ids, n + K, 1.0, seed, 10, pad_id=pad)
                path = batch[i]
            rec = {"kind": args.kind, "drafting": args.drafting, "seed": seed, "prompt": i}
            rec |= {"generate_s": round(time.perf_counter() - t0, 1), "own": own}
            rec |= {"first_eos": path.index(eos) if eos in path[:n] else None}
            rec |= measure(loaded, ids[i], path, n, args.drafting)
            with args.out.open("a") as f:
                f.write(json.dumps(rec) + "\n")
            print(json.dumps(rec), flush=True)


def rate(rows: list[dict[str, Any]], key: str, seed: int = 0) -> dict[str, Any]:
    """accepted / draft tokens, each prompt weighted equally (its counters averaged over its paths, so prompts
    with more paths do not weigh more); bootstrap CI over prompts."""
    prompts = sorted({r["prompt"] for r in rows})
    per = np.array([np.mean([r[key] for r in rows if r["prompt"] == i], axis=0) for i in prompts])
    lo, hi = ratio_ci(per[:, 2], per[:, 1], np.random.default_rng(seed), 2000)
    return {"rate": round(float(per[:, 2].sum() / per[:, 1].sum()), 4), "ci95": [round(lo, 4), round(hi, 4)]}


def summary(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in args.out.open()]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["kind"], r["drafting"]), []).append(r)
    table = []
    subsets = []
    for (kind, drafting), rs_all in sorted(groups.items()):
        n_prompts = len({r["prompt"] for r in rs_all})
        subsets += [(kind, drafting, rs_all)]
        if n_prompts > 10:  # also the first 10 prompts alone, where every sampler has paths
            subsets += [(kind, drafting, [r for r in rs_all if r["prompt"] < 10])]
    for kind, drafting, rs in subsets:
        z = np.array([r["z"] for r in rs])
        entry = {"kind": kind, "drafting": drafting, "paths": len(rs), "prompts": len({r["prompt"] for r in rs})}
        entry["seeds"] = sorted({r["seed"] for r in rs})
        if kind == "loop":
            entry["loop_counters"] = rate(rs, "own")
            entry["loop_counters_by_seed"] = {
                str(s): rate([r for r in rs if r["seed"] == s], "own")["rate"] for s in entry["seeds"]
            }
        entry["predicted_realized"] = rate(rs, "realized")
        entry["predicted_expected"] = rate(rs, "expected")
        entry["surprisal_z_mean"] = round(float(z.mean()), 3)
        entry["surprisal_z_mean_se"] = round(float(1 / np.sqrt(len(z))), 3)
        entry["paths_past_eos"] = sum(r["first_eos"] is not None for r in rs)
        entry["per_path_rate_p5_p50_p95"] = [
            round(float(v), 3) for v in np.percentile([r["realized"][2] / r["realized"][1] for r in rs], [5, 50, 95])
        ]
        table.append(entry)
        print(json.dumps(entry))
    doc = {"command": "python bench/loop_paths.py --summary", "source": str(args.out.relative_to(ROOT)), "rows": table}
    write_json_atomic(args.summary_out, doc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=("loop", "ar", "batch"), default="loop")
    ap.add_argument("--drafting", choices=("probabilistic", "greedy"), default="probabilistic")
    ap.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[0])
    ap.add_argument("--prompts", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--target", default=str(ROOT / "models/qwen2.5-coder-1.5b"))
    ap.add_argument("--draft", default=str(ROOT / "models/qwen2.5-coder-0.5b"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/loop_paths_qwen.jsonl")
    ap.add_argument("--summary", action="store_true", help="summarise --out instead of generating")
    ap.add_argument("--summary-out", type=Path, default=ROOT / "bench/results/loop_paths_qwen.json")
    args = ap.parse_args()
    summary(args) if args.summary else generate(args)


if __name__ == "__main__":
    main()
