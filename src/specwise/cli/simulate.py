"""``specwise simulate``: QPS x k sweep of a scenario in the serving simulator."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from specwise.cli.common import (
    EXIT_OK,
    add_executor_flags,
    add_json_flag,
    add_predictor_flags,
    add_wide_flag,
    bounded,
    path_arg,
    predictor_override,
    print_json,
    progress_bar,
    scenario_file,
)
from specwise.errors import CLI_FLAGS, FieldNames, SpecwiseError
from specwise.executors import open_executor
from specwise.extras import require
from specwise.fileio import check_output_dir
from specwise.report.sim import render_partial, render_sweep
from specwise.scenario import load_scenario
from specwise.scenario.build import few_requests_warning
from specwise.scenario.model import DECISION_METRICS, Scenario
from specwise.scenario.parse import MAX_NUM_REQUESTS, sets_an_slo
from specwise.study.decide import decide, partial_sweep
from specwise.study.sweep import Cell, run_sweep, sweep_jobs

requests_per_cell = bounded(int, f"an integer in 1..{MAX_NUM_REQUESTS:,}", low=1, high=MAX_NUM_REQUESTS)
"""``--num-requests`` (and the API's ``num_requests``): requests per (QPS, k) cell."""


def with_overrides(
    scenario: Scenario,
    source: object,
    requests: int | None,
    metric: str | None,
    names: FieldNames = CLI_FLAGS,
) -> Scenario:
    """The scenario with ``--num-requests`` / ``--metric`` applied (None: the scenario's own; a count too small to
    decide on is warned about, as a file's is), refused before the sweep: a metric that is not one of
    DECISION_METRICS, and goodput where no [[workload]] sets an SLO (no request could meet one, so every cell would
    score 0). ``names``: how the caller names them (the flags, or the API's arguments). A small overriding count is
    warned about as ``--num-requests N`` (the API's ``num_requests=N``), not as the file's ``[sweep].num_requests``
    (the API's result is the command's, warnings included)."""
    flag = names.name("metric")
    if requests:
        n = scenario.sweep.num_requests
        said = {few_requests_warning(n), few_requests_warning(n, names.setting("num_requests", n))}
        warnings = [w for w in scenario.warnings if w not in said]  # the file's (or an earlier override's) count
        if (few := few_requests_warning(requests, names.setting("num_requests", requests))) is not None:
            warnings.append(few)
        scenario = replace(scenario, sweep=replace(scenario.sweep, num_requests=requests), warnings=tuple(warnings))
    if metric is None:
        return scenario
    if metric not in DECISION_METRICS:
        raise SpecwiseError(f"{flag}: {metric!r} is not one of {', '.join(DECISION_METRICS)}")
    if metric == "goodput" and not sets_an_slo(scenario.classes):
        raise SpecwiseError(
            f"{flag} goodput: {source} sets no slo_ttft_s or slo_tpot_s on any [[workload]], so no request can meet one"
        )
    return replace(scenario, decision_metric=metric)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "simulate",
        help="simulate a scenario over QPS x k: speedup, best k, crossover",
        description="Simulate vLLM continuous batching with and without speculation for every (QPS, k) of a "
        "scenario TOML (see examples/). Reports latency percentiles, throughput, best k per QPS and the crossover "
        "QPS beyond which speculation loses.",
    )
    p.add_argument(
        "--scenario", required=True, type=scenario_file, metavar="FILE", help="scenario TOML file (or example:NAME)"
    )
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
    except KeyboardInterrupt:
        said = f"specwise simulate: {len(finished)} of {total} simulations had finished"
        if finished:
            partial = partial_sweep(scenario, finished, total)
            if args.json:
                print_json(partial.to_json())
            else:
                render_partial(partial, wide=args.wide)
            said += "; they are on standard output, marked partial"
        print(said, file=sys.stderr)
        raise


def run(args: argparse.Namespace) -> int:
    if args.plot:
        require("matplotlib", "--plot")  # before the sweep, as the destination check
        check_output_dir(args.plot)  # before the sweep: a bad destination must not cost the run
    scenario = load_scenario(args.scenario, predictor_override(args))
    scenario = with_overrides(scenario, args.scenario, args.num_requests, args.metric)
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
