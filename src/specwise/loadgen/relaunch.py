"""Finishing an interrupted ``--launch`` run (``bench --launch FILE --resume BASE``).

A launched server stops with the bench that started it, so its stored URL (a random port on 127.0.0.1) is dead
after an interruption -- and whatever listens there later is not that server. Resuming a launch run therefore
starts each unfinished configuration's server again (a fresh port), sends only the requests its run has no record
of, and reads the finished configurations' results from the database without starting anything. A configuration
the interrupted run never reached starts as ``--launch`` would have started it, with the run's stored settings.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from specwise.contracts.bench import BenchConfig, BenchDoc, BenchLevel
from specwise.errors import SpecwiseError
from specwise.loadgen.launcher import EngineServer, LaunchFile, ServerConfig, hardware_description
from specwise.loadgen.plan import LaunchInfo, RunConfig, plan_from_config
from specwise.loadgen.session import RunProgress, execute, new_run
from specwise.loadgen.store import ResultStore

OnWait = Callable[[str, float, str], None]


def launch_base_of(store: ResultStore, run_id: str) -> str | None:
    """The ``--launch`` run that ``run_id`` belongs to: ``run_id`` itself when it names one (its configurations are
    stored as ``run_id-NAME``), or BASE when ``run_id`` is one configuration's run ``BASE-NAME``; else None."""
    if store.has_run(run_id):  # a run of its own: a launch configuration's, or not a launch run at all
        name = (store.run_config(run_id).get("launch") or {}).get("name")
        if isinstance(name, str) and run_id.endswith("-" + name):
            return run_id.removesuffix("-" + name)
        return None
    return run_id if _configs_of(store, run_id) else None


def _configs_of(store: ResultStore, base_id: str) -> dict[str, dict[str, Any]]:
    """The stored configurations' runs of the launch run ``base_id`` (``BASE-NAME`` for configuration NAME; not
    those of a launch run named ``BASE-X``), by run id."""
    return {r: c for r, c in store.launch_runs(base_id) if r == f"{base_id}-{c['launch'].get('name')}"}


def check_new_launch(store: ResultStore, base_id: str, launch: LaunchFile) -> None:
    """A new ``--launch`` run may not take a base id whose configurations' runs already exist."""
    taken = [f"{base_id}-{c.name}" for c in launch.configs if store.has_run(f"{base_id}-{c.name}")]
    if taken:
        raise SpecwiseError(
            f"{store.path}: launch run {base_id!r} exists ({', '.join(taken)}); finish it with --launch FILE "
            f"--resume {base_id}, or give another --run-id"
        )


def resume_launch(
    launch: LaunchFile,
    launch_path: Path,
    store: ResultStore,
    db: Path,
    base_id: str,
    progress: RunProgress | None = None,
    on_wait: OnWait | None = None,
) -> BenchDoc:
    """Finish the launch run ``base_id``: each configuration of ``launch`` (the file the run started with) whose
    run has requests left is started again on a fresh port and finished; a finished one is read back."""
    stored = _configs_of(store, base_id)
    if not stored:
        bases = store.launch_bases()
        raise SpecwiseError(
            f"{db}: no --launch run {base_id!r} to resume; the launch runs here: " + (", ".join(bases[-8:]) or "none")
        )
    ours = {f"{base_id}-{c.name}" for c in launch.configs}
    if other := [r for r in stored if r not in ours]:
        raise SpecwiseError(
            f"launch run {base_id!r} ran {', '.join(other)}, which {launch_path} does not list; resume it with "
            "the launch file it started with"
        )
    template = _template(RunConfig.from_json(next(iter(stored.values()))))
    hardware = hardware_description()
    configs = []
    for server_cfg in launch.configs:
        run_id = f"{base_id}-{server_cfg.name}"
        config = RunConfig.from_json(stored[run_id]) if run_id in stored else None
        if config is not None:
            _check_same(config, launch, server_cfg, launch_path, run_id)
        log = db.parent / f"{run_id}.vllm.log"
        if config is not None and not _unfinished(store, run_id, config):
            levels = execute(store, run_id, config, server_cfg.name, progress)  # nothing to send: no server
        else:
            log = db.parent / (f"{run_id}.resumed.vllm.log" if config is not None else f"{run_id}.vllm.log")
            how = (hardware, progress, on_wait)
            levels = _relaunch(launch, server_cfg, store, run_id, config or template, log, how)
        configs.append(BenchConfig(server_cfg.name, run_id, server_cfg.speculative_config, str(log), tuple(levels)))
    return BenchDoc(
        run_id=base_id,
        db=str(db),
        model=launch.model,
        configs=tuple(configs),
        temperatures=template.sent_temperatures(),
    )


def _template(config: RunConfig) -> RunConfig:
    """A stored configuration's run settings, for a configuration the interrupted run never reached."""
    return replace(config, url="", launch=None, sweep_rates=None)


def _check_same(config: RunConfig, launch: LaunchFile, server_cfg: ServerConfig, path: Path, run_id: str) -> None:
    info = config.launch
    if info is None:
        raise SpecwiseError(f"run {run_id!r} is not a --launch configuration's run; resume it with --resume {run_id}")
    ran: dict[str, Any] = {"model": info.model, "speculative_config": info.speculative_config}
    now: dict[str, Any] = {"model": launch.model, "speculative_config": server_cfg.speculative_config}
    changed = [key for key in ran if ran[key] != now[key]]
    if changed:
        raise SpecwiseError(
            f"{path}: configuration {server_cfg.name!r} is not what run {run_id!r} ran ({', '.join(changed)} "
            f"differ: {ran[changed[0]]!r} then, {now[changed[0]]!r} now); resume with the launch file it started with"
        )


def _unfinished(store: ResultStore, run_id: str, config: RunConfig) -> bool:
    """Whether the run has requests without a record (a sweep whose rates are not known yet has)."""
    if config.sweep and config.sweep_rates is None:
        return True
    planned = {r.request_id for lp in plan_from_config(config).levels for r in lp.requests}
    return not planned <= store.done_ids(run_id)


def _relaunch(
    launch: LaunchFile,
    server_cfg: ServerConfig,
    store: ResultStore,
    run_id: str,
    config: RunConfig,
    log: Path,
    how: tuple[str, RunProgress | None, OnWait | None],
) -> list[BenchLevel]:
    """Start the configuration's server on a fresh port and finish its run there (the stored URL is never used)."""
    hardware, progress, on_wait = how
    waiting = functools.partial(on_wait, server_cfg.name) if on_wait is not None else None
    server = EngineServer(launch, server_cfg, log, waiting)
    with server as url:
        if config.launch is None:  # never reached before: a new run, as --launch makes it
            info = LaunchInfo(
                server_cfg.name,
                server_cfg.speculative_config,
                (*launch.extra_args, *server_cfg.extra_args),
                launch.model,
                launch.engine,
                server.version,
                hardware,
            )
            config = config.with_launch(url, launch.served_model_name, info)
            new_run(store, run_id, config)
        else:
            metrics = (url.rstrip("/") + "/metrics",) if config.metrics_urls else ()
            version = server.version or config.launch.engine_version
            info = replace(config.launch, engine_version=version)
            config = replace(config, url=url, metrics_urls=metrics, launch=info)
            store.update_config(run_id, config.redacted().to_json())
        return execute(store, run_id, config, server_cfg.name, progress)
