"""The commands an advice ends with: the serve command for the decision, sized by the top candidate's memory
plan, and for "measure first" the launch file and the bench command that measures it."""

from __future__ import annotations

from pathlib import Path

from specwise.advisor.inputs import AdviseInputs
from specwise.advisor.measure import MeasureRun, bench_traffic, measure_command
from specwise.contracts.advice import CandidateAdvice, MeasurePlan, ServeCommand
from specwise.contracts.document import JsonObject
from specwise.engines import Deployment, Engine, Speculation
from specwise.engines.base import LOOPBACK, calibration_refusal, checkpoint_notes, launch_toml, shell
from specwise.engines.vllm import VllmEngine
from specwise.engines.vllm_kv_cache import kv_cache_engine, kv_cache_notes
from specwise.engines.vllm_versions import dynamic_k_caveat
from specwise.units import canonical_dtype


def _deployment(inputs: AdviseInputs, top: CandidateAdvice, engine: Engine, host: str) -> Deployment:
    """What to serve, as the top candidate's memory plan sized it and the simulation ran it: the scheduler's limits
    and the KV cache dtype are the scenario's (a command without them would serve another KV capacity). vLLM: a
    16-bit KV cache as auto (:func:`_kv_flag`), and whether the server runs V0 whole for its fp8 cache
    (:func:`~specwise.engines.vllm_kv_cache.kv_cache_engine`); another engine, the model's own dtype as auto and any
    other as named (SGLang's words for it: :mod:`specwise.engines.sglang`)."""
    plan, dep = top.memory, inputs.deployment
    if isinstance(engine, VllmEngine):
        kv = _kv_flag(dep.kv_cache_dtype, plan.target.dtype)
        on_v0 = kv_cache_engine(engine.version, kv, inputs.gpu) == "v0"
    else:
        kv, on_v0 = _own_dtype_as_auto(dep.kv_cache_dtype, plan.target.dtype), False
    return Deployment(
        model=dep.target,
        tp=plan.tp,
        gpu_memory_utilization=plan.gpu_memory_utilization,
        max_model_len=plan.max_model_len,
        max_num_seqs=dep.max_num_seqs,
        quantization=dep.quantization,
        host=host,
        max_num_batched_tokens=dep.max_num_batched_tokens,
        kv_cache_dtype=kv,
        on_v0=on_v0,
    )


SIXTEEN_BIT = ("bf16", "fp16")


def _own_dtype_as_auto(choice: str, model_dtype: str) -> str:
    """``auto`` where the choice names the model's own dtype (no flag needed), else the choice."""
    return "auto" if choice != "auto" and canonical_dtype(choice) == canonical_dtype(model_dtype) else choice


def _kv_flag(choice: str, model_dtype: str) -> str:
    """vLLM's ``--kv-cache-dtype`` for the scenario's choice: a 16-bit cache beside a 16-bit model is ``auto`` (no
    flag), the model's own dtype, the same 2 bytes the plan priced. vLLM's choices for a 16-bit name differ by
    release, and almost every one refuses a 16-bit name that is not the model's (review s48a F1): 0.8.2 to 0.10.2
    list only auto and the fp8 variants (``CacheDType``: 0.8.5 and 0.9.2 vllm/config.py, 0.10.1 vllm/config/cache.py),
    0.11 to 0.17 add ``bfloat16`` but not ``float16``, 0.18 to 0.32 take both, and 0.33 on reject one that differs
    from the model's dtype (``VllmConfig._reject_mismatched_float_kv_cache``, vllm/config/vllm.py: "An explicit
    float16 or bfloat16 must match the model data type"). :func:`_kv_notes` says when a choice was dropped."""
    if choice == "auto" or canonical_dtype(choice) not in SIXTEEN_BIT:
        return choice
    return "auto" if canonical_dtype(model_dtype) in SIXTEEN_BIT else choice


def _kv_notes(choice: str, model_dtype: str) -> tuple[str, ...]:
    """Why the command has no ``--kv-cache-dtype`` where the scenario named a 16-bit cache other than the model's
    (:func:`_kv_flag`)."""
    dropped = choice != "auto" and _kv_flag(choice, model_dtype) == "auto"
    if not dropped or canonical_dtype(choice) == canonical_dtype(model_dtype):
        return ()
    return (
        f"no --kv-cache-dtype {choice}: the model serves in {canonical_dtype(model_dtype)}, and vLLM keeps a 16-bit "
        f"KV cache in the model's dtype (0.8 to 0.10 have no 16-bit choice, 0.11 to 0.17 no float16, and 0.33 on "
        "refuse one that differs from the model's); it costs the same 2 bytes a value, so the memory plan stands",
    )


def _top_speculation(inputs: AdviseInputs, top: CandidateAdvice, target_tp: int) -> Speculation:
    """The top candidate's speculation at its verdict's k (without the schedule: a launch file compares one k)."""
    cand = next(c for c in inputs.candidates if c.label == top.candidate)
    return Speculation(
        method=cand.method,
        k=top.k,
        draft=cand.speculation.draft,
        draft_tp=cand.speculation.draft_tp,
        target_tp=target_tp,
        prompt_lookup=cand.speculation.prompt_lookup,
        drafting=cand.drafting,
        draft_quantization=cand.speculation.draft_quantization,
        heterogeneous_vocab=bool(top.speculative_config and top.speculative_config.get("use_heterogeneous_vocab")),
    )


def measure_plan(
    inputs: AdviseInputs,
    top: CandidateAdvice,
    engine: Engine,
    launch_file: str | None = None,
    engine_version: str | None = None,
) -> MeasurePlan:
    """The launch file that compares ``top`` with no speculation, and the command that benches it at the scenario's
    loads with its traffic and advises again from the run (:mod:`specwise.advisor.measure`)."""
    d = _deployment(inputs, top, engine, LOOPBACK)
    spec = _top_speculation(inputs, top, d.tp)
    name = f"{top.method}-k{top.k}"
    served = [q for q in inputs.sweep.qps if top.sim is None or q not in top.sim.overloaded_qps]
    rates = ",".join(f"{q:g}" for q in sorted({inputs.operating_qps, *served}) if q <= 2 * inputs.operating_qps)
    toml = launch_toml(engine, d, name, spec)
    stem = Path(inputs.file).stem
    launch = launch_file or f"{stem}.measure.toml"
    run = MeasureRun(inputs.file, launch, f"{stem}.bench.json", rates, engine, engine_version)
    command, notes = measure_command(
        run,
        bench_traffic(inputs.workloads),
        top.candidate,
        inputs.operating_qps,
        inputs.min_speedup,
        inputs.decision_metric,
    )
    if len(inputs.candidates) > 1 and calibration_refusal(engine) is None:
        others = ", ".join(c.label for c in inputs.candidates if c.label != top.candidate)
        notes += (
            f"the follow-up advise prices only {top.candidate}, whose proposer this run calibrates; {others} "
            "will be marked not evaluated (a calibration prices only the proposers it measured)",
        )
    return MeasurePlan(top.candidate, toml, command, notes)


def _draft_tp_notes(inputs: AdviseInputs, top: CandidateAdvice, spec: JsonObject | None) -> tuple[str, ...]:
    """A draft simulated on fewer GPUs than the written config runs it on (a V0 scenario, a V1 config) says so."""
    written = (spec or {}).get("draft_tensor_parallel_size")
    cand = next((c for c in inputs.candidates if c.label == top.candidate), None)
    simulated = cand.speculation.draft_tp if cand is not None else None
    if not isinstance(written, int) or cand is None or simulated is None or simulated == written:
        return ()
    note = (
        f"the simulation ran the draft on {simulated} GPU(s), as vLLM {inputs.deployment.engine_version or ''} (V0) "
        f"could; this config is for vLLM V1 (0.15 and later), which runs a draft model only at the target's tensor "
        f"parallelism ({written})"
    )
    return (f"{note} -- set [deployment].engine_version to the vLLM you run to price that",)


def _budget_notes(engine: Engine, d: Deployment, spec: JsonObject | None) -> tuple[str, ...]:
    """Where the vLLM command's token budget is not the plan's (:meth:`~specwise.engines.vllm.VllmEngine.token_budget`:
    vLLM's V0 engine, prefilling whole prompts, starts only with a budget of at least the max model length), why."""
    planned = d.max_num_batched_tokens
    if not isinstance(engine, VllmEngine) or (spec is None and not d.on_v0) or planned is None:
        return ()
    written = engine.token_budget(d, None if spec is None else spec.get("method"))
    if written == planned:
        return ()
    flag = "--max-num-batched-tokens"
    said = f"{flag} {written}" if written is not None else f"no {flag} (V0's default, max(max_model_len, 2048))"
    what = f"the whole server (its --kv-cache-dtype {d.kv_cache_dtype})" if d.on_v0 else "the speculation"
    return (
        f"{said}, not the scenario's {planned}: this vLLM runs {what} on its V0 engine, which prefills "
        "whole prompts and refuses to start with a token budget below --max-model-len; the memory plan reserved "
        f"activations for {planned} tokens, and a launch file's baseline runs with the same flags",
    )


def serve_command(
    inputs: AdviseInputs, top: CandidateAdvice, spec: JsonObject | None, engine: Engine, host: str = LOOPBACK
) -> ServeCommand:
    """The serve command for the decision, sized by the top candidate's memory plan."""
    deployment = _deployment(inputs, top, engine, host)
    argv = engine.serve_argv(deployment, spec)
    speculation = _top_speculation(inputs, top, deployment.tp) if spec is not None else None  # the draft it loads
    notes = checkpoint_notes(deployment, speculation)
    notes += engine.schedule_notes(top.schedule, top.k, top.method) if spec is not None else ()
    notes += _draft_tp_notes(inputs, top, spec)
    notes += _budget_notes(engine, deployment, spec)
    if isinstance(engine, VllmEngine):
        notes += _kv_notes(inputs.deployment.kv_cache_dtype, top.memory.target.dtype)
        notes += kv_cache_notes(engine.version, deployment.kv_cache_dtype, inputs.gpu)
    if spec is not None and "num_speculative_tokens_per_batch_size" in spec:
        notes = (*notes, dynamic_k_caveat(engine.version if isinstance(engine, VllmEngine) else None))
    return ServeCommand(engine.name, tuple(argv), shell(argv), spec, notes)
