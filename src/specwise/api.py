"""The Python API: what the commands do, as functions that return the typed documents (issue 14).

Each function is a thin wrapper over the library the command line uses -- same parsing, same checks, same
results -- and returns the document the command's ``--json`` prints (``doc.to_json()`` gives that JSON):

* :func:`advise` -> :class:`~specwise.contracts.advice.Advice`
* :func:`simulate` -> :class:`~specwise.contracts.sweep.SweepResult`
* :func:`plan_memory` -> :class:`~specwise.memory.MemoryPlan`
* :func:`profile` -> :class:`~specwise.contracts.profile.ProfileDoc` (needs ``specwise[profile]``)
* :func:`bench` -> :class:`~specwise.contracts.bench.BenchDoc`
* :func:`check_pair` -> :class:`~specwise.compat.pair.PairReport`
* :func:`inspect` -> :class:`~specwise.report.models.ModelSpecView`
* :func:`prompt_summary` -> :class:`~specwise.prompts.summary.PromptSummary` (``specwise prompts``)

A scenario is a TOML file or ``example:NAME`` (a scenario shipped in the package: ``specwise examples``). A mistake
in the input raises :class:`~specwise.errors.SpecwiseError` with one line, before any work: each argument goes
through the check its command-line flag has (and the message names the argument, ``num_requests``, not the flag);
a list argument also takes one value (one file, one URL, one number) as a list of one.

>>> import specwise
>>> advice = specwise.advise("example:advise/summarize-low-qps")
>>> advice.decision, advice.recommended
('enable', 'draft_model:meta-llama/Llama-3.2-1B-Instruct')
>>> dict(advice.serve.speculative_config)["num_speculative_tokens"]
4
>>> advice.to_json()["schema"]
'specwise.advise/1'
"""

from __future__ import annotations

import contextlib
import numbers
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from specwise.engines.base import LOOPBACK
from specwise.errors import FieldNames, SpecwiseError

if TYPE_CHECKING:  # the documents; imported where used, so ``import specwise`` stays light
    from specwise.advisor.inputs import AdviseInputs
    from specwise.compat.pair import PairReport
    from specwise.contracts.advice import Advice
    from specwise.contracts.bench import BenchDoc
    from specwise.contracts.profile import ProfileDoc
    from specwise.contracts.sweep import SweepResult
    from specwise.executors import ExecutorSpec
    from specwise.loadgen.plan import RunConfig
    from specwise.memory import MemoryPlan
    from specwise.perfmodel.factory import PredictorChoice
    from specwise.profiler.settings import ProfileSettings
    from specwise.profiler.templates import TemplateChoice
    from specwise.prompts.summary import PromptSummary
    from specwise.report.models import ModelSpecView
    from specwise.scenario.model import Scenario

ScenarioSource = str | Path  # a TOML file, or example:NAME (a scenario shipped in the package)
ModelSource = str | os.PathLike[str]  # a catalog id, or a local HF directory, config.json or GGUF file

__all__ = ["advise", "bench", "check_pair", "inspect", "plan_memory", "profile", "prompt_summary", "simulate"]

_T = TypeVar("_T")


class _ArgumentNames(FieldNames):
    """How the library's messages name a setting for an API caller: the keyword (``draft_tp``), not the flag."""

    def name(self, field: str) -> str:
        return field

    def setting(self, field: str, value: object) -> str:
        return f"{field}={value!r}"


_ARGUMENTS = _ArgumentNames()


def _checked(name: str, check: Callable[[str], _T], text: str, flag: str | None = None) -> _T:
    """``text`` through the command line's own check of it (an argparse type, or a parser whose messages start
    with ``flag``); a refusal is one :class:`SpecwiseError` that names the API argument ``name``."""
    import argparse

    try:
        return check(text)
    except SpecwiseError as exc:
        message = str(exc)
        if flag and message.startswith(flag):
            raise SpecwiseError(name + message.removeprefix(flag)) from None
        raise SpecwiseError(f"{name}: {message}") from None
    except (argparse.ArgumentTypeError, ValueError) as exc:
        raise SpecwiseError(f"{name}: {exc}") from None


def _number(name: str, value: object, integer: bool = False) -> str:
    """A number's text, for the command line's check of it; anything else (a bool, a string) is refused."""
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise SpecwiseError(f"{name}: expected {'an integer' if integer else 'a number'}, got {value!r}")
    return repr(int(value)) if isinstance(value, numbers.Integral) else repr(float(value))


def _items(name: str, value: object) -> tuple[Any, ...]:
    """A list argument's items; one string or path stands for a list of one (never its characters)."""
    if isinstance(value, str | Path):
        return (value,)
    if not isinstance(value, Iterable):
        raise SpecwiseError(f"{name}: expected a list, got {value!r}")
    return tuple(value)


def _numbers(name: str, value: object, integer: bool = False) -> str:
    """A list of numbers as the command line writes it (comma-separated): a string passes as written (the command
    line's own syntax: ``"1,4"``, ``"1-8"``), one number is a list of one."""
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Number):
        return _number(name, value, integer)
    return ",".join(_number(name, v, integer) for v in _items(name, value))


def _text(name: str, value: object, what: str = "a string") -> str:
    if not isinstance(value, str):
        raise SpecwiseError(f"{name}: expected {what}, got {value!r}")
    return value


def _model(name: str, value: object, what: str) -> str:
    """A model given by catalog id (a str) or local path (a str or any path object, as ``simulate`` takes a
    scenario), as the text the command line's ``--target`` / ``--draft`` would get."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise SpecwiseError(f"{name}: expected {what} (str or Path), got {value!r}")
    return value


def _paths(name: str, value: object) -> list[Path]:
    """A list of files; one str or Path is a list of one."""
    items = _items(name, value)
    for item in items:
        if not isinstance(item, str | Path):
            raise SpecwiseError(f"{name}: expected file paths (str or Path), got {item!r}")
    return [Path(item) for item in items]


def _keywords(function: str, given: Mapping[str, object], cls: type, own: Iterable[str]) -> None:
    """Refuse keyword arguments ``cls`` has no field for (or that the function takes by name already), and a value
    not of its field's kind where the field's default says it (an integer, a number, a string)."""
    from dataclasses import MISSING, fields

    known = {f.name: f.default for f in fields(cls) if f.name not in set(own)}
    for name, value in given.items():
        if name not in known:
            takes = ", ".join(sorted(known))
            raise SpecwiseError(f"{function}: unexpected keyword argument {name!r}; it takes {takes}")
        default = known[name]
        if default is MISSING or default is None or isinstance(default, bool):
            continue
        if isinstance(default, int | float):
            _number(name, value, integer=isinstance(default, int))
        elif isinstance(default, str):
            _text(name, value)


def _file(name: str, value: object, what: str = "a file path (str or Path)") -> Path:
    if not isinstance(value, str | Path):
        raise SpecwiseError(f"{name}: expected {what}, got {value!r}")
    return Path(value)


def _path(source: object) -> Path:
    """A scenario file, or the packaged file of ``example:NAME``."""
    from specwise.examples import EXAMPLE_PREFIX, scenario_example_path

    path = _file("scenario", source, "a file path (str or Path) or example:NAME")
    return scenario_example_path(str(source)) if str(source).startswith(EXAMPLE_PREFIX) else path


def _executor(executor: object, processes: object) -> tuple[ExecutorSpec, int | None]:
    """``executor`` and ``processes`` through ``--executor`` and ``--processes``' checks."""
    from specwise.executors import parse_executor
    from specwise.values import positive_int

    spec = _checked("executor", parse_executor, _text("executor", executor, "'local', 'ray' or 'ray:ADDRESS'"))
    if processes is None:
        return spec, None
    return spec, _checked("processes", positive_int, _number("processes", processes, integer=True))


def _advise_inputs(source: ScenarioSource) -> AdviseInputs:
    from specwise.advisor.inputs import load_inputs

    return load_inputs(_path(source))


def _scenario(
    source: ScenarioSource, num_requests: object, metric: object, predictor: PredictorChoice | None
) -> Scenario:
    """The scenario with ``num_requests`` and ``metric`` checked and applied as ``--num-requests`` and ``--metric``
    are, simulated with ``predictor`` (None: its own): before the sweep."""
    from specwise.scenario.overrides import requests_per_cell, with_overrides
    from specwise.scenario.toml_loader import load_scenario

    requests = None
    if num_requests is not None:
        requests = _checked("num_requests", requests_per_cell, _number("num_requests", num_requests, integer=True))
    checked_metric = None if metric is None else _text("metric", metric)
    return with_overrides(load_scenario(_path(source), predictor), source, requests, checked_metric, _ARGUMENTS)


def _predictor(predictor: object, calibration: object) -> PredictorChoice | None:
    """``predictor`` and ``calibration`` through ``--predictor`` and ``--calibration``'s checks (None: the
    scenario's own step-time model); reads the calibration file."""
    from specwise.perfmodel.factory import predictor_choice

    name = None if predictor is None else _text("predictor", predictor)
    path = None if calibration is None else _file("calibration", calibration)
    return predictor_choice(name, path, _ARGUMENTS)


def advise(
    scenario: ScenarioSource,
    *,
    profiles: Sequence[str | Path] | str | Path = (),
    benches: Sequence[str | Path] | str | Path = (),
    processes: int | None = None,
    host: str = LOOPBACK,
    vllm_version: str | None = None,
    executor: str = "local",
    predictor: str | None = None,
    calibration: str | Path | None = None,
) -> Advice:
    """The decision for an advise scenario (``specwise advise``): enable, enable below a load, measure first or
    disable, with the ranked candidates, their rule checks and the ``vllm serve`` command.

    ``profiles`` / ``benches`` are ``specwise profile`` / ``specwise bench`` (or ``vllm bench serve``) result
    files (a list, or one file) whose measured acceptance replaces the assumed one; ``host`` is what the serve
    command binds; ``vllm_version`` (e.g. ``"0.20"``, a string) writes the config in the form that vLLM version
    takes; ``executor`` is ``--executor``'s ``local``, ``ray`` or ``ray:ADDRESS`` (``processes``: the local pool's
    size). ``predictor`` (``published-fit``, ``roofline`` or ``calibrated``) and ``calibration`` (a calibration file
    from ``specwise bench --launch --calibrate`` or ``specwise calibrate``; it implies ``calibrated``) replace the
    scenario's step-time model, as ``--predictor`` and ``--calibration`` do. ``advice.negative`` is True when the
    answer is no (``decision`` ``disable`` or ``unsupported``), where ``specwise advise`` exits 1.

    >>> import specwise
    >>> advice = specwise.advise("example:advise/draft-does-not-fit")
    >>> advice.decision, advice.negative
    ('measure_first', False)
    >>> [(c.candidate, c.verdict) for c in advice.candidates]
    [('draft_model:meta-llama/Llama-3.1-8B-Instruct', 'does_not_fit'), ('ngram', 'measure_first')]
    """
    from dataclasses import replace

    from specwise.advisor.decision import advise as _advise
    from specwise.engines.vllm_versions import vllm_version_text
    from specwise.executors import open_executor
    from specwise.scenario.toml_loader import override_note, with_predictor
    from specwise.values import host_address

    profile_files, bench_files = _paths("profiles", profiles), _paths("benches", benches)
    bind = _checked("host", host_address, _text("host", host))
    if vllm_version is not None:
        version = _text("vllm_version", vllm_version, "a version string such as '0.20'")
        _checked("vllm_version", vllm_version_text, version)
    spec, workers = _executor(executor, processes)
    inputs = _advise_inputs(scenario)
    choice = _predictor(predictor, calibration)
    if choice is not None:
        note = override_note(inputs.deployment, choice, "predictor=/calibration=")
        notes = (*inputs.notes, note) if note else inputs.notes
        inputs = replace(inputs, deployment=with_predictor(inputs.deployment, choice), notes=notes)
    with open_executor(spec, workers) as on:
        return _advise(inputs, profile_files, bench_files, host=bind, engine_version=vllm_version, executor=on)


def simulate(
    scenario: ScenarioSource,
    *,
    num_requests: int | None = None,
    metric: str | None = None,
    processes: int | None = None,
    executor: str = "local",
    predictor: str | None = None,
    calibration: str | Path | None = None,
) -> SweepResult:
    """The QPS x k sweep of a simulate scenario (``specwise simulate``): latencies with and without speculation,
    the best k per load and the crossover load where speculation stops paying; the cells on ``executor``
    (``local``, ``ray`` or ``ray:ADDRESS``, as ``--executor``; ``processes``: the local pool's size).
    ``predictor`` / ``calibration`` replace the scenario's step-time model as ``--predictor`` /
    ``--calibration`` do (see :func:`advise`).

    >>> import specwise
    >>> sweep = specwise.simulate("example:llama70b-ngram", num_requests=100, processes=1)
    >>> sweep.method, sweep.qps
    ('ngram', (0.5, 1.0, 2.0, 4.0, 8.0, 16.0))
    >>> all(sweep.best_speedup_by_qps[q] > 1.0 for q in sweep.qps)
    True
    """
    from specwise.executors import open_executor
    from specwise.study.decide import decide
    from specwise.study.sweep import run_sweep

    spec, workers = _executor(executor, processes)
    sc = _scenario(scenario, num_requests, metric, _predictor(predictor, calibration))
    with open_executor(spec, workers) as on:
        return decide(sc, run_sweep(sc, on))


def plan_memory(
    target: ModelSource,
    gpu: str | os.PathLike[str],
    *,
    draft: ModelSource | None = None,
    tp: int = 1,
    max_model_len: int | None = None,
    quantization: str = "auto",
    kv_cache_dtype: str = "auto",
    gpu_memory_utilization: float = 0.9,
    **request: Any,
) -> MemoryPlan:
    """Do the target (and draft) fit on these GPUs, with how much KV cache (``specwise plan-memory``).

    ``target`` / ``draft`` are catalog ids or local paths (str or Path; ``draft`` also ``ngram``, ``suffix``,
    ``mtp``); other :class:`~specwise.memory.MemoryPlanRequest` fields (``draft_tp``, ``max_num_seqs``,
    ``reserve_bytes``, ...) pass as keywords. A draft whose vocabulary cannot serve the target raises
    :class:`~specwise.errors.NegativeAnswer` (a :class:`~specwise.errors.SpecwiseError`: the input is valid, the
    answer is no); :class:`~specwise.errors.SpecwiseError` is raised by ``draft_tp`` or ``draft_quantization``
    with no draft weights to apply it to, a draft model at a ``draft_tp`` other than ``tp`` and a
    ``max_num_batched_tokens`` below ``max_num_seqs`` (vLLM refuses both).
    ``plan.to_json()`` is what ``specwise plan-memory --json`` prints (with the pair check under ``compatibility``).

    >>> import specwise
    >>> plan = specwise.plan_memory("meta-llama/Llama-3.1-70B-Instruct", "H100-SXM-80GB", tp=4)
    >>> plan.fits, plan.kv_cache_tokens
    (True, 478464)
    >>> specwise.plan_memory("meta-llama/Llama-3.1-70B-Instruct", "H100-SXM-80GB").fits
    False
    """
    from dataclasses import replace

    from specwise.catalog import resolve_gpu, resolve_model
    from specwise.compat.named import checked_draft
    from specwise.memory import MemoryPlanRequest
    from specwise.memory import plan_memory as _plan

    settings = _plan_settings(
        {
            "tp": tp,
            "max_model_len": max_model_len,
            "quantization": quantization,
            "kv_cache_dtype": kv_cache_dtype,
            "gpu_memory_utilization": gpu_memory_utilization,
        },
        request,
    )
    target_name = _model("target", target, "a catalog id or a local path")
    draft_name = None if draft is None else _model("draft", draft, "a catalog id, a local path, ngram, suffix or mtp")
    gpu_name = _model("gpu", gpu, "a GPU name or a GPU JSON file")
    target_spec = resolve_model(target_name, field="target")
    choice, pair = checked_draft(
        target_spec,
        draft_name,
        settings.get("draft_tp"),
        settings.get("draft_quantization", "auto"),
        _ARGUMENTS,
        tp=settings["tp"],
        max_model_len=settings.get("max_model_len"),
    )
    plan_request = MemoryPlanRequest(
        target=target_spec, gpu=resolve_gpu(gpu_name), draft=choice, names=_ARGUMENTS, **settings
    )
    return replace(_plan(plan_request), compatibility=pair)


_PLAN_INTERNAL = ("target", "gpu", "draft", "names")  # MemoryPlanRequest fields no keyword sets


def _plan_settings(own: dict[str, object], request: Mapping[str, object]) -> dict[str, Any]:
    """``plan_memory``'s settings (its own arguments and the other :class:`~specwise.memory.MemoryPlanRequest`
    fields passed as keywords), each through its ``specwise plan-memory`` flag's check and named as the argument:
    one :class:`SpecwiseError` before any model is resolved. The values a request takes, with the API's names."""
    from dataclasses import fields

    from specwise.memory import MemoryPlanRequest
    from specwise.memory.planner import dtype_refusal
    from specwise.memory.vllm_rules import batched_tokens_refusal
    from specwise.methods import speculative_tokens
    from specwise.specs.quant import QUANT_CHOICES
    from specwise.units import KV_CACHE_DTYPES
    from specwise.values import non_negative_int, positive_int

    _keywords("plan_memory", request, MemoryPlanRequest, (*own, *_PLAN_INTERNAL))
    defaults = {f.name: f.default for f in fields(MemoryPlanRequest)}
    integers = {"tp": positive_int, "max_model_len": positive_int, "num_gpus": positive_int, "draft_tp": positive_int,
                "max_num_batched_tokens": positive_int, "max_num_seqs": positive_int,
                "num_speculative_tokens": speculative_tokens, "reserve_bytes": non_negative_int}  # fmt: skip
    choices = {"quantization": QUANT_CHOICES, "draft_quantization": QUANT_CHOICES, "kv_cache_dtype": KV_CACHE_DTYPES}
    settings: dict[str, Any] = {}
    for name, value in {**own, **request}.items():
        if value is None and defaults[name] is None:
            settings[name] = None
        elif name in integers:
            settings[name] = _checked(name, integers[name], _number(name, value, integer=True))
        elif name in choices and _text(name, value) not in choices[name]:
            raise SpecwiseError(f"{name}: {value!r} is not one of {', '.join(choices[name])}")
        elif name == "dtype" and (refusal := dtype_refusal(_text(name, value), _ARGUMENTS)) is not None:
            raise SpecwiseError(f"{name}: {refusal}")
        else:
            settings[name] = value
    settings["gpu_memory_utilization"] = _gpu_memory_utilization(own["gpu_memory_utilization"])
    batched = settings.get("max_num_batched_tokens", defaults["max_num_batched_tokens"])
    refusal = batched_tokens_refusal(settings.get("max_num_seqs", defaults["max_num_seqs"]), batched)
    if refusal is not None:  # as MemoryPlanRequest says it, before the models are resolved
        raise SpecwiseError(f"{_ARGUMENTS.setting('max_num_batched_tokens', batched)}: {refusal}")
    return settings


def check_pair(target: ModelSource, draft: ModelSource, *, max_model_len: int | None = None) -> PairReport:
    """Can ``draft`` serve ``target`` in vLLM, and how do their sizes compare (``specwise check-pair``): vocabulary,
    special tokens, tokenizer agreement (from files when present), an EAGLE/MTP head's fit, the size ratio and,
    with ``max_model_len``, the draft's positions. ``target`` / ``draft`` are catalog ids or local paths (str or Path;
    ``draft`` also an EAGLE head, ``mtp``, ``ngram`` or ``suffix``); ``report.compatible`` is the command's exit
    status 0. ``ngram`` / ``suffix`` are model-free, compatible with any target (one ``method`` finding, the size
    ratios None); ``mtp`` on a target without MTP layers is not compatible (exit 1), not an error.

    >>> import specwise
    >>> report = specwise.check_pair("Qwen/Qwen3-8B", "Qwen/Qwen3-0.6B")
    >>> report.compatible, [f.check for f in report.findings][:3]
    (True, ['vocab', 'special_tokens', 'tokenizer'])
    >>> lookup = specwise.check_pair("Qwen/Qwen3-8B", "ngram")
    >>> lookup.compatible, lookup.param_ratio
    (True, None)
    """
    from specwise.compat.named import named_pair_report
    from specwise.values import positive_int

    length = None
    if max_model_len is not None:
        length = _checked("max_model_len", positive_int, _number("max_model_len", max_model_len, integer=True))
    target_name = _model("target", target, "a catalog id or a local path")
    draft_name = _model("draft", draft, "a catalog id, a local path, mtp, ngram or suffix")
    return named_pair_report(target_name, draft_name, length, _ARGUMENTS)


def inspect(model: ModelSource, *, kv_cache_dtype: str = "auto") -> ModelSpecView:
    """A model's derived spec (``specwise inspect``): parameters, layout and KV bytes per token at
    ``kv_cache_dtype`` (vLLM's ``--kv-cache-dtype``: ``auto`` is the model's dtype). ``model`` is a catalog id,
    or the path (str or Path) of an HF directory, a config.json or a GGUF file.

    >>> import specwise
    >>> view = specwise.inspect("Qwen/Qwen3-8B", kv_cache_dtype="fp8_e4m3")
    >>> view.kv_dtype, view.kv_bytes_per_token
    ('fp8', 73728)
    """
    from specwise.catalog import catalog_source, resolve_model
    from specwise.report.models import ModelSpecView
    from specwise.units import KV_CACHE_DTYPES
    from specwise.units import kv_cache_dtype as kv_format

    choice = _text("kv_cache_dtype", kv_cache_dtype)
    if choice not in KV_CACHE_DTYPES:
        raise SpecwiseError(f"kv_cache_dtype: {choice!r} is not one of {', '.join(KV_CACHE_DTYPES)}")
    spec = resolve_model(_model("model", model, "a catalog id or a local path"), field="model")
    return ModelSpecView(spec, kv_format(choice, spec.dtype), catalog_source(spec))


def prompt_summary(
    source: str | Path,
    *,
    category: Sequence[str] | str | None = None,
    turns: str = "first",
    tokenizer: str | Path | None = None,
) -> PromptSummary:
    """What a prompt source yields for bench and profile (``specwise prompts``; not named ``prompts``, which is the
    :mod:`specwise.prompts` package): requests per category, how many carry earlier turns, and their length in
    words (or in tokens of ``tokenizer``). ``source`` is a JSON/JSONL
    file, ``hf:PATH`` or ``builtin:NAME``; ``category`` keeps those categories (a list, or ``--category``'s
    ``"a,b"``); ``turns`` is ``first`` or ``all``.

    >>> import specwise
    >>> summary = specwise.prompt_summary("builtin:chat")
    >>> [(row.category, row.requests) for row in summary.rows]
    [('chat', 24)]
    """
    from specwise.prompts.items import TURN_MODES
    from specwise.prompts.sources import Selection, parse_categories
    from specwise.prompts.summary import summarize_source

    categories: tuple[str, ...] = ()
    if category is not None:
        text = ",".join(_text("category", c, "category names (str)") for c in _items("category", category))
        categories = _checked("category", parse_categories, text, "--category")
    if _text("turns", turns) not in TURN_MODES:
        raise SpecwiseError(f"turns: {turns!r} is not one of {', '.join(TURN_MODES)}")
    selection = Selection(categories, turns)
    where = str(_file("source", source, "a file path, hf:PATH or builtin:NAME"))
    tok = None if tokenizer is None else str(_file("tokenizer", tokenizer, "a directory, a file or ORG/NAME"))
    return summarize_source(where, selection, tok)


def _gpu_memory_utilization(value: object) -> float:
    from specwise.values import fraction

    result: float = _checked("gpu_memory_utilization", fraction, _number("gpu_memory_utilization", value))
    return result


def profile(
    target: str | Path,
    draft: str | Path | None = None,
    *,
    method: str = "draft_model",
    prompts: str | Path = "builtin:chat",
    max_prompts: int | None = None,
    temperatures: Sequence[float] | float | str = (0.0, 0.5, 1.0),
    k: Sequence[int] | int | str = tuple(range(1, 9)),
    max_new_tokens: int = 128,
    threads: int | None = None,
    chat_template: str | Path = "none",
    verify_temperatures: Sequence[float] | float | str | None = None,
    verify_k: int | None = None,
    verify_paths: int | None = None,
    **settings: Any,
) -> ProfileDoc:
    """Acceptance of a real draft/target pair, or of n-gram / suffix lookup, on real prompts
    (``specwise profile``; needs ``pip install 'specwise[profile]'``: torch and transformers on the CPU).

    ``method`` ``draft_model`` needs a ``draft``; ``ngram`` and ``suffix`` take none. ``temperatures`` and ``k``
    are lists, one number, or the command line's text (``"0,0.5,1"``, ``"1-8"``). Other
    :class:`~specwise.profiler.settings.ProfileSettings` fields (``top_k``, ``quantizations``, ``seed``,
    ``prompt_lookup_min``, ...) pass as keywords. Every value is checked as ``specwise profile`` checks its flag,
    before any weights load. ``chat_template`` is ``--chat-template`` (``"auto"``, ``"none"`` or a Jinja file);
    ``verify_temperatures`` (``--verify --verify-temperatures``) also runs the real speculative sampling loop at
    ``verify_k`` (default 4; ``verify_paths`` runs per prompt at T > 0, default 1) and records the comparison in
    ``doc.verification`` (``verify_k`` or ``verify_paths`` without ``verify_temperatures`` is refused, as
    ``--verify-k`` without ``--verify`` is; so are ``prompt_lookup_min/max`` with a method other than ngram);
    :func:`specwise.report.profile_plots.plot_acceptance_vs_temperature` draws ``--plot``'s figure from the result.

    >>> import specwise
    >>> doc = specwise.profile("models/smollm2-135m", method="ngram", prompts="builtin:summarization",
    ...                        max_prompts=2, temperatures=(0.0,), k=(1, 4))  # doctest: +SKIP
    >>> [row.k for row in doc.results[0].by_k]  # doctest: +SKIP
    [1, 4]
    """
    from specwise.extras import require
    from specwise.loadgen.workload import load_prompts

    config = _profile_settings(method, draft, temperatures, k, max_new_tokens, settings)
    for name, count in (("max_prompts", max_prompts), ("threads", threads)):
        _profile_int(name, count)
    choice = _template_choice(chat_template)
    verify_temps, loop_k, loop_paths = _verify_options(verify_temperatures, verify_k, verify_paths)
    for name, where in (("target", target), ("draft", draft)):
        if where is not None:
            _file(name, where, "a model directory or .gguf file (str or Path)")
    items = load_prompts(_file("prompts", prompts))[:max_prompts]  # a missing file is said before torch is needed
    for module in ("torch", "transformers"):
        require(module, "profile")
    from specwise.profiler.document import PromptDetails, build_document
    from specwise.profiler.runner import Timings, load_pair, prepare_prompts, run_profile
    from specwise.profiler.templates import rendered_prompts
    from specwise.profiler.templates import resolve as resolve_template
    from specwise.profiler.threads import configure_threads
    from specwise.profiler.verify import verify

    timings = Timings()
    timings.extra["threads"] = configure_threads(threads)
    loaded = load_pair(str(target), None if draft is None else str(draft), config, len(items), timings)
    template = resolve_template(choice, loaded.tokenizer, loaded.target_files.path)
    rendered = rendered_prompts(items, template, loaded.tokenizer)
    prepared = prepare_prompts(loaded, rendered, config)
    results, _continuations, ids = run_profile(loaded, rendered, config, None, timings, prepared)
    checks = None
    if verify_temps:
        checks = verify(
            loaded.target, loaded.draft, ids, results, config, verify_temps, loop_k, paths_per_prompt=loop_paths
        )
    draft_name = None if draft is None else str(draft)
    details = PromptDetails(chat_template=template, max_prompt_tokens=prepared.limit, truncated=prepared.truncated)
    return build_document(
        str(target), draft_name, config, str(prompts), len(items), results, timings.as_dict(), checks, details
    )


def _template_choice(value: object) -> TemplateChoice:
    """``chat_template`` through ``--chat-template``'s parser: auto, none or a Jinja template file."""
    from specwise.profiler.templates import TemplateChoice

    if not isinstance(value, str | Path):
        raise SpecwiseError(f"chat_template: expected 'auto', 'none' or a template file path, got {value!r}")
    try:
        return TemplateChoice.parse(str(value))
    except SpecwiseError as exc:
        raise SpecwiseError(str(exc).replace("--chat-template", "chat_template", 1)) from None


def _verify_options(temperatures: object, k: object, paths: object) -> tuple[tuple[float, ...], int, int]:
    """(temperatures, k, paths per prompt) of the verification loop, each through its ``--verify-*`` flag's check;
    ``k`` and ``paths`` without ``temperatures`` (no verification) are refused, as without ``--verify``."""
    from specwise.profiler.settings import VERIFY_K, VERIFY_PATHS, check_verify_options
    from specwise.values import positive_int

    temps = _verify_temperatures(temperatures)
    loop_options = {"verify_k": k, "verify_paths": paths}
    check_verify_options(temperatures is not None, loop_options, "verify_temperatures", _ARGUMENTS)
    checked = {
        name: _checked(name, positive_int, _number(name, value, integer=True))
        for name, value in loop_options.items()
        if value is not None
    }
    return temps, checked.get("verify_k", VERIFY_K), checked.get("verify_paths", VERIFY_PATHS)


def _verify_temperatures(value: object) -> tuple[float, ...]:
    """``--verify-temperatures``' list through its parser; None: no verification."""
    from specwise.profiler.settings import parse_temperatures

    if value is None:
        return ()
    return _checked("verify_temperatures", parse_temperatures, _numbers("verify_temperatures", value), "--temperatures")


def _quantizations(value: object) -> tuple[dict[str, str], ...]:
    """Quantisation what-ifs, each ``--quantize``'s text (``"draft=int8,target=int4"``) or a role -> scheme mapping,
    through ``--quantize``'s parser."""
    from specwise.profiler.quantize_spec import parse_quantize

    texts = []
    for item in (value,) if isinstance(value, Mapping) else _items("quantizations", value):
        if isinstance(item, Mapping):
            item = ",".join(f"{role}={scheme}" for role, scheme in item.items())
        texts.append(_text("quantizations", item, "ROLE=SCHEME text or a role -> scheme mapping"))
    return tuple(_checked("quantizations", parse_quantize, text, "--quantize") for text in texts)


def _profile_int(name: str, value: object) -> None:
    """An integer setting through its ``specwise profile`` flag's check (None: not given)."""
    from specwise.profiler.settings import CHECKS

    if value is not None and name in CHECKS:
        _checked(name, CHECKS[name], _number(name, value, integer=True))


def _profile_settings(
    method: object, draft: object, temperatures: object, k: object, max_new_tokens: object, settings: dict[str, Any]
) -> ProfileSettings:
    """What the run measures, checked as ``specwise profile`` checks its flags -- before any weights load."""
    from specwise.profiler.settings import (
        CHECKS,
        ProfileSettings,
        check_method_draft,
        lookup_range,
        parse_k_values,
        parse_temperatures,
    )

    method_name = _text("method", method)
    check_method_draft(method_name, draft, _ARGUMENTS)
    _keywords("profile", settings, ProfileSettings, ("method", "temperatures", "k_values", "max_new_tokens"))
    for name, value in settings.items():
        _profile_int(name, value)
    new_tokens = _checked(
        "max_new_tokens", CHECKS["max_new_tokens"], _number("max_new_tokens", max_new_tokens, integer=True)
    )
    temps = _checked("temperatures", parse_temperatures, _numbers("temperatures", temperatures), "--temperatures")
    lookup = (settings.pop("prompt_lookup_min", None), settings.pop("prompt_lookup_max", None))
    lo, hi = lookup_range(method_name, *lookup, names=_ARGUMENTS)
    if "quantizations" in settings:
        settings["quantizations"] = _quantizations(settings["quantizations"])
    return ProfileSettings(
        method=method_name,
        temperatures=temps,
        k_values=_checked("k", parse_k_values, _numbers("k", k, integer=True), "--k"),
        max_new_tokens=new_tokens,
        prompt_lookup_min=lo,
        prompt_lookup_max=hi,
        **settings,
    )


def bench(
    url: str,
    model: str,
    *,
    rates: Sequence[float] | float | str | None = None,
    requests_per_level: int = 20,
    prompts: str | Path | None = None,
    max_tokens: int = 64,
    db: str | Path = "specwise-bench.sqlite",
    run_id: str | None = None,
    **config: Any,
) -> BenchDoc:
    """Load-test an OpenAI-compatible server at each request rate (``specwise bench --url``): streamed
    token-normalised latencies, throughput, and acceptance from the server's ``/metrics``. Every record is kept
    in the SQLite ``db`` under ``run_id``. ``prompts`` is a JSONL file or ``builtin:NAME`` (default: synthetic
    prompts); other :class:`~specwise.loadgen.plan.RunConfig` fields (``concurrency``, ``temperature``,
    ``metrics_urls``, ...) pass as keywords, each checked as its ``specwise bench`` flag is, before any request
    (``rates``, ``concurrency`` and ``metrics_urls`` take one value or a list; ``metrics_urls=()`` reads no
    counters; default: ``url/metrics``). The levels are ``rates`` (default 1 and 4 requests/s), ``concurrency`` or
    ``sweep``: one of them; ``arrivals`` paces rates only, and ``cv`` is gamma arrivals' -- a combination the CLI
    refuses is refused here too, before any request. A run in which every request failed raises
    :class:`~specwise.errors.SpecwiseError` (its records stay in ``db``).

    >>> import specwise, tempfile
    >>> from specwise.loadgen.mock_server import MockServer
    >>> with tempfile.TemporaryDirectory() as tmp, MockServer() as server:
    ...     doc = specwise.bench(server.url, "mock", rates=(20.0,), requests_per_level=6, db=f"{tmp}/b.sqlite")
    >>> level = doc.levels[0]
    >>> level.summary.requests, level.summary.failed, level.spec_decode is not None
    (6, 0, True)
    """
    import uuid

    from specwise.contracts.bench import BenchDoc
    from specwise.errors import redact_url
    from specwise.loadgen.client import served_root
    from specwise.loadgen.plan import client_config
    from specwise.loadgen.session import all_failed, execute, new_run
    from specwise.loadgen.store import ResultStore

    run = _run_config(url, model, rates, requests_per_level, prompts, max_tokens, config)
    if run_id is not None:
        _text("run_id", run_id)
    store = ResultStore(_file("db", db))
    try:
        rid = run_id or uuid.uuid4().hex[:12]
        new_run(store, rid, run, "give another run_id (or resume it with specwise bench --resume)")
        levels = execute(store, rid, run, f"run {rid}")
    finally:
        store.close()
    doc = BenchDoc(
        run_id=rid,
        db=str(db),
        model=model,
        url=redact_url(url),
        levels=tuple(levels),
        temperatures=run.sent_temperatures(),
        speculative_config=run.speculative_config,
        model_root=served_root(client_config(run)),
    )
    failed = all_failed(doc, url="url", model="model", timeout="request_timeout_s", key_env=run.api_key_env)
    if failed is not None:  # the records are kept: what failed is in db
        raise SpecwiseError(f"{failed} (run {rid} in {db})")
    return doc


_INTEGERS = frozenset({"concurrency", "sweep", "requests_per_level", "max_tokens", "max_concurrency", "seed"})
_OPTIONAL = frozenset({"concurrency", "sweep", "slo_ttft_s", "slo_tpot_s", "speculative_config"})  # None: not given


def _renamed_keywords(function: str, config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The keywords under their current names, and which were given under an old one (new name: old name): an old
    name (``timeout``, ``slo_ttft``, ``slo_tpot``, before they said their unit) still works, with a
    ``DeprecationWarning`` naming the new one; both names at once are refused."""
    import warnings

    from specwise.loadgen.plan import RENAMED_FIELDS

    out, said = dict(config), {}
    for old, new in RENAMED_FIELDS.items():
        if old not in out:
            continue
        if new in out:
            raise SpecwiseError(f"{function}: {old!r} is the old name of {new!r}; give one of them")
        warnings.warn(f"{function}: {old!r} is now {new!r} (seconds)", DeprecationWarning, stacklevel=4)
        out[new] = out.pop(old)
        said[new] = old
    return out, said


@contextlib.contextmanager
def _named_as_given(said: dict[str, str]) -> Iterator[None]:
    """A refusal of a keyword the caller gave under its old name (``said``: new name -> old name) names it so."""
    try:
        yield
    except SpecwiseError as exc:
        message = str(exc)
        for new, old in said.items():
            if message.startswith(new + ":"):
                raise SpecwiseError(old + message.removeprefix(new)) from None
        raise


def _keyword(name: str, value: str | None) -> str:
    """A :class:`RunConfig` setting as ``specwise.bench()``'s keyword (and value) for it."""
    return name if value is None else f"{name}={value!r}"


# RunConfig fields a run fills in itself, not keywords: the rates a --sweep found (kept for --resume) and a launched
# server's record (review s59: launch="x.toml" was taken and failed with an AttributeError)
_INTERNAL_RUN_FIELDS = ("sweep_rates", "launch")


def _run_config(
    url: object,
    model: object,
    rates: object,
    requests_per_level: object,
    prompts: object,
    max_tokens: object,
    config: dict[str, Any],
) -> RunConfig:
    """The run's configuration, each value through its ``specwise bench`` flag's check, before any request; a bad
    value given under an old keyword is refused under that name, as the caller wrote it."""
    from specwise.loadgen.client import api_key_from
    from specwise.loadgen.plan import CHECKS, RunConfig, refuse_level_conflicts
    from specwise.loadgen.workload import load_prompts, synthetic_prompts

    config, said = _renamed_keywords("bench", config)
    with _named_as_given(said):
        own = ("url", "model", "prompts", "rates", "requests_per_level", "max_tokens")
        _keywords("bench", config, RunConfig, (*own, *_INTERNAL_RUN_FIELDS))
        refuse_level_conflicts(
            _keyword,
            rates=rates or None,
            concurrency=config.get("concurrency") or None,
            sweep=config.get("sweep") or None,
            arrivals=config.get("arrivals"),
            cv=config.get("cv"),
        )
        levels = (1.0, 4.0) if rates is None else rates
        given = {"rates": levels, "requests_per_level": requests_per_level, "max_tokens": max_tokens, **config}
        values: dict[str, Any] = {"url": _checked("url", CHECKS["url"], _text("url", url, "http://HOST:PORT"))}
        for name, value in given.items():
            check = CHECKS.get(name)
            if check is None or (value is None and name in _OPTIONAL):
                values[name] = value
            elif name == "speculative_config":  # JSON text, or the object itself
                values[name] = _checked(name, check, value)
            elif name == "api_key_env":  # a variable's name; one named that is unset is refused, as by the CLI
                values[name] = _checked(name, check, _text(name, value))
            elif name == "metrics_urls":
                values[name] = tuple(
                    _checked(name, check, _text(name, u, "http://HOST:PORT")) for u in _items(name, value)
                )
            elif name in ("rates", "concurrency"):
                values[name] = tuple(_checked(name, check, _numbers(name, value, integer=name in _INTEGERS)))
            else:
                values[name] = _checked(name, check, _number(name, value, integer=name in _INTEGERS))
    values.setdefault("metrics_urls", (values["url"].rstrip("/") + "/metrics",))
    if not isinstance(model, str) or not model:
        raise SpecwiseError(f"model: expected the name of the model the server serves, got {model!r}")
    if prompts:
        items = load_prompts(_file("prompts", prompts))
    else:  # the CLI's default: synthetic prompts of 60 words
        items = synthetic_prompts(values["requests_per_level"], 60, values.get("seed", 0))
    key_env = values.get("api_key_env", RunConfig.api_key_env)
    values["api_key_sent"] = api_key_from(key_env) is not None
    return RunConfig(model=model, prompts=tuple(items), **values)
