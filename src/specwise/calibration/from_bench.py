"""Calibrate from a ``specwise bench --launch`` run kept in the results database (I/O edge: reads the store)."""

from __future__ import annotations

from typing import Any

from specwise.calibration.check import prediction_rows
from specwise.calibration.fit import ConfigRun, LevelRun, fit
from specwise.errors import SpecwiseError
from specwise.loadgen.records import RequestRecord, summarize_level
from specwise.loadgen.runner import level_spec_decode
from specwise.loadgen.store import ResultStore
from specwise.sim.engine import EngineConfig

KV_CAPACITY_TOKENS = 10_000_000  # bench levels are far from the CPU engine's KV limit; preemption is not modelled


def _flag(args: list[str], name: str, default: int) -> int:
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return int(args[i + 1])
        if a.startswith(name + "="):
            return int(a.split("=", 1)[1])
    return default


def engine_config(server_args: list[str]) -> EngineConfig:
    """The simulated engine's batch limits from the ``vllm serve`` flags (the fitted constant holds the per-step
    overhead, so none is added)."""
    return EngineConfig(
        kv_capacity_tokens=KV_CAPACITY_TOKENS,
        max_num_seqs=_flag(server_args, "--max-num-seqs", 256),
        max_num_batched_tokens=_flag(server_args, "--max-num-batched-tokens", 8192),
        step_overhead_s=0.0,
    )


def config_runs(store: ResultStore, base_id: str) -> tuple[list[ConfigRun], list[str]]:
    launched = store.launch_runs(base_id)
    if not launched:
        raise SpecwiseError(f"{store.path}: no --launch run {base_id!r} (its runs are named {base_id}-CONFIG)")
    runs = []
    server_args: list[str] = []
    for run_id, config in launched:
        spec = config["launch"].get("speculative_config") or {}
        server_args = list(config["launch"].get("server_args", []))
        levels = []
        by_level: dict[int, list[RequestRecord]] = {}
        for record in store.records(run_id):
            by_level.setdefault(record.level, []).append(record)
        for level, records in sorted(by_level.items()):
            summary = summarize_level(records, level, None)
            stats, _ = level_spec_decode(store, run_id, level, [])
            stats = stats or {}
            levels.append(
                LevelRun(
                    level=level,
                    rate_per_s=_rate(config, level),
                    records=tuple(records),
                    drafts=stats.get("spec_decode_num_drafts"),
                    draft_tokens=stats.get("spec_decode_draft_tokens"),
                    per_position=tuple(stats.get("spec_decode_per_position_acceptance_rates") or ()),
                    measured_tpot_p50_s=summary.tpot_s.p50,
                )
            )
        k = int(spec.get("num_speculative_tokens", 0)) if spec else 0
        runs.append(ConfigRun(config["launch"]["name"], spec.get("method") if spec else None, k, tuple(levels)))
    return runs, server_args


def _rate(config: dict[str, Any], level: int) -> float | None:
    rates = config.get("rates") or []
    if config.get("concurrency") or config.get("sweep"):
        return None
    return float(rates[level]) if level < len(rates) else None


def calibrate(store: ResultStore, base_id: str) -> dict[str, Any]:
    """The calibration section of the bench JSON: fitted predictor, draft scales, per-level prediction error."""
    runs, server_args = config_runs(store, base_id)
    cal = fit(runs)
    rows = prediction_rows(cal, runs, engine_config(server_args))
    errors = [abs(r["speedup_error"]) for r in rows if r["speedup_error"] is not None and r["config"] != runs[0].name]
    return {
        "run_id": base_id,
        "predictor": {
            "form": "t = per_kv_token_s * kv_tokens + per_batched_token_s * max(batched_tokens - "
            "free_batched_tokens, 0) + constant_s",
            "free_batched_tokens": cal.target.free_batched_tokens,
            "per_kv_token_s": cal.target.per_kv_token_s,
            "per_batched_token_s": cal.target.per_batched_token_s,
            "constant_s": cal.target.constant_s,
            "fit_points": cal.fit_points,
            "fit_relative_rms_error": cal.relative_rms_error(),
        },
        "draft_cost_scale": cal.draft_scale,
        "points": [vars(p) for p in cal.points],
        "rows": rows,
        "mean_abs_speedup_error": sum(errors) / len(errors) if errors else None,
        "max_abs_speedup_error": max(errors) if errors else None,
    }
