"""Calibrate from a ``specwise bench --launch`` run kept in the results database (I/O edge: reads the store)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from specwise.calibration.check import prediction_rows
from specwise.calibration.fit import ConfigRun, LevelRun, fit
from specwise.contracts.bench import SpeculativeSetting
from specwise.contracts.calibration import CalibratedConfig, CalibrationDoc, StepLaw
from specwise.engines import get_engine
from specwise.engines.base import calibration_refusal
from specwise.errors import SpecwiseError
from specwise.loadgen.launcher import load_launch_file
from specwise.loadgen.plan import LaunchInfo, RunConfig, plan_steps
from specwise.loadgen.records import RequestRecord, summarize_level
from specwise.loadgen.runner import level_spec_decode
from specwise.loadgen.store import ResultStore
from specwise.perfmodel.profiles import LEGACY_OVERHEAD, EngineOverhead
from specwise.sim.engine import EngineConfig

KV_CAPACITY_TOKENS = 10_000_000  # bench levels are far from the CPU engine's KV limit; preemption is not modelled


def _flag(args: tuple[str, ...], name: str, default: int) -> int:
    for i, a in enumerate(args):
        try:
            if a == name and i + 1 < len(args):
                return int(args[i + 1])
            if a.startswith(name + "="):
                return int(a.split("=", 1)[1])
        except ValueError:
            raise SpecwiseError(f"server argument {name}: not an integer in {' '.join(args)!r}") from None
    return default


# the flags that set the server's tensor parallelism (default 1): vLLM's ``--tensor-parallel-size`` / ``-tp``
# (vllm/engine/arg_utils.py), SGLang's ``--tensor-parallel-size`` / ``--tp-size`` (sglang/srt/server_args.py);
# llama.cpp splits layers, not tensors, so it records none
TP_FLAGS = {"vllm": ("--tensor-parallel-size", "-tp"), "sglang": ("--tensor-parallel-size", "--tp-size")}


def tensor_parallel_size(engine: str, server_args: tuple[str, ...]) -> int | None:
    """The tensor parallelism ``server_args`` start ``engine`` with (None: an engine without it)."""
    flags = TP_FLAGS.get(engine)
    if flags is None:
        return None
    given = [v for v in (_flag(server_args, flag, 0) for flag in flags) if v]
    return given[0] if given else 1


DEFAULT_MAX_NUM_SEQS = 256
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192


def engine_limits(max_num_seqs: int, max_num_batched_tokens: int) -> EngineConfig:
    """The simulated engine with these batch limits (the fitted constant holds the per-step overhead, so none is
    added)."""
    return EngineConfig(
        kv_capacity_tokens=KV_CAPACITY_TOKENS,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        overhead=EngineOverhead(base_s=0.0, rejection_fraction=LEGACY_OVERHEAD.rejection_fraction),
    )


def engine_config(server_args: tuple[str, ...]) -> EngineConfig:
    """The simulated engine's batch limits from the ``vllm serve`` flags."""
    return engine_limits(
        _flag(server_args, "--max-num-seqs", DEFAULT_MAX_NUM_SEQS),
        _flag(server_args, "--max-num-batched-tokens", DEFAULT_MAX_NUM_BATCHED_TOKENS),
    )


def check_calibratable(launch_path: Path) -> None:
    """Refuse ``--calibrate`` of a launch file whose engine gives no calibration (:func:`calibration_refusal`) before
    any server starts: the fit would fail only after every level had run."""
    engine = load_launch_file(launch_path).engine
    why = calibration_refusal(get_engine(engine))
    if why is not None:
        raise SpecwiseError(
            f"--calibrate: launch file {launch_path} (engine = {engine!r}): {why}; run it without --calibrate "
            "(its A/B table still gives the measured speedups)"
        )


def config_runs(store: ResultStore, base_id: str) -> tuple[list[ConfigRun], list[LaunchInfo]]:
    launched = store.launch_runs(base_id)
    if not launched:
        raise SpecwiseError(f"{store.path}: no --launch run {base_id!r} (its runs are named {base_id}-CONFIG)")
    runs = []
    infos = []
    for run_id, stored in launched:
        config = RunConfig.from_json(stored)
        assert config.launch is not None
        why = calibration_refusal(get_engine(config.launch.engine))
        if why is not None:
            raise SpecwiseError(f"{store.path}: run {run_id} ran {config.launch.engine}: {why}")
        infos.append(config.launch)
        spec = config.launch.speculative_config or {}
        by_level: dict[int, list[RequestRecord]] = {}
        for record in store.records(run_id):
            by_level.setdefault(record.level, []).append(record)
        levels = []
        for level, records in sorted(by_level.items()):
            reading, _ = level_spec_decode(store, run_id, level, [])
            counts = reading.counts if reading else None
            if spec and counts is None:  # else fitted as one query token per sequence and no acceptance
                raise SpecwiseError(
                    f"{store.path}: run {run_id}, level {level}: the server's /metrics gave no spec_decode counts "
                    "(unreadable, or not vLLM's); calibrate needs them to know the tokens per step -- re-run with "
                    "the server's /metrics reachable (bench reads it before and after each level)"
                )
            rate, concurrency = _load(config, level)
            levels.append(
                LevelRun(
                    level=level,
                    rate_per_s=rate,
                    concurrency=concurrency,
                    records=tuple(records),
                    drafts=counts.drafts if counts else None,
                    draft_tokens=counts.draft_tokens if counts else None,
                    per_position=counts.per_position_rates if counts else (),
                    measured_tpot_p50_s=summarize_level(records, level, None).tpot_s.p50,
                )
            )
        setting = SpeculativeSetting.of(spec)
        runs.append(ConfigRun(config.launch.name, setting.method, setting.k, tuple(levels)))
    return runs, infos


def _load(config: RunConfig, level: int) -> tuple[float | None, int | None]:
    """The level's (request rate, concurrency) as the run planned them (:func:`plan_steps`)."""
    steps = plan_steps(config)
    rate, concurrency = steps[level] if level < len(steps) else (None, None)
    return (None if rate is None else float(rate)), concurrency


def fitted_doc(run_id: str, runs: list[ConfigRun], engine: EngineConfig | Mapping[str, EngineConfig]) -> CalibrationDoc:
    """The step-time law fitted to ``runs`` (the first is the baseline) and each level replayed through the
    simulator, on ``engine`` (or each run on its own: ``{run name: engine}``); the caller adds where the runs came
    from (configs, engine, hardware, target)."""
    cal = fit(runs)
    t = cal.target
    error = cal.relative_rms_error()
    if not (error is None or 0.0 <= error < 1.0):  # the reader refuses such a file (review s47d F4): say so here
        raise SpecwiseError(
            f"calibration: the fitted law misses the measured steps by {error:.0%} RMS of the mean step (at 100% or "
            "more it is no fit): the runs' step times are too scattered (stalls, another load on the server?); "
            "rerun on a quiet server"
        )
    return CalibrationDoc(
        run_id=run_id,
        law=StepLaw(t.per_kv_token_s, t.per_batched_token_s, t.constant_s, t.free_batched_tokens),
        fit_points=cal.fit_points,
        fit_relative_rms_error=error,
        outlier_steps=cal.outlier_steps,
        draft_cost_scale=cal.draft_scale,
        points=cal.points,
        rows=tuple(prediction_rows(cal, runs, engine)),
        base_config=runs[0].name,
    )


def calibrate(store: ResultStore, base_id: str) -> CalibrationDoc:
    """The fitted step-time law, draft scales, and per-level prediction error of a launch run."""
    runs, infos = config_runs(store, base_id)
    if not infos[0].model:  # the reader refuses a calibration without its target (contracts.calibration)
        raise SpecwiseError(
            f"{store.path}: run {base_id} does not record the model its server served (stored by an older "
            "specwise?), and a calibration must name the model it measured: re-run it with specwise bench --launch "
            "FILE --calibrate"
        )
    # each configuration replayed with its own server's batch limits (review s47d F3: the last one's, for all)
    engines = {info.name: engine_config(info.server_args) for info in infos}
    return replace(
        fitted_doc(base_id, runs, engines),
        configs=tuple(
            CalibratedConfig(info.name, setting.method, setting.draft, run.k)
            for info, run in zip(infos, runs, strict=True)
            for setting in (SpeculativeSetting.of(info.speculative_config),)
        ),
        engine=infos[0].engine,
        engine_version=next((i.engine_version for i in infos if i.engine_version), None),
        hardware=infos[0].hardware,
        tensor_parallel_size=_one_tp(infos),
        target=infos[0].model,
    )


def _one_tp(infos: list[LaunchInfo]) -> int | None:
    """The tensor parallelism every configuration ran at (None: they differ, or the engine has none)."""
    sizes = {tensor_parallel_size(i.engine, i.server_args) for i in infos}
    return sizes.pop() if len(sizes) == 1 else None
