"""``specwise calibrate``: fit the simulator's step-time law to ``vllm bench serve --save-detailed`` results."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from specwise.calibration.from_bench import DEFAULT_MAX_NUM_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS
from specwise.calibration.from_vllm import VllmCalibrationInput, calibrate_vllm
from specwise.cli.common import EXIT_OK, add_json_flag, add_wide_flag, bounded, path_arg, print_json
from specwise.contracts.calibration import CalibrationDoc, is_calibration_text
from specwise.contracts.document import json_safe
from specwise.engines.vllm_versions import VllmVersion
from specwise.errors import SpecwiseError
from specwise.fileio import check_output_file, refuse_a_foreign_file, write_json_atomic
from specwise.report.bench import render_calibration
from specwise.report.console import console
from specwise.sim.scheduler import MAX_NUM_BATCHED_TOKENS_LIMIT, MAX_NUM_SEQS_LIMIT


def register(sub: Any) -> None:
    p = sub.add_parser(
        "calibrate",
        help="fit the simulator's step time to vllm bench serve --save-result --save-detailed files",
        description="Calibrate from vllm bench serve results saved with --save-result --save-detailed: a run "
        "without speculation and one per speculative config (--metadata speculative_config='{...}'), at one or more "
        "--request-rate, in separate files or appended to one (--append-result). Each request's chunk arrival times "
        "(start + ttft + itls) give the engine steps the step-time law is fitted to. Server settings the files do "
        "not record are taken from the flags (vLLM's defaults otherwise) and recorded as assumed. "
        "specwise bench --launch FILE --calibrate calibrates from specwise's own runs.",
    )
    p.add_argument("results", nargs="+", type=path_arg, metavar="RESULT.json", help="vllm bench serve result files")
    p.add_argument(
        "--out",
        type=path_arg,
        required=True,
        help="calibration file to write (for --calibration); - prints it on stdout instead (the table is not shown)",
    )
    p.add_argument(
        "--max-num-seqs",
        type=bounded(int, f"an integer in 1..{MAX_NUM_SEQS_LIMIT:,}", low=1, high=MAX_NUM_SEQS_LIMIT),
        help=f"the server's (default {DEFAULT_MAX_NUM_SEQS}; at most {MAX_NUM_SEQS_LIMIT:,})",
    )
    p.add_argument(
        "--max-num-batched-tokens",
        type=bounded(
            int, f"an integer in 1..{MAX_NUM_BATCHED_TOKENS_LIMIT:,}", low=1, high=MAX_NUM_BATCHED_TOKENS_LIMIT
        ),
        help=f"the server's (default {DEFAULT_MAX_NUM_BATCHED_TOKENS}; at least --max-num-seqs)",
    )
    p.add_argument(
        "--engine-version",
        type=engine_version_text,
        metavar="VERSION",
        help="the server's vLLM version, e.g. 0.32.0 (the result files do not record it)",
    )
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def _input(args: argparse.Namespace) -> VllmCalibrationInput:
    given = {"max_num_seqs": args.max_num_seqs, "max_num_batched_tokens": args.max_num_batched_tokens}
    return VllmCalibrationInput(
        paths=tuple(args.results),
        max_num_seqs=args.max_num_seqs or DEFAULT_MAX_NUM_SEQS,
        max_num_batched_tokens=args.max_num_batched_tokens or DEFAULT_MAX_NUM_BATCHED_TOKENS,
        engine_version=args.engine_version,
        assumed=tuple(k for k, v in given.items() if v is None),
    )


def assumptions_text(cal: CalibrationDoc, request: VllmCalibrationInput) -> str:
    """What the calibration took as given: the target, the engine version and the batch limits (each marked
    assumed when neither the files nor the flags gave it)."""
    version = cal.engine_version or "unknown (not in the result files; give --engine-version)"
    limits = ", ".join(
        f"{name} {value} "
        + (f"(assumed: vLLM's default; give --{name.replace('_', '-')})" if name in request.assumed else "(given)")
        for name, value in (
            ("max_num_seqs", request.max_num_seqs),
            ("max_num_batched_tokens", request.max_num_batched_tokens),
        )
    )
    return f"target: {cal.target}; vLLM version: {version}; {limits}"


def render(cal: CalibrationDoc, request: VllmCalibrationInput, path: Path, wide: bool = False) -> None:
    """The calibration table (with each proposer's fitted cost in the shape :func:`specwise.calibration.fit.fit`
    charges it: a lookup method has no draft pass), preceded by what was assumed."""
    out = console()
    out.print(assumptions_text(cal, request))
    for line in cal.extra.get("warnings", ()):
        out.print(f"warning: {line}", markup=False)
    render_calibration(cal, path, wide=wide, out=out)


def engine_version_text(text: str) -> str:
    """A vLLM version as ``--vllm-version`` takes it (``0.32``, ``0.32.0``, ``v0.24.0rc1``): recorded in the
    calibration, where simulate reads the engine profile by it."""
    try:
        VllmVersion.parse(text)
    except SpecwiseError as exc:  # argparse names the flag already
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--vllm-version ")) from None
    return text


def check_result_files(paths: list[Path]) -> None:
    """The inputs first, as the reader words it: a directory or a missing file is the input's mistake, said before
    any check of ``--out`` against them (which would call a directory given as a result "the result directory")."""
    for path in paths:
        if path.is_dir():
            raise SpecwiseError(f"{path}: is a directory, expected a bench file")
        if not path.exists():
            raise SpecwiseError(f"{path}: no such bench file")


STDOUT = Path("-")
"""``--out -``: the calibration document on stdout, as ``specwise export``'s ``--out -`` prints its file."""


def run(args: argparse.Namespace) -> int:
    to_stdout = args.out == STDOUT
    if to_stdout and args.json:  # two JSON documents on one stdout would be neither
        raise SpecwiseError(
            "--out - prints the calibration on stdout, where --json would print a second document; drop --json "
            "(stdout then holds the calibration file's JSON alone) or give --out a file name"
        )
    check_result_files(args.results)
    if not to_stdout:
        check_output_file(args.out, [("result", path) for path in args.results])
        refuse_a_foreign_file(args.out, is_calibration_text)
    request = _input(args)
    cal = calibrate_vllm(request)
    if to_stdout:  # stdout holds the document alone; what was assumed is said on stderr
        print_json(cal.to_json())
        print(assumptions_text(cal, request), file=sys.stderr)
        for line in cal.extra.get("warnings", ()):
            print(f"warning: {line}", file=sys.stderr)
        return EXIT_OK
    write_json_atomic(args.out, json_safe(cal.to_json()))
    if args.json:
        print_json({"calibration": cal.to_json(), "calibration_file": str(args.out)})
    else:
        render(cal, request, args.out, wide=args.wide)
    return EXIT_OK
