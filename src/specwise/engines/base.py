"""What every serving-engine adapter provides: the serve command for a deployment, the engine's form of a
speculation setting, the launch command the bench harness runs, and the metric names its ``/metrics`` uses.

Adding an engine: a module here implementing :class:`Engine` and a line in ``engines/__init__.py``'s registry
(and its metric readers in ``metrics/`` if its counters differ). See ARCHITECTURE.md.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from specwise.methods import Method

LOOPBACK = "127.0.0.1"
# An engine whose drafter never samples from the draft's distribution, asked for ``drafting = "probabilistic"``.
DRAFTING_REFUSAL = (
    '{engine} drafts {how}, never a sample from the draft\'s distribution: drafting = "probabilistic" would be '
    'priced with acceptance the server cannot reach; use drafting = "greedy"'
)


@dataclass(frozen=True)
class Deployment:
    """What to serve, as the memory plan sized it."""

    model: str
    tp: int = 1
    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = None
    max_num_seqs: int = 256
    quantization: str | None = None  # an online quantisation to apply ('fp8'); None: as the checkpoint is
    host: str = LOOPBACK
    # the scheduler's token budget the plan's activation reserve and the simulated chunked prefill used (None: the
    # engine's default, which vLLM picks by GPU: 2,048 to 16,384 for its server, EngineArgs.get_batch_defaults)
    max_num_batched_tokens: int | None = None
    kv_cache_dtype: str = "auto"  # vLLM's --kv-cache-dtype the plan sized the KV cache for; auto: the model's dtype
    # the whole server runs vLLM's V0 engine, speculating or not (an fp8 KV cache off FlashAttention 3's cards on
    # 0.8.2 to 0.10.2: engines.vllm_kv_cache.kv_cache_engine), so its token budget is V0's
    on_v0: bool = False


# Quantisations an engine applies to a bf16 checkpoint at load time (vLLM and SGLang: ``--quantization fp8``);
# any other (int4 GPTQ/AWQ, int8 W8A8, mxfp4) comes in a checkpoint quantised beforehand, whose config names it.
ONLINE_QUANTIZATION = ("fp8",)


def _made_online(q: str | None) -> bool:
    return q is None or q == "auto" or q in ONLINE_QUANTIZATION


def _replace_note(q: str, model: str, whose: str, where: str, otherwise: str) -> str:
    return (
        f"the memory plan assumes {q} weights{whose}, which the engine does not make from {model} at load time (only "
        f"{', '.join(ONLINE_QUANTIZATION)} is quantised online): replace {model} {where} with a pre-quantised {q} "
        f"checkpoint of it (an AWQ/GPTQ export; its config names the method) -- the original checkpoint would load at "
        f"full precision and {otherwise}"
    )


def checkpoint_notes(d: Deployment, s: Speculation | None = None) -> tuple[str, ...]:
    """What the commands cannot say: a plan sized for pre-quantised weights -- the target's (``d``), or the draft
    checkpoint's of ``s`` (``draft_quantization``) -- needs that checkpoint's id."""
    notes = []
    if not _made_online(d.quantization):
        notes.append(_replace_note(str(d.quantization), d.model, "", "in the command", "may not fit"))
    if s is not None and s.draft and s.method.needs_draft_checkpoint and not _made_online(s.draft_quantization):
        notes.append(
            _replace_note(
                str(s.draft_quantization),
                s.draft,
                " for the draft",
                "in the speculative config",
                "hold more memory than the plan gave the draft",
            )
        )
    return tuple(notes)


@dataclass(frozen=True)
class Speculation:
    """A speculation setting in engine-neutral terms."""

    method: Method
    k: int
    draft: str | None = None
    draft_tp: int | None = None
    target_tp: int = 1
    prompt_lookup: tuple[int, int] | None = None
    schedule: tuple[tuple[int, int, int], ...] = ()  # (first batch, last batch, k)
    drafting: str = "greedy"
    draft_quantization: str | None = None
    # the draft's vocabulary size differs from the target's by padding only: vLLM 0.26 to 0.33 serve the pair with
    # use_heterogeneous_vocab (compat/pair.py: padding_vocab)
    heterogeneous_vocab: bool = False


@dataclass(frozen=True)
class SpecMetricNames:
    """Where an engine's ``/metrics`` reports speculation. Counters give windows (rates over an interval); gauges
    are readings. A name a build spells two ways is a tuple of exact names, never a substring."""

    drafts: str | None = None
    draft_tokens: tuple[str, ...] = ()
    accepted_tokens: tuple[str, ...] = ()
    accepted_per_position: str | None = None
    created: str | None = None
    accept_rate_gauge: str | None = None
    accept_length_gauge: str | None = None


class Engine(Protocol):
    name: str
    spec_metrics: SpecMetricNames

    def speculative_config(self, s: Speculation) -> dict[str, Any]:
        """The speculation setting in the engine's own terms (vLLM: ``--speculative-config`` JSON)."""
        ...

    def refusal(self, method: Method, draft: str | None = None, drafting: str = "greedy") -> str | None:
        """Why this engine (at its version) cannot run ``method`` (with the checkpoint ``draft``, when given; drafting
        ``"greedy"`` or ``"probabilistic"``), in one line; None: it can."""
        ...

    def draft_split_refusal(self, s: Speculation, heads: int) -> str | None:
        """Why the engine cannot run ``s``'s draft, whose ``heads`` attention heads it would split over more GPUs
        than divide them (engines shard heads evenly over tensor-parallel ranks); None: they divide, or the engine
        does not split a draft's heads."""
        ...

    def schedule_notes(
        self, schedule: Sequence[tuple[int, int, int]], k: int, method: str | None = None
    ) -> tuple[str, ...]:
        """What the engine's config cannot say of a k-by-batch-size schedule for ``method`` (None: not known), for
        the operator (may be empty)."""
        ...

    def serve_argv(self, d: Deployment, speculative_config: Mapping[str, Any] | None) -> list[str]:
        """The command an operator runs to serve ``d`` with a config :meth:`speculative_config` made."""
        ...

    def deployment_args(self, d: Deployment, method: str | None = None) -> list[str]:
        """The server flags that size ``d`` (parallelism, memory, context, concurrency, and what the memory plan and
        the simulation assumed: token budget, online quantisation, KV cache dtype): a launch file's ``extra_args``;
        ``method``: the speculative method the server runs (None: none), where it changes what the engine takes."""
        ...

    def launch_argv(
        self,
        python: str,
        model: str,
        served_name: str,
        port: int,
        extra_args: Sequence[str],
        speculative_config: dict[str, Any] | None,
        host: str = LOOPBACK,
    ) -> list[str]:
        """The command the bench harness starts (``specwise bench --launch``): the engine's OpenAI server, run by
        ``python`` (the launch file's interpreter; for llama.cpp, the ``llama-server`` binary)."""
        ...


def calibration_refusal(engine: Engine) -> str | None:
    """Why a ``specwise bench --launch`` run of this engine can neither be calibrated (``--calibrate``) nor give
    ``advise --bench`` its acceptance; None: it can. Both need the tokens each step verified, which only per-position
    spec-decode counters give: vLLM's drafts and accepted-tokens-per-position counters
    (``vllm:spec_decode_num_drafts``, ``vllm:spec_decode_num_accepted_tokens_per_pos``;
    ``vllm/v1/spec_decode/metrics.py``), read by ``calibration/from_bench.py`` and
    :meth:`~specwise.contracts.bench.BenchConfig.pooled_acceptance`. SGLang exports acceptance as gauges only
    (``sglang:spec_accept_length``, ``sglang:spec_accept_rate``; ``sglang/srt/metrics/collector.py``), llama.cpp's
    ``llama-server`` drafted and accepted token totals with no drafts count (``tools/server/server.cpp``)."""
    m = engine.spec_metrics
    if m.drafts is not None and m.accepted_per_position is not None:
        return None
    gauges = [g for g in (m.accept_rate_gauge, m.accept_length_gauge) if g]
    exported = (
        f"gauges only ({', '.join(gauges)})"
        if gauges
        else f"token totals only ({', '.join((*m.draft_tokens[:1], *m.accepted_tokens[:1]))}), no drafts count"
    )
    return (
        f"{engine.name} exports its speculation as {exported}, not the per-position counters of drafts and accepted "
        "tokens (vLLM's) that a calibration and advise --bench need for the tokens each step verified"
    )


def heads_split_refusal(engine_words: str, tp: int, draft: str, heads: int, remedy: str = "") -> str | None:
    """The one wording of a draft whose heads do not divide over the ``tp`` GPUs ``engine_words`` runs it on."""
    if tp <= 1 or heads % tp == 0:
        return None
    return (
        f"{engine_words} runs a draft at the target's tensor parallelism ({tp}), and {draft}'s {heads} attention "
        f"heads do not divide over {tp} GPUs: choose a draft whose heads do{remedy}"
    )


def cli_flags(cfg: Mapping[str, Any]) -> list[str]:
    """``{"draft_max": 4}`` -> ``["--draft-max", "4"]``: a config as command-line flags."""
    out: list[str] = []
    for key, value in cfg.items():
        out += ["--" + key.replace("_", "-"), str(value)]
    return out


def shell(argv: Sequence[str]) -> str:
    """The argv as one line a shell runs as given."""
    return " ".join(shlex.quote(a) for a in argv)


def shell_lines(argv: Sequence[str]) -> str:
    """The argv as a shell command with one flag (and its value) per line, joined by backslash continuations:
    it wraps between arguments, never inside one, and still pastes into a shell as one command."""
    lines: list[list[str]] = [[]]
    for arg in argv:
        if arg.startswith("-") and lines[-1]:
            lines.append([])
        lines[-1].append(shlex.quote(arg))
    return " \\\n  ".join(" ".join(line) for line in lines)


_PROGRAM = {"llama.cpp": ("llama-server", "the llama-server binary")}
_DISPLAY = {"vllm": "vLLM", "sglang": "SGLang"}


def launch_program(engine: str) -> tuple[str, str]:
    """The program a launch file's ``python`` names for ``engine`` (as ``advise`` writes it: a bare name, looked up
    on $PATH by ``bench --launch``) and what it is, in words: ``("python", "the Python that has vLLM installed")``."""
    shown = _DISPLAY.get(engine, engine)
    return _PROGRAM.get(engine, ("python", f"the Python that has {shown} installed"))


def launch_toml(engine: Engine, d: Deployment, name: str, speculation: Speculation) -> str:
    """A ``specwise bench --launch`` file comparing no speculation with ``speculation`` on ``d``, for ``engine``."""
    speculative_config = engine.speculative_config(speculation)
    shown = _DISPLAY.get(engine.name, engine.name)
    program, what = launch_program(engine.name)
    inline = ", ".join(f"{k} = {json.dumps(v)}" for k, v in speculative_config.items())
    lines = [
        f"# specwise bench --launch: the same requests against {shown} without and with the advised speculation",
        *(f"# note: {note}" for note in checkpoint_notes(d, speculation)),
        *([f"engine = {json.dumps(engine.name)}"] if engine.name != "vllm" else []),
        f"model = {json.dumps(d.model)}",
        'served_model_name = "model"',
        f"python = {json.dumps(program)}  # {what}: a name on PATH, or a path",
        f"extra_args = {json.dumps(engine.deployment_args(d, speculation.method.name))}",
        "",
        "[[config]]",
        'name = "baseline"',
        "",
        "[[config]]",
        f"name = {json.dumps(name)}",
        f"speculative_config = {{ {inline} }}",
        "",
    ]
    return "\n".join(lines)
