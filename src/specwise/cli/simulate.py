"""``specwise simulate``: QPS x k sweep of a scenario in the serving simulator."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from specwise.cli.common import (
    EXIT_OK,
    StopSaid,
    add_executor_flags,
    add_json_flag,
    add_predictor_flags,
    add_scenario_arg,
    add_wide_flag,
    argparse_type,
    path_arg,
    predictor_override,
    print_json,
    progress_bar,
    stop_word,
)
from specwise.errors import SpecwiseError
from specwise.executors import open_executor
from specwise.extras import require
from specwise.fileio import check_output_dir
from specwise.report.sim import render_partial, render_sweep
from specwise.scenario import load_scenario, overrides
from specwise.scenario.model import DECISION_METRICS, Scenario
from specwise.study.decide import decide, partial_sweep
from specwise.study.sweep import Cell, run_sweep, sweep_jobs

requests_per_cell = argparse_type(overrides.requests_per_cell)
"""``--num-requests``: requests per (QPS, k) cell (:data:`specwise.scenario.overrides.requests_per_cell`)."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "simulate",
        help="simulate a scenario over QPS x k: speedup, best k, crossover",
        description="Simulate vLLM continuous batching with and without speculation for every (QPS, k) of a "
        "scenario TOML (see examples/). Reports latency percentiles, throughput, best k per QPS and the crossover "
        "QPS beyond which speculation loses. Exit status: 0 simulated, 1 vLLM would not start the deployment (the "
        "draft does not fit or cannot serve the target), 2 bad input, 3 internal error.",
    )
    add_scenario_arg(p, "scenario TOML file")
    p.add_argument("--plot", type=path_arg, metavar="DIR", help="write speedup and latency plots (PNG + SVG) here")
    p.add_argument(
        "--num-requests",
        type=requests_per_cell,
        help="override [sweep].num_requests",
    )
    p.add_argument(
        "--metric",
        choices=DECISION_METRICS,
        help="judge best k and the crossover on this speedup (default: [sweep].decision_metric or e2e)",
    )
    add_executor_flags(p)
    add_predictor_flags(p)
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def _sweep(scenario: Scenario, args: argparse.Namespace) -> list[Cell]:
    """Every cell, with a progress bar; interrupted (Ctrl-C, SIGTERM), the cells that finished are printed, marked
    partial, before the interrupt goes on to its exit code (130, 143): nothing finished is lost."""
    total = len(sweep_jobs(scenario))
    finished: list[Cell] = []
    try:
        with open_executor(args.executor, args.processes) as executor, progress_bar(disable=args.json) as bar:
            task = bar.add_task("simulating", total=total)

            def tick(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            return run_sweep(scenario, executor, progress=tick, into=finished)
    except KeyboardInterrupt as exc:
        said = f"specwise simulate: {stop_word(exc)}: {len(finished)} of {total} simulations had finished"
        if finished:
            partial = partial_sweep(scenario, finished, total)
            if args.json:
                print_json(partial.to_json())
            else:
                render_partial(partial, wide=args.wide)
            said += "; they are on standard output, marked partial"
        print(said, file=sys.stderr)
        raise StopSaid from exc


def run(args: argparse.Namespace) -> int:
    if args.plot:
        require("matplotlib", "--plot")  # before the sweep, as the destination check
        check_output_dir(args.plot)  # before the sweep: a bad destination must not cost the run
    scenario = load_scenario(args.scenario, predictor_override(args))
    scenario = overrides.with_overrides(scenario, args.scenario, args.num_requests, args.metric)
    cells = _sweep(scenario, args)
    result = decide(scenario, cells)
    plots: list[Path] = []
    failed: str | None = None
    if args.plot:
        from specwise.report.plots import plot_sweep

        try:
            plots = plot_sweep(result, args.plot)
        except SpecwiseError as exc:  # the results are still printed; the exit code says the plots failed
            failed = str(exc)
    if args.json:
        doc = result.to_json()
        if plots:
            doc["plots"] = [str(p) for p in plots]
        print_json(doc)
    else:
        render_sweep(result, wide=args.wide)
        for path in plots:
            print(f"wrote {path}")
    if failed is not None:
        raise SpecwiseError(f"--plot: {failed} (the results above are complete)")
    return EXIT_OK
