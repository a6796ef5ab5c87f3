"""The profile keeps the target's logits from the sampling pass instead of running a second, teacher-forced pass
over the same tokens: on tiny random Qwen2 models the kept logits are the teacher-forced ones up to float rounding,
and the whole profile (every temperature, drafting mode, k, class; shared and per-temperature contexts; a draft
model and n-gram lookup) is identical to the one computed from teacher-forced target passes."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from specwise.profiler.forward import continuation_logits, sample_batches
from specwise.profiler.result import Observation, summarise
from specwise.profiler.runner import Loaded, Prompt, Timings, _VariantRun, run_profile
from specwise.profiler.settings import ProfileSettings
from tests.profiler.tiny_qwen2 import tiny_qwen2

VOCAB = 64
TEXTS = ["def f(x):", "return x + 1", "a", "print('hello world')", "for i in range(10):", "x = 3"]


class _CharTokenizer:
    """Characters -> ids (a stand-in tokenizer: run_profile only tokenizes and pads)."""

    pad_token_id = 0

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": [1 + ord(c) % (VOCAB - 1) for c in text]}


def _loaded(draft: bool) -> Loaded:
    target = tiny_qwen2(0, 2, VOCAB, lm_head_scale=3.0)
    return Loaded(None, None, target, tiny_qwen2(1, 1, VOCAB, lm_head_scale=3.0) if draft else None, _CharTokenizer())  # type: ignore[arg-type]


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_kept_logits_are_the_teacher_forced_logits(temperature: float) -> None:
    model = tiny_qwen2(0, 2, VOCAB, lm_head_scale=3.0)
    prompts = [[1, 2, 3], [4, 5, 6, 7, 8, 9], [10]]  # different lengths: left padding inside the batch
    for _, tokens, logits in sample_batches(model, prompts, 16, temperature, 0, batch_size=3, keep_logits=True):
        assert logits is not None and logits.shape == (3, 16, VOCAB)
        for j, cont in enumerate(tokens):
            forced = continuation_logits(model, prompts[j], cont)
            assert torch.allclose(logits[j], forced, atol=1e-5, rtol=0)
            if temperature == 0:
                assert logits[j].argmax(dim=-1).tolist() == cont  # greedy: each token is its row's argmax


def _results_json(results: Any) -> list[dict[str, Any]]:
    return [r.to_json() for r in results]


@pytest.mark.parametrize(
    ("method", "contexts"),
    [("draft_model", "per-temperature"), ("draft_model", "shared"), ("ngram", "per-temperature")],
)
def test_profile_from_kept_logits_equals_the_teacher_forced_profile(method: str, contexts: str) -> None:
    settings = ProfileSettings(
        method=method,
        temperatures=(0.0, 0.7, 1.0),
        k_values=(1, 2, 4),
        max_new_tokens=12,
        contexts=contexts,
        batch_size=4,
        bootstrap_resamples=50,
        prompt_lookup_min=1,
        prompt_lookup_max=2,
    )
    loaded = _loaded(draft=method == "draft_model")
    prompts = [Prompt(t, "code" if i % 2 else "qa") for i, t in enumerate(TEXTS)]
    timings = Timings()
    kept, conts, ids = run_profile(loaded, prompts, settings, timings=timings)
    assert timings.target_forward_s == 0.0  # no teacher-forced pass of the target ran
    run = _VariantRun(loaded.target, loaded.draft, (), settings, [p.workload_class for p in prompts], Timings(), None)
    forced_obs: list[Observation] = []
    run.teacher_forced(ids, conts, forced_obs)
    forced = summarise(forced_obs, settings.k_values, settings.seed, 50)
    a, b = _results_json(kept), _results_json(forced)
    assert [_shape(x) for x in a] == [_shape(x) for x in b]
    x, y = _numbers(a, []), _numbers(b, [])
    # the documents round rates to 6 decimals: kept and teacher-forced logits differ by ~1e-7 (float32 sums in
    # another order), which can flip a last digit (measured: 4 of 792 numbers, by 1e-6) and never more
    assert max(abs(u - v) for u, v in zip(x, y, strict=True)) <= 1.5e-6
    assert sum(u != v for u, v in zip(x, y, strict=True)) <= 0.01 * len(x)


def _shape(x: Any) -> Any:
    """Everything but the numbers (keys, labels, list lengths)."""
    if isinstance(x, dict):
        return {k: _shape(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_shape(v) for v in x]
    return x if isinstance(x, str | bool) or x is None else "number"


def _numbers(x: Any, out: list[float]) -> list[float]:
    if isinstance(x, dict):
        for k in sorted(x):
            _numbers(x[k], out)
    elif isinstance(x, list | tuple):
        for v in x:
            _numbers(v, out)
    elif isinstance(x, int | float) and not isinstance(x, bool):
        out.append(float(x))
    return out
