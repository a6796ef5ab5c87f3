"""``specwise advise``: should I enable speculative decoding, with which method, draft and k, up to which load,
and what do I paste into ``vllm serve``?"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

from specwise import values
from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs
from specwise.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
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
    stage_progress,
)
from specwise.engines import vllm_versions
from specwise.engines.base import LOOPBACK
from specwise.errors import SpecwiseError
from specwise.executors import open_executor
from specwise.extras import require
from specwise.fileio import check_output_file
from specwise.scenario.toml_loader import override_note, with_predictor


def register(sub: Any) -> None:
    p = sub.add_parser(
        "advise",
        help="decide: enable speculation? which method, draft and k, up to which QPS, and the vLLM command",
        description="Rank candidate speculation methods for a scenario (memory plan, simulated speedup vs QPS, "
        "practitioner rule checks) and print the decision with a valid --speculative-config. Works offline; "
        "acceptance comes from --bench (measured) or --profile (profiled) when given, else from documented priors "
        "(flagged as ASSUMED). See examples/advise/. Exit status: 0 enable / enable below a load / measure first, "
        "1 do not enable (speculation loses, the deployment cannot keep up, no candidate fits or runs on this "
        "vLLM), 2 bad input, 3 internal error.",
    )
    add_scenario_arg(p, "advise scenario TOML")
    p.add_argument(
        "--profile",
        action="append",
        default=[],
        type=path_arg,
        metavar="PROFILE.json",
        help="a specwise profile result (repeatable); matched to candidates by method and draft",
    )
    p.add_argument(
        "--bench",
        action="append",
        default=[],
        type=path_arg,
        metavar="BENCH.json",
        help="measured acceptance, which wins over all else (repeatable): a specwise bench result, or a "
        "'vllm bench serve --save-result' JSON (save it with --metadata speculative_config='<the JSON of vllm "
        "serve --speculative-config>' to say which method it measured; without it the file stands for the "
        "scenario's only candidate)",
    )
    p.add_argument("--report", type=path_arg, metavar="OUT.html", help="write the self-contained HTML report")
    p.add_argument(
        "--write-launch",
        type=path_arg,
        metavar="FILE.toml",
        help="when the decision is 'measure first': write the bench launch file that measures it here",
    )
    p.add_argument(
        "--host",
        type=host_address,
        default=LOOPBACK,
        help=f"the address the generated 'vllm serve' command binds (default {LOOPBACK}: this machine only; "
        "0.0.0.0 to serve other machines, e.g. in a Kubernetes pod)",
    )
    p.add_argument(
        "--vllm-version",
        type=vllm_version_text,
        metavar="X.Y",
        help="the vLLM version the config is for, and simulated (default: the scenario's "
        "[deployment].engine_version if 0.8.2 or later, else the current one, said in a note): 0.24+ takes the "
        "k-by-batch-size schedule as num_speculative_tokens_per_batch_size; 0.10-0.23 have none (static k, the "
        "schedule as a note); 0.8.2-0.9 only disable_by_batch_size (V0 engine); before 0.8.2 is refused (no "
        "--speculative-config). A separate draft model runs on 0.15+ (at the target's TP) and before 0.10 (V0), "
        "not on 0.10-0.14",
    )
    add_executor_flags(p)
    add_predictor_flags(p)
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


host_address = argparse_type(values.host_address)
"""``--host``: :func:`specwise.values.host_address`."""
vllm_version_text = argparse_type(vllm_versions.vllm_version_text)
"""``--vllm-version``: :func:`specwise.engines.vllm_versions.vllm_version_text`."""


def run(args: argparse.Namespace) -> int:
    inputs = load_inputs(args.scenario)
    choice = predictor_override(args)
    if choice is not None:
        note = override_note(inputs.deployment, choice)
        notes = (*inputs.notes, note) if note else inputs.notes
        inputs = replace(inputs, deployment=with_predictor(inputs.deployment, choice), notes=notes)
    reads = [("--scenario", args.scenario), ("--calibration", args.calibration)]
    reads += [("--profile", p) for p in args.profile] + [("--bench", b) for b in args.bench]
    for path in (args.report, args.write_launch):
        if path is not None:
            check_output_file(path, reads)  # before the simulations, as bench and profile check theirs
    if args.report:
        if args.report.suffix.lower() not in (".html", ".htm"):
            raise SpecwiseError(f"--report {args.report}: the report is HTML; give a .html file name")
        require("matplotlib", "--report")
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with open_executor(args.executor, args.processes) as executor, progress_bar(*columns, disable=args.json) as bar:
        doc = advise(
            inputs,
            args.profile,
            args.bench,
            progress=stage_progress(bar),
            host=args.host,
            engine_version=args.vllm_version,
            executor=executor,
            launch_file=str(args.write_launch) if args.write_launch else None,
        )
    if args.write_launch:
        if doc.measure is not None:
            from specwise.fileio import write_text_atomic

            write_text_atomic(args.write_launch, doc.measure.launch_toml)
            print(f"wrote {args.write_launch}", file=sys.stderr)
        else:
            skipped = f"--write-launch: nothing written; the decision is {doc.decision}, not measure first"
            print(skipped, file=sys.stderr)
    if args.report:
        from specwise.report.advise_html import write_report

        write_report(doc, args.report)
        doc = replace(doc, report=str(args.report))
    if args.json:
        print_json(doc.to_json())
    else:
        from specwise.report.advise import render_advise

        written = args.write_launch if args.write_launch and doc.measure is not None else None
        render_advise(doc, wide=args.wide, launch_written=written)
        if args.report:
            print(f"report: {args.report}")
    # "do not enable" is the answer no, and so is "nothing proposed runs on this engine"
    return EXIT_NEGATIVE if doc.negative else EXIT_OK
