"""Running bench runs end to end: a run against a server (with the sweep's probes first), and a ``--launch``
run that starts each server configuration, benches it and stops it. The CLI only parses and renders."""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from specwise.contracts.bench import BenchConfig, BenchDoc, BenchLevel
from specwise.errors import SpecwiseError
from specwise.loadgen.client import api_key_from, scrub
from specwise.loadgen.launcher import EngineServer, LaunchFile, hardware_description
from specwise.loadgen.plan import LaunchInfo, RunConfig, plan_from_config, sweep_rates
from specwise.loadgen.records import all_failed_hint, error_examples, error_hint, every_request, token_count_notes
from specwise.loadgen.runner import run_plan
from specwise.loadgen.store import ResultStore

# (label, level, requests done in the run so far, requests in the run, live acceptance rate)
RunProgress = Callable[[str, int, int, int, float | None], None]


def new_run(store: ResultStore, run_id: str, config: RunConfig, fix: str | None = None) -> None:
    """Record the run's configuration -- with any credentials in its URLs replaced by ``***``. ``fix``: what to do
    when ``run_id`` exists, in the caller's words (default: the command's flags)."""
    sent = config.api_key_sent or api_key_from(config.api_key_env) is not None
    try:
        store.create_run(run_id, time.time(), replace(config, api_key_sent=sent).redacted().to_json())
    except sqlite3.IntegrityError:
        fix = fix or f"use --resume {run_id} or another --run-id"
        raise SpecwiseError(f"{store.path}: run {run_id!r} exists; {fix}") from None


def run_levels(
    store: ResultStore, run_id: str, config: RunConfig, label: str, progress: RunProgress | None
) -> list[BenchLevel]:
    plan = plan_from_config(config)
    tick = None
    if progress is not None:
        total = sum(len(lp.requests) for lp in plan.levels)
        base = {lp.level: i * len(lp.requests) for i, lp in enumerate(plan.levels)}

        def tick(level: int, done: int, _total: int, acceptance: float | None) -> None:
            progress(label, level, base[level] + done, total, acceptance)

    return asyncio.run(run_plan(plan, store, run_id, progress=tick))


def execute(
    store: ResultStore, run_id: str, config: RunConfig, label: str, progress: RunProgress | None = None
) -> list[BenchLevel]:
    """Every level of a run (probes first for a sweep: their rates are kept so ``--resume`` reuses them), with the
    run held by this process."""
    with store.hold_run(run_id):
        if config.sweep and config.sweep_rates is None:
            probes = run_levels(store, run_id, config, f"{label} probes", progress)
            config = replace(config, sweep_rates=sweep_rates(probes[0].summary, probes[1].summary, config.sweep))
            store.update_config(run_id, config.redacted().to_json())
        results = run_levels(store, run_id, config, label, progress)
        store.set_status(run_id, "complete")
    return results


def launch_all(
    launch: LaunchFile,
    template: RunConfig,
    store: ResultStore,
    db: Path,
    base_id: str | None,
    progress: RunProgress | None = None,
    on_start: Callable[[str, Path], None] | None = None,
    on_wait: Callable[[str, float, str], None] | None = None,
) -> BenchDoc:
    """Start each configuration of the launch file on loopback, bench it with the same requests, stop it.
    ``on_wait(config name, elapsed_s, last log line)`` reports each server's start-up as it goes."""
    base_id = base_id or uuid.uuid4().hex[:8]
    hardware = hardware_description()
    configs = []
    for server_cfg in launch.configs:
        run_id = f"{base_id}-{server_cfg.name}"
        log = db.parent / f"{run_id}.vllm.log"
        if on_start is not None:
            on_start(server_cfg.name, log)
        waiting = None
        if on_wait is not None:
            waiting = functools.partial(on_wait, server_cfg.name)
        server = EngineServer(launch, server_cfg, log, waiting)
        with server as url:
            info = LaunchInfo(
                server_cfg.name,
                server_cfg.speculative_config,
                (*launch.extra_args, *server_cfg.extra_args),
                launch.model,
                launch.engine,
                server.version,
                hardware,
            )
            config = template.with_launch(url, launch.served_model_name, info)
            new_run(store, run_id, config)
            levels = execute(store, run_id, config, server_cfg.name, progress)
        configs.append(BenchConfig(server_cfg.name, run_id, server_cfg.speculative_config, str(log), tuple(levels)))
    return BenchDoc(
        run_id=base_id,
        db=str(db),
        model=launch.model,
        configs=tuple(configs),
        temperatures=template.sent_temperatures(),
    )


DEFAULT_KEY_ENV = "OPENAI_API_KEY"  # RunConfig's, and bench's without --api-key-env


def stored_key_env(store: ResultStore, run_id: str) -> str:
    """The variable a stored run read its API key from ('' : none); the default for records without a stored run
    (a plan run directly)."""
    try:
        return str(store.run_config(run_id).get("api_key_env", DEFAULT_KEY_ENV))
    except SpecwiseError:
        return DEFAULT_KEY_ENV


def stored_notes(db: Path, run_ids: Sequence[str], key_env: str | None = None) -> list[str]:
    """What only a run's stored records tell, for the lines under its table: how tokens were counted when the server
    sent no per-chunk usage, and the first error of each kind of failure (the server's body, secrets masked) with
    what to change for a refused key or an unknown model (naming ``key_env``, else the variable the run stored).
    Nothing when ``db`` is not there or cannot be read."""
    if not db.is_file():
        return []
    try:
        store = ResultStore(db)
    except SpecwiseError:
        return []
    lines: list[str] = []
    try:
        for run_id in run_ids:
            records = store.records(run_id)
            run_key_env = stored_key_env(store, run_id) if key_env is None else key_env
            lines += token_count_notes(records)
            for kind, error in error_examples(records).items():
                detail = error.split(":", 1)[1].strip() if ":" in error else error
                lines.append(f"first {kind} failure: {scrub(detail)}")  # masked again: records kept by older versions
                hint = error_hint(kind, run_key_env)
                if hint is not None:
                    lines.append(f"  {hint}")
    except sqlite3.Error:
        return lines
    finally:
        store.close()
    return lines


def all_failed(
    doc: BenchDoc,
    url: str = "--url",
    model: str = "--model",
    timeout: str = "--request-timeout",
    key_env: str | None = DEFAULT_KEY_ENV,
) -> str | None:
    """``all N requests failed (what failed); what to check`` when no request of the run succeeded, else None:
    every one timed out (raise the ``timeout``: a slow server or configuration), was refused (set the variable
    ``key_env`` the key was read from) or something else (an unreachable server, a wrong model name: check ``url``
    and ``model``). The names are the caller's (flags, or the API's arguments)."""
    levels = [lv for c in doc.configs for lv in c.levels] if doc.configs else list(doc.levels)
    sent = sum(lv.summary.requests for lv in levels)
    if not sent or any(lv.summary.requests != lv.summary.failed for lv in levels):
        return None
    errors: dict[str, int] = {}
    for lv in levels:
        for kind, n in lv.summary.errors.items():
            errors[kind] = errors.get(kind, 0) + n
    detail = ", ".join(f"{n} {kind}" for kind, n in sorted(errors.items(), key=lambda kv: -kv[1]))
    if doc.url and "@" in doc.url:  # the URL carried credentials (masked): they are what a 401 refused
        url = doc.url
    return f"{every_request(sent)} failed ({detail}); {all_failed_hint(errors, url, model, timeout, key_env)}"
