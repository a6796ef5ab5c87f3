"""The Python API: what the commands do, as functions that return the typed documents (issue 14).

Each function is a thin wrapper over the library the command line uses -- same parsing, same checks, same
results -- and returns the document the command's ``--json`` prints (``doc.to_json()`` gives that JSON):

* :func:`advise` -> :class:`~specwise.contracts.advice.Advice`
* :func:`simulate` -> :class:`~specwise.contracts.sweep.SweepResult`
* :func:`plan_memory` -> :class:`~specwise.memory.MemoryPlan`
* :func:`profile` -> :class:`~specwise.contracts.profile.ProfileDoc` (needs ``specwise[profile]``)
* :func:`bench` -> :class:`~specwise.contracts.bench.BenchDoc`

A scenario is a TOML file or ``example:NAME`` (a scenario shipped in the package: ``specwise examples``). A mistake
in the input raises :class:`~specwise.errors.SpecwiseError` with the one line the command would print.

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

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specwise.engines.base import LOOPBACK

if TYPE_CHECKING:  # the documents; imported where used, so ``import specwise`` stays light
    from specwise.advisor.inputs import AdviseInputs
    from specwise.contracts.advice import Advice
    from specwise.contracts.bench import BenchDoc
    from specwise.contracts.profile import ProfileDoc
    from specwise.contracts.sweep import SweepResult
    from specwise.memory import MemoryPlan
    from specwise.scenario.model import Scenario

ScenarioSource = str | Path  # a TOML file, or example:NAME (a scenario shipped in the package)

__all__ = ["advise", "bench", "plan_memory", "profile", "simulate"]


def _path(source: ScenarioSource) -> Path:
    """A scenario file, or the packaged file of ``example:NAME``."""
    from specwise.examples import EXAMPLE_PREFIX, example_path

    return example_path(str(source)) if str(source).startswith(EXAMPLE_PREFIX) else Path(source)


def _advise_inputs(source: ScenarioSource) -> AdviseInputs:
    from specwise.advisor.inputs import load_inputs

    return load_inputs(_path(source))


def _scenario(source: ScenarioSource, num_requests: int | None, metric: str | None) -> Scenario:
    from dataclasses import replace

    from specwise.scenario.toml_loader import load_scenario

    scenario = load_scenario(_path(source))
    if num_requests:
        scenario = replace(scenario, sweep=replace(scenario.sweep, num_requests=num_requests))
    if metric:
        scenario = replace(scenario, decision_metric=metric)
    return scenario


def advise(
    scenario: ScenarioSource,
    *,
    profiles: Sequence[str | Path] = (),
    benches: Sequence[str | Path] = (),
    processes: int | None = None,
    host: str = LOOPBACK,
    vllm_version: str | None = None,
    executor: str = "local",
) -> Advice:
    """The decision for an advise scenario (``specwise advise``): enable, enable below a load, measure first or
    disable, with the ranked candidates, their rule checks and the ``vllm serve`` command.

    ``profiles`` / ``benches`` are ``specwise profile`` / ``specwise bench`` (or ``vllm bench serve``) result
    files whose measured acceptance replaces the assumed one; ``host`` is what the serve command binds;
    ``vllm_version`` (e.g. ``"0.20"``) writes the config in the form that vLLM version takes; ``executor`` is
    ``--executor``'s ``local``, ``ray`` or ``ray:ADDRESS`` (``processes``: the local pool's size).

    >>> import specwise
    >>> advice = specwise.advise("example:advise/draft-does-not-fit")
    >>> advice.decision
    'disable'
    >>> [(c.candidate, c.verdict) for c in advice.candidates]
    [('draft_model:meta-llama/Llama-3.1-8B-Instruct', 'does_not_fit'), ('ngram', 'disable')]
    """
    from specwise.advisor.decision import advise as _advise
    from specwise.executors import open_executor, parse_executor

    inputs = _advise_inputs(scenario)
    with open_executor(parse_executor(executor), processes) as on:
        return _advise(
            inputs,
            [Path(p) for p in profiles],
            [Path(p) for p in benches],
            host=host,
            engine_version=vllm_version,
            executor=on,
        )


def simulate(
    scenario: ScenarioSource,
    *,
    num_requests: int | None = None,
    metric: str | None = None,
    processes: int | None = None,
    executor: str = "local",
) -> SweepResult:
    """The QPS x k sweep of a simulate scenario (``specwise simulate``): latencies with and without speculation,
    the best k per load and the crossover load where speculation stops paying; the cells on ``executor``
    (``local``, ``ray`` or ``ray:ADDRESS``, as ``--executor``; ``processes``: the local pool's size).

    >>> import specwise
    >>> sweep = specwise.simulate("example:llama70b-ngram", num_requests=100, processes=1)
    >>> sweep.method, sweep.qps
    ('ngram', (0.5, 1.0, 2.0, 4.0, 8.0, 16.0))
    >>> all(sweep.best_speedup_by_qps[q] > 1.0 for q in sweep.qps)
    True
    """
    from specwise.executors import open_executor, parse_executor
    from specwise.study.decide import decide
    from specwise.study.sweep import run_sweep

    sc = _scenario(scenario, num_requests, metric)
    with open_executor(parse_executor(executor), processes) as on:
        return decide(sc, run_sweep(sc, on))


def plan_memory(
    target: str,
    gpu: str,
    *,
    draft: str | None = None,
    tp: int = 1,
    max_model_len: int | None = None,
    quantization: str = "auto",
    kv_cache_dtype: str = "auto",
    gpu_memory_utilization: float = 0.9,
    **request: Any,
) -> MemoryPlan:
    """Do the target (and draft) fit on these GPUs, with how much KV cache (``specwise plan-memory``).

    ``target`` / ``draft`` are catalog ids or local paths (``draft`` also ``ngram``, ``suffix``, ``mtp``);
    other :class:`~specwise.memory.MemoryPlanRequest` fields (``draft_tp``, ``max_num_seqs``, ...) pass as
    keywords. A draft whose vocabulary cannot serve the target raises :class:`~specwise.errors.SpecwiseError`.

    >>> import specwise
    >>> plan = specwise.plan_memory("meta-llama/Llama-3.1-70B-Instruct", "H100-SXM-80GB", tp=4)
    >>> plan.fits, plan.kv_cache_tokens
    (True, 478464)
    >>> specwise.plan_memory("meta-llama/Llama-3.1-70B-Instruct", "H100-SXM-80GB").fits
    False
    """
    from specwise.catalog import resolve_draft, resolve_gpu, resolve_model
    from specwise.compat.pair import check_pair
    from specwise.compat.tokenizer_files import gather_tokenizer_evidence
    from specwise.errors import SpecwiseError
    from specwise.extras import available
    from specwise.memory import MemoryPlanRequest
    from specwise.memory import plan_memory as _plan

    target_spec = resolve_model(target)
    choice = None
    if draft:
        choice, trained_for = resolve_draft(draft, target_spec)
        if choice.kind == "model" and choice.spec is not None:
            ev = gather_tokenizer_evidence(target_spec.tokenizer, choice.spec.tokenizer, encode=available("tokenizers"))
            pair = check_pair(target_spec, choice.spec, tokenizer_evidence=ev, head_trained_for=trained_for)
            if not pair.compatible:
                reasons = "; ".join(f.message for f in pair.failures)
                raise SpecwiseError(f"draft {choice.spec.name} cannot serve target {target_spec.name}: {reasons}")
    return _plan(
        MemoryPlanRequest(
            target=target_spec,
            gpu=resolve_gpu(gpu),
            tp=tp,
            draft=choice,
            quantization=quantization,
            kv_cache_dtype=kv_cache_dtype,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            **request,
        )
    )


def profile(
    target: str | Path,
    draft: str | Path | None = None,
    *,
    method: str = "draft_model",
    prompts: str | Path = "builtin:chat",
    max_prompts: int | None = None,
    temperatures: Sequence[float] = (0.0, 0.5, 1.0),
    k: Sequence[int] = tuple(range(1, 9)),
    max_new_tokens: int = 128,
    threads: int | None = None,
    **settings: Any,
) -> ProfileDoc:
    """Acceptance of a real draft/target pair, or of n-gram / suffix lookup, on real prompts
    (``specwise profile``; needs ``pip install 'specwise[profile]'``: torch and transformers on the CPU).

    Other :class:`~specwise.profiler.settings.ProfileSettings` fields (``top_k``, ``quantizations``, ``seed``,
    ``prompt_lookup_min``, ...) pass as keywords.

    >>> import specwise
    >>> doc = specwise.profile("models/smollm2-135m", method="ngram", prompts="builtin:summarization",
    ...                        max_prompts=2, temperatures=(0.0,), k=(1, 4))  # doctest: +SKIP
    >>> [row.k for row in doc.results[0].by_k]  # doctest: +SKIP
    [1, 4]
    """
    from specwise.extras import require

    for module in ("torch", "transformers"):
        require(module, "profile")
    from specwise.loadgen.workload import load_prompts
    from specwise.profiler.document import build_document
    from specwise.profiler.runner import Prompt, Timings, load_pair, run_profile
    from specwise.profiler.settings import ProfileSettings
    from specwise.profiler.threads import configure_threads

    config = ProfileSettings(
        method=method,
        temperatures=tuple(float(t) for t in temperatures),
        k_values=tuple(sorted({int(x) for x in k})),
        max_new_tokens=max_new_tokens,
        **settings,
    )
    items = load_prompts(Path(prompts))[:max_prompts]
    timings = Timings()
    timings.extra["threads"] = configure_threads(threads)
    loaded = load_pair(str(target), None if draft is None else str(draft), config, len(items), timings)
    results, _continuations, _ids = run_profile(loaded, [Prompt(i.prompt, i.workload_class) for i in items], config)
    draft_name = None if draft is None else str(draft)
    return build_document(str(target), draft_name, config, str(prompts), len(items), results, timings.as_dict())


def bench(
    url: str,
    model: str,
    *,
    rates: Sequence[float] = (1.0, 4.0),
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
    ``metrics_urls``, ...) pass as keywords.

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
    from specwise.loadgen.plan import RunConfig
    from specwise.loadgen.session import execute, new_run
    from specwise.loadgen.store import ResultStore
    from specwise.loadgen.workload import load_prompts, synthetic_prompts

    items = load_prompts(Path(prompts)) if prompts else synthetic_prompts(requests_per_level, 60, 0)  # the CLI defaults
    metrics = config.pop("metrics_urls", (url.rstrip("/") + "/metrics",))
    run = RunConfig(
        url=url,
        model=model,
        prompts=tuple(items),
        rates=tuple(float(r) for r in rates),
        requests_per_level=requests_per_level,
        max_tokens=max_tokens,
        metrics_urls=tuple(metrics),
        **config,
    )
    store = ResultStore(Path(db))
    try:
        rid = run_id or uuid.uuid4().hex[:12]
        new_run(store, rid, run)
        levels = execute(store, rid, run, f"run {rid}")
    finally:
        store.close()
    return BenchDoc(run_id=rid, db=str(db), model=model, url=redact_url(url), levels=tuple(levels))
