"""``specwise profile``: measure acceptance (alpha, AL(k), per position) of a pair or an n-gram/suffix method on
real weights and prompts, for every temperature, drafting mode and k from one set of forward passes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from specwise.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    add_wide_flag,
    argparse_type,
    path_arg,
    path_text,
    positive_int,
    progress_bar,
    stage_progress,
)
from specwise.cli.datasets import add_dataset_flags, dataset_selection
from specwise.errors import SpecwiseError
from specwise.extras import require
from specwise.fileio import check_output_file, same_file, write_json_atomic
from specwise.methods import LOOKUP_METHODS, MAX_K, speculative_tokens
from specwise.profiler import settings as profiler_settings
from specwise.profiler.document import PromptDetails, build_document
from specwise.profiler.quantize_spec import parse_quantize
from specwise.profiler.settings import (
    CONTEXTS,
    VERIFY_DEFAULTS,
    ProfileSettings,
    check_method_draft,
    check_verify_options,
    lookup_range,
    parse_k_values,
    parse_temperatures,
)
from specwise.profiler.templates import MODES, TemplateChoice, rendered_prompts
from specwise.profiler.templates import resolve as resolve_template
from specwise.profiler.threads import THREADS_PER_CORE
from specwise.prompts.sources import load_prompts

if TYPE_CHECKING:
    from specwise.contracts.profile import ProfileDoc


def temperature_list(text: str) -> tuple[float, ...]:
    """``--verify-temperatures``: ``--temperatures``' list, its messages naming this flag."""
    try:
        return parse_temperatures(text)
    except SpecwiseError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--temperatures").lstrip(": ")) from None


CHECKS: dict[str, Callable[[str], int]] = {
    name: argparse_type(check) for name, check in profiler_settings.CHECKS.items()
}
"""The integer settings' flag types: :data:`specwise.profiler.settings.CHECKS` as argparse types."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "profile",
        help="measure acceptance of a draft/target pair (or n-gram/suffix) on real weights and prompts",
        description="Measure alpha, acceptance rate and mean acceptance length AL(k) per temperature, drafting mode "
        "(greedy = vLLM's default, probabilistic), k and quantisation, with bootstrap 95% CIs over prompts. Models "
        "are HF directories (safetensors) or GGUF files; offline; nothing is unpickled. Each continuation runs "
        "--max-new-tokens past any end-of-sequence token (as a benchmark's ignore_eos): keep it near your outputs' "
        "length, or text the server would never generate is counted too. A prompt longer than 1,024 tokens (or the "
        "model's context) keeps its last ones, counted in the result.",
    )
    _add_pair_flags(p)
    p.add_argument(
        "--prompts",
        required=True,
        type=path_text,
        metavar="FILE|hf:PATH|builtin:NAME",
        help="JSON/JSONL prompts (specwise, chat messages, ShareGPT, Spec-Bench question.jsonl), a local Hugging Face "
        "dataset, or a built-in set",
    )
    add_dataset_flags(p)
    p.add_argument("--max-prompts", type=CHECKS["max_prompts"], metavar="N", help="use the first N prompts")
    p.add_argument(
        "--chat-template",
        default="none",
        type=path_text,
        metavar="auto|none|FILE",
        help="render each conversation with the target's chat template (auto: when it has one, as a chat server "
        "does), a Jinja template FILE, or send the raw text (none, default: a completions request)",
    )
    p.add_argument("--temperatures", default="0,0.5,1.0", help="comma list (default 0,0.5,1.0)")
    p.add_argument("--k", default="1-8", help="draft lengths: range or list (default 1-8)")
    p.add_argument("--top-k", type=CHECKS["top_k"], default=0, help="top-k applied to both models (0 = off)")
    p.add_argument("--top-p", type=float, default=1.0, help="top-p applied to both models (default 1 = off)")
    p.add_argument(
        "--quantize",
        action="append",
        default=[],
        metavar="ROLE=SCHEME[,...]",
        help="a quantisation what-if (repeatable), e.g. draft=int8 or draft=int8,target=int4; schemes int8, int4, fp8",
    )
    p.add_argument(
        "--max-new-tokens", type=CHECKS["max_new_tokens"], default=128, metavar="N", help="tokens per prompt"
    )
    p.add_argument(
        "--contexts",
        choices=CONTEXTS,
        default="per-temperature",
        help="continuations per temperature "
        "(exact contexts) or one shared greedy continuation (faster, biased at high T)",
    )
    p.add_argument(
        "--estimator",
        choices=("realized", "expected"),
        default="realized",
        help="counters from the realized acceptance coins along each sampled continuation (exact for the "
        "speculative sampling loop; default) or from per-context means sum min(p,q) (lower variance, "
        "over-predicts at T > 0)",
    )
    p.add_argument(
        "--prompt-lookup-min", type=CHECKS["prompt_lookup_min"], help="ngram: shortest n-gram (vLLM default 5)"
    )
    p.add_argument(
        "--prompt-lookup-max", type=CHECKS["prompt_lookup_max"], help="ngram: longest n-gram (vLLM default 5)"
    )
    p.add_argument("--batch-size", type=CHECKS["batch_size"], default=8, help="prompts per continuation batch")
    p.add_argument(
        "--threads",
        type=CHECKS["threads"],
        metavar="N",
        help="torch threads for the forward passes (default: the cores this process may run on; at most "
        f"{THREADS_PER_CORE} per core: more only wait on each other)",
    )
    p.add_argument("--seed", type=CHECKS["seed"], default=0)
    _add_verify_flags(p)
    p.add_argument("--json", type=path_arg, metavar="OUT", help="write the profile JSON here ('-' prints it)")
    add_wide_flag(p)
    p.add_argument("--plot", type=path_arg, metavar="OUT.png", help="write acceptance vs temperature (.png or .svg)")
    p.set_defaults(handler=run)


def _add_pair_flags(p: Any) -> None:
    """``--target`` and ``--draft`` (or ``--method``): the pair measured."""
    p.add_argument(
        "--target", required=True, type=path_text, metavar="PATH", help="target model: HF directory or .gguf file"
    )
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--draft", type=path_text, metavar="PATH", help="draft model: HF directory or .gguf file")
    who.add_argument("--method", choices=LOOKUP_METHODS, help="model-free drafting instead of a draft model")


def _add_verify_flags(p: Any) -> None:
    p.add_argument("--verify", action="store_true", help="also run the real speculative sampling loop and compare")
    p.add_argument(
        "--verify-temperatures", type=temperature_list, metavar="T,...", help="temperatures for --verify (default 0,1)"
    )
    p.add_argument(
        "--verify-k",
        type=argparse_type(speculative_tokens),
        metavar="K",
        help=f"k for --verify, 1..{MAX_K} (default 4)",
    )
    p.add_argument(
        "--verify-paths",
        type=positive_int,
        metavar="N",
        help="loop runs per prompt at T > 0 for --verify (default 1; per-path acceptance is heavy-tailed, so the "
        "comparison with the profile's own number needs several)",
    )


def check_verify_flags(args: argparse.Namespace) -> None:
    """``--verify-*`` act only with ``--verify`` (refused without it: the library's rule, shared with the API);
    with it, the ones not given take :data:`~specwise.profiler.settings.VERIFY_DEFAULTS`."""
    check_verify_options(args.verify, {name: getattr(args, name) for name in VERIFY_DEFAULTS}, "--verify")
    for name, default in VERIFY_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)


def build_settings(args: argparse.Namespace) -> ProfileSettings:
    check_method_draft(args.method, args.draft)  # argparse's group already pairs them; the API's check too
    lo, hi = lookup_range(args.method or "draft_model", args.prompt_lookup_min, args.prompt_lookup_max)
    if not 0 < args.top_p <= 1:
        raise SpecwiseError(f"--top-p: expected a number in (0, 1], got {args.top_p}")
    if args.max_new_tokens < 2:  # the settings' own rule, said with the flag's name
        raise SpecwiseError(
            f"--max-new-tokens: must be >= 2 (a token to draft after, one to verify), got {args.max_new_tokens}"
        )
    return ProfileSettings(
        method=args.method or "draft_model",
        temperatures=parse_temperatures(args.temperatures),
        k_values=parse_k_values(args.k),
        max_new_tokens=args.max_new_tokens,
        top_k=args.top_k,
        top_p=args.top_p,
        contexts=args.contexts,
        estimator=args.estimator,
        quantizations=tuple(parse_quantize(q) for q in args.quantize),
        seed=args.seed,
        batch_size=args.batch_size,
        prompt_lookup_min=lo,
        prompt_lookup_max=hi,
    )


def run(args: argparse.Namespace) -> int:
    # the arguments first: a bad --k or destination is said without installing torch (1.5 GB) to learn of it
    settings = build_settings(args)
    check_verify_flags(args)
    _check_outputs(args)  # before any work: a bad destination must not cost the run
    selection = dataset_selection(args)
    choice = TemplateChoice.parse(args.chat_template)
    for module in ("torch", "transformers"):
        require(module, "profile")
    if args.plot:
        require("matplotlib", "--plot")
    items = load_prompts(args.prompts, selection)
    if args.max_prompts:
        items = items[: args.max_prompts]
    verify_temps = args.verify_temperatures if args.verify else ()

    from specwise.profiler.runner import (
        ProfileInterrupted,
        Timings,
        load_pair,
        prepare_prompts,
        run_profile,
    )
    from specwise.profiler.threads import configure_threads
    from specwise.profiler.verify import verify

    timings = Timings()
    interrupted = False
    timings.extra["threads"] = configure_threads(args.threads)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    with progress_bar(*columns) as bar:
        progress = stage_progress(bar)
        loading = f"loading weights ({args.target}{' + ' + args.draft if args.draft else ''})"
        progress(loading, 0, 1)
        loaded = load_pair(args.target, args.draft, settings, len(items), timings)
        progress(loading, 1, 1)
        template = resolve_template(choice, loaded.tokenizer, loaded.target_files.path)
        prompts = rendered_prompts(items, template, loaded.tokenizer)
        prepared = prepare_prompts(loaded, prompts, settings)
        try:
            results, _conts, ids = run_profile(loaded, prompts, settings, progress, timings, prepared)
        except ProfileInterrupted as stop:
            results, ids, interrupted = stop.results, stop.ids, True
        checks = None
        if verify_temps and not interrupted:
            try:
                checks = verify(
                    loaded.target,
                    loaded.draft,
                    ids,
                    results,
                    settings,
                    verify_temps,
                    args.verify_k,
                    progress,
                    paths_per_prompt=args.verify_paths,
                )
            except KeyboardInterrupt:  # the profile itself is complete: kept, written, without the loop's rows
                interrupted = args.verify_interrupted = True
    limit, truncated = prepared.limit, prepared.truncated
    if truncated:
        print(
            f"note: {truncated} of {len(prompts)} prompts are longer than {limit:,} tokens and were cut to their last "
            f"{limit:,} (recorded in the result's prompts.truncated)",
            file=sys.stderr,
        )
    details = PromptDetails(selection.categories, selection.turns, template, limit, truncated)
    doc = build_document(
        args.target, args.draft, settings, args.prompts, len(prompts), results, timings.as_dict(), checks, details,
        interrupted=interrupted,
    )  # fmt: skip
    return _emit(args, doc, interrupted)


def _emit(args: argparse.Namespace, doc: ProfileDoc, interrupted: bool) -> int:
    """Write the JSON and the plot, show the profile; what was written is said; an interrupted run exits 130."""
    to_stdout = args.json is not None and str(args.json) == "-"
    wrote = []
    json_out = None if args.json is None or to_stdout else _json_destination(Path(args.json), interrupted)
    if json_out is not None:
        write_json_atomic(json_out, doc.to_json())  # the result first, the plot after
        wrote.append(json_out)
    if to_stdout:
        from specwise.cli.common import print_json

        print_json(doc.to_json())
    else:
        from specwise.report.profile import render_profile

        render_profile(doc, wide=args.wide)
    notes = []
    if args.plot:
        from specwise.report.profile_plots import acceptance_series, plot_acceptance_vs_temperature

        wrote.append(plot_acceptance_vs_temperature(doc, args.plot))
        k, series = acceptance_series(doc)
        if not series:
            notes.append(f"note: nothing was drafted at k={k}, so {args.plot} has no rate to plot (it says so)")
    profiled = {
        (r.temperature, b.k) for r in doc.results if r.workload_class is None and not r.quantization for b in r.by_k
    }
    unmatched = sorted({(v.temperature, v.k) for v in doc.verification} - profiled)
    if unmatched:
        at = ", ".join(f"T={t:g} k={k}" for t, k in unmatched)
        notes.append(
            f"note: no profile pred at {at}: the profile has no result there; give those temperatures to "
            "--temperatures and k to --k to compare the loop with the profile"
        )
    for path in wrote:  # stdout keeps only the JSON when it carries it
        print(f"wrote {path}", file=sys.stderr if to_stdout else sys.stdout)
    for note in notes:
        print(note, file=sys.stderr)
    if interrupted:
        done = ", ".join(f"{t:g}" for t in doc.settings["temperatures_completed"])
        kept = f"; wrote them to {json_out}" if json_out is not None else ""
        if json_out is not None and json_out != Path(args.json):
            kept += f" ({args.json}, already there, is left as it was)"
        during = " during --verify (no verification rows)" if getattr(args, "verify_interrupted", False) else ""
        print(f"interrupted{during}: results for the temperatures profiled in full (T={done}){kept}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def _json_destination(path: Path, interrupted: bool) -> Path:
    """Where the result goes: ``--json``; an interrupted run's partial result beside a file already there
    (``NAME.interrupted.json``), which may be a complete profile it must not replace."""
    if interrupted and path.is_file():
        return path.with_name(f"{path.stem}.interrupted{path.suffix}")
    return path


def _check_outputs(args: argparse.Namespace) -> None:
    """--json and --plot: writable files, each its own, never one of the files (or model directories) read."""
    if args.plot is not None and Path(args.plot).suffix.lower() not in (".png", ".svg"):
        raise SpecwiseError(f"--plot {args.plot}: expected a .png or .svg file name")
    json_path = None if args.json is None or str(args.json) == "-" else Path(args.json)
    reads = _reads(args)
    for flag, path in (("--json", json_path), ("--plot", args.plot)):
        if path is not None:
            check_output_file(Path(path), reads, flag)
    if json_path is not None and args.plot is not None and same_file(json_path, Path(args.plot)):
        raise SpecwiseError(f"--json and --plot both name {args.plot}; give each its own file")


def _reads(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """What the command reads, by flag: the models (directories or GGUF files), the prompts file or local
    dataset, and a chat template file."""
    prompts: str | None = args.prompts
    if prompts is not None and prompts.startswith("builtin:"):
        prompts = None
    elif prompts is not None and prompts.startswith("hf:"):
        prompts = prompts.removeprefix("hf:")
    template = None if args.chat_template in MODES else args.chat_template
    return [("--target", args.target), ("--draft", args.draft), ("--prompts", prompts), ("--chat-template", template)]
