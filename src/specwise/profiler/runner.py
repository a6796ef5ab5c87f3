"""Run a profile: continuations from the target, one teacher-forced pass per model, counters at every k.

Cost: continuations are sampled once per temperature (``contexts="per-temperature"``: the contexts are
distributed as the target's own output at that temperature, as in serving) or once in all (``"shared"``: the
lowest temperature's continuation is reused for every temperature -- one pass, biased contexts at high T).
After that each model runs one teacher-forced pass per prompt and continuation; every temperature, top-k/top-p
and drafting mode is computed from those logits. A quantised-draft variant re-runs only the draft's passes on the
same continuations; a quantised-target variant samples its own continuations (the quantised target is what would
produce the served output) and re-runs both passes.

Estimator: where the continuation was sampled from the evaluated target at the evaluated temperature, the counters
walk the realized acceptance coins along it (exact for the speculative sampling loop:
``analysis.realized_accept_probs``); elsewhere (shared contexts at T above the sampled one, or ``estimator=
"expected"``) they walk the per-context means sum min(p, q), which over-predict at T > 0. Each result says which.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from specwise.contracts.profile import ProfileResult
from specwise.errors import SpecwiseError
from specwise.methods import MAX_K
from specwise.profiler import analysis, models, quantize, quantize_spec
from specwise.profiler.counting import FIRST_DRAFTED_POSITION as FIRST
from specwise.profiler.counting import model_draft_proposals
from specwise.profiler.forward import continuation_logits, sample_batches, shared_vocab
from specwise.profiler.result import Observation, summarise
from specwise.profiler.sampling import probs
from specwise.profiler.settings import ProfileSettings
from specwise.profiler.suffix import SuffixTree

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(frozen=True)
class Prompt:
    text: str
    workload_class: str | None = None
    add_special_tokens: bool = True  # False for chat-templated text (the template placed them)


@dataclass
class Timings:
    load_s: float = 0.0
    continuation_s: float = 0.0
    target_forward_s: float = 0.0
    draft_forward_s: float = 0.0
    analysis_s: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        d = {k: round(v, 3) for k, v in vars(self).items() if k != "extra"}
        d.update({k: round(v, 3) for k, v in self.extra.items()})
        return d


@dataclass
class Loaded:
    target_files: models.ModelFiles
    draft_files: models.ModelFiles | None
    target: Any
    draft: Any | None
    tokenizer: Any


def load_pair(
    target_path: str, draft_path: str | None, settings: ProfileSettings, n_prompts: int, timings: Timings
) -> Loaded:
    t0 = time.perf_counter()
    target_files = models.resolve(target_path)
    draft_files = models.resolve(draft_path) if draft_path else None
    seq = settings.max_prompt_tokens + settings.max_new_tokens + settings.k_max
    files = [target_files] + ([draft_files] if draft_files else [])
    models.check_memory(files, seq, settings.max_new_tokens + settings.k_max, min(settings.batch_size, n_prompts))
    target, tok = models.load(target_files)
    draft = None
    if draft_files is not None:
        draft, draft_tok = models.load(draft_files)
        models.check_vocab(target_files, draft_files, tok, draft_tok)
    timings.load_s += time.perf_counter() - t0
    return Loaded(target_files, draft_files, target, draft, tok)


def tokenize(tokenizer: Any, prompts: Sequence[Prompt], max_prompt_tokens: int | None) -> list[list[int]]:
    """Each prompt's token ids, a longer one cut to its last ``max_prompt_tokens`` (None: uncut;
    :func:`prepare_prompts` cuts to :func:`prompt_limit` and counts the cut ones)."""
    out = []
    for i, p in enumerate(prompts):
        ids = list(tokenizer(p.text, add_special_tokens=p.add_special_tokens)["input_ids"])
        if not ids:
            raise SpecwiseError(f"prompt {i + 1}: tokenizes to nothing")
        out.append(ids if max_prompt_tokens is None else ids[-max_prompt_tokens:])
    return out


def prompt_limit(loaded: Loaded, settings: ProfileSettings) -> int:
    """The prompt tokens kept: ``settings.max_prompt_tokens``, less where the models' context
    (``max_position_embeddings``) would not hold them with the continuation and up to :data:`MAX_K` drafts (the
    profile's k, or ``--verify-k``); a context too short for even one prompt token beside them is refused."""
    contexts = [f.max_positions for f in (loaded.target_files, loaded.draft_files) if f and f.max_positions]
    room = min(contexts, default=None)
    if room is None:
        return settings.max_prompt_tokens
    limit = room - settings.max_new_tokens - MAX_K - 1  # MAX_K: --verify-k may draft more than --k
    if limit < 1:
        raise SpecwiseError(
            f"--max-new-tokens {settings.max_new_tokens} and up to {MAX_K} draft tokens leave no room for a prompt in "
            f"the model's context of {room:,} tokens (max_position_embeddings)"
        )
    return min(settings.max_prompt_tokens, limit)


@dataclass(frozen=True)
class PromptIds:
    """The prompts' token ids, each cut to its last ``limit`` tokens (:func:`prompt_limit`); ``truncated`` of them
    were longer."""

    ids: list[list[int]]
    limit: int
    truncated: int


def prepare_prompts(loaded: Loaded, prompts: Sequence[Prompt], settings: ProfileSettings) -> PromptIds:
    """Tokenize ``prompts`` once: the ids :func:`run_profile` decodes from, and how many were cut to fit."""
    limit = prompt_limit(loaded, settings)
    full = tokenize(loaded.tokenizer, prompts, max_prompt_tokens=None)
    return PromptIds([x[-limit:] for x in full], limit, sum(len(x) > limit for x in full))


def _variant_model(loaded: Loaded, role: str, quant: dict[str, str]) -> Any:
    base = loaded.target if role == "target" else loaded.draft
    if role not in quant:
        return base
    files = loaded.target_files if role == "target" else loaded.draft_files
    assert files is not None
    model, _ = models.load(files)
    quantize.quantize_model(model, quant[role])
    return model


def run_profile(
    loaded: Loaded,
    prompts: Sequence[Prompt],
    settings: ProfileSettings,
    progress: Progress | None = None,
    timings: Timings | None = None,
    prepared: PromptIds | None = None,
) -> tuple[tuple[ProfileResult, ...], dict[float, list[list[int]]], list[list[int]]]:
    """Returns (the results, continuations by sampling temperature, prompt token ids). ``prepared``: the prompts
    already tokenized by :func:`prepare_prompts` (the caller wants their cut count), else they are tokenized here."""
    timings = timings or Timings()
    torch.manual_seed(settings.seed)
    ids = (prepared or prepare_prompts(loaded, prompts, settings)).ids
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    by_target_quant: dict[str, dict[float, list[list[int]]]] = {}
    observations: list[Observation] = []
    classes = [p.workload_class for p in prompts]
    try:
        for quant in [{}, *settings.quantizations]:
            _run_variant(loaded, quant, ids, pad, by_target_quant, observations, _VariantRun(
                None, None, tuple(sorted(quant.items())), settings, classes, timings, progress
            ))  # fmt: skip
    except KeyboardInterrupt:
        if not observations:
            raise
        partial = _summarised(observations, settings, timings)
        raise ProfileInterrupted(partial, by_target_quant.get("", {}), ids) from None
    return _summarised(observations, settings, timings), by_target_quant[""], ids


class ProfileInterrupted(KeyboardInterrupt):
    """Ctrl-C after at least one temperature group was observed in full: the results of those groups."""

    def __init__(
        self, results: tuple[ProfileResult, ...], conts: dict[float, list[list[int]]], ids: list[list[int]]
    ) -> None:
        super().__init__("profile interrupted")
        self.results, self.conts, self.ids = results, conts, ids


def _summarised(
    observations: list[Observation], settings: ProfileSettings, timings: Timings
) -> tuple[ProfileResult, ...]:
    t_an = time.perf_counter()
    results = summarise(observations, settings.k_values, settings.seed, settings.bootstrap_resamples)
    timings.analysis_s += time.perf_counter() - t_an
    return results


def _run_variant(
    loaded: Loaded,
    quant: dict[str, str],
    ids: list[list[int]],
    pad: int,
    by_target_quant: dict[str, dict[float, list[list[int]]]],
    observations: list[Observation],
    run: _VariantRun,
) -> None:
    """One quantisation variant's passes (its models loaded into ``run``), observations appended per group."""
    t_load = time.perf_counter()
    run.target = _variant_model(loaded, "target", quant)
    run.draft = _variant_model(loaded, "draft", quant) if loaded.draft is not None else None
    run.timings.extra["quantize_load_s"] = run.timings.extra.get("quantize_load_s", 0.0) + (
        time.perf_counter() - t_load if quant else 0.0
    )
    target_quant = quant.get("target", "")
    if target_quant in by_target_quant:  # a draft-only variant: the target's continuations exist already
        run.teacher_forced(ids, by_target_quant[target_quant], observations)
    else:  # this target samples its continuations now; the logits it sampled from are its profile logits
        by_target_quant[target_quant] = {}
        run.sampled(ids, pad, by_target_quant[target_quant], observations)


@dataclass
class _VariantRun:
    """One quantisation variant's passes: the observations of every (temperature group, prompt)."""

    target: Any
    draft: Any | None
    qkey: tuple[tuple[str, str], ...]
    settings: ProfileSettings
    classes: list[str | None]
    timings: Timings
    progress: Progress | None

    def _label(self) -> str:
        return quantize_spec.label(dict(self.qkey))

    def sampled(
        self, ids: list[list[int]], pad: int, conts: dict[float, list[list[int]]], done: list[Observation]
    ) -> None:
        """Sample each group's continuations (batched, KV cache) keeping the logits every token was drawn from, and
        observe each batch's prompts from those: the target needs no teacher-forced pass of its own. A temperature
        group's observations join ``done`` when all its prompts are observed (an interruption keeps whole groups)."""
        s = self.settings
        groups = s.continuation_temperature_groups()
        for g, (temp, eval_temps) in enumerate(groups):
            out: list[Observation] = []
            history = SuffixTree(s.suffix_max_depth) if s.method == "suffix" else None
            conts[temp] = []
            t0 = time.perf_counter()
            batches = sample_batches(
                self.target, ids, s.max_new_tokens + s.k_max, temp, s.seed + g, s.batch_size, s.top_k, s.top_p, pad,
                keep_logits=True,
            )  # fmt: skip
            for b0, tokens, logits in batches:
                self.timings.continuation_s += time.perf_counter() - t0
                assert logits is not None
                for j, cont in enumerate(tokens):
                    conts[temp].append(cont)
                    out += self._observe(ids[b0 + j], cont, eval_temps, temp, b0 + j, history, logits[j])
                del logits
                if self.progress:
                    stage = f"continuations and passes T={temp:g} ({self._label()}, {g + 1}/{len(groups)})"
                    self.progress(stage, b0 + len(tokens), len(ids))
                t0 = time.perf_counter()
            done += out

    def teacher_forced(
        self, ids: list[list[int]], conts: dict[float, list[list[int]]], done: list[Observation]
    ) -> None:
        """Observe on existing continuations: one teacher-forced pass of each model per prompt (whole temperature
        groups join ``done``, as in :meth:`sampled`)."""
        groups = self.settings.continuation_temperature_groups()
        step = 0
        for temp, eval_temps in groups:
            out: list[Observation] = []
            history = SuffixTree(self.settings.suffix_max_depth) if self.settings.method == "suffix" else None
            for i, prompt_ids in enumerate(ids):
                out += self._observe(prompt_ids, conts[temp][i], eval_temps, temp, i, history, None)
                step += 1
                if self.progress:
                    self.progress(f"teacher-forced passes ({self._label()})", step, len(groups) * len(ids))
            done += out

    def _observe(
        self,
        prompt_ids: list[int],
        cont: list[int],
        eval_temps: Sequence[float],
        temp: float,
        i: int,
        history: SuffixTree | None,
        target_logits: torch.Tensor | None,
    ) -> list[Observation]:
        obs = _observe_prompt(
            self.target, self.draft, prompt_ids, cont, eval_temps, temp, self.settings, self.qkey, self.classes[i],
            history, self.timings, target_logits,
        )  # fmt: skip
        return obs  # a suffix history holds cont now (lookup_token_proposals adds it)


def _lookup_by_k(
    tokens: dict[int, list[list[int]]], p: torch.Tensor, n_start: int, path: list[int] | None
) -> dict[int, list[NDArray[np.float64]]]:
    """Each k's drafted tokens as acceptance probabilities (one pass per distinct token list: n-gram shares one)."""
    done: dict[int, list[NDArray[np.float64]]] = {}
    for t in tokens.values():
        if id(t) not in done:
            done[id(t)] = analysis.lookup_proposals(t, p, n_start, path)
    return {k: done[id(t)] for k, t in tokens.items()}


def _observe_prompt(
    target: Any,
    draft: Any | None,
    prompt_ids: list[int],
    cont: list[int],
    eval_temps: Sequence[float],
    sampled_temp: float,
    s: ProfileSettings,
    qkey: tuple[tuple[str, str], ...],
    cls: str | None,
    history: SuffixTree | None,
    timings: Timings,
    target_logits: torch.Tensor | None = None,
) -> list[Observation]:
    """``target_logits``: the logits ``cont`` was sampled from (then no teacher-forced pass of the target)."""
    n_start = s.max_new_tokens
    if target_logits is not None:
        lt = target_logits
    else:
        t0 = time.perf_counter()
        lt = continuation_logits(target, prompt_ids, cont)
        timings.target_forward_s += time.perf_counter() - t0
    ld = None
    if draft is not None:
        t0 = time.perf_counter()
        ld = continuation_logits(draft, prompt_ids, cont)
        timings.draft_forward_s += time.perf_counter() - t0
        lt, ld = shared_vocab(lt, ld)
    t0 = time.perf_counter()
    lookup_tokens = None
    if s.method != "draft_model":
        lookup_tokens = analysis.lookup_token_proposals(
            s.method,
            prompt_ids,
            cont,
            n_start,
            s.k_values,
            s.prompt_lookup_min,
            s.prompt_lookup_max,
            history,
            s.suffix_max_depth,
            s.suffix_min_token_prob,
        )
    out = []
    for temp in eval_temps:
        p = probs(lt, temp, s.top_k, s.top_p)
        realized = s.estimator == "realized" and temp == sampled_temp  # the path was sampled from this p
        estimator = "realized" if realized else "expected"
        for drafting in s.drafting_modes:
            if ld is not None:
                q = probs(ld, temp, s.top_k, s.top_p)
                accept = analysis.draft_accept_probs(p, q, drafting, ld)
                alpha_sum, alpha_n = float(accept[FIRST:n_start].sum()), max(0, n_start - FIRST)
                if realized:
                    accept = analysis.realized_accept_probs(p, q, drafting, ld, cont, accept)
                proposals: list[NDArray[np.float64]] | dict[int, list[NDArray[np.float64]]]
                proposals = model_draft_proposals(accept, n_start, s.k_max)
            else:
                assert lookup_tokens is not None
                firsts = [b[0] for b in analysis.lookup_proposals(lookup_tokens[s.k_max], p, n_start)[FIRST:] if len(b)]
                alpha_sum, alpha_n = float(sum(firsts)), len(firsts)
                proposals = _lookup_by_k(lookup_tokens, p, n_start, cont if realized else None)
            counts = analysis.counts_by_k(proposals, s.k_values)
            out.append(Observation(qkey, float(temp), drafting, cls, counts, alpha_sum, alpha_n, estimator))
    timings.analysis_s += time.perf_counter() - t0
    return out
