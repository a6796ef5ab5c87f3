"""``specwise bench``: load-test an OpenAI-compatible server across request rates, read its spec-decode counters."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rich.progress import Progress

from specwise.calibration.from_bench import calibrate, check_calibratable
from specwise.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    StopSaid,
    add_json_flag,
    add_wide_flag,
    argparse_type,
    non_empty,
    path_arg,
    path_text,
    positive_int,
    print_json,
    progress_bar,
    stop_word,
)
from specwise.cli.datasets import add_dataset_flags, dataset_selection
from specwise.contracts.bench import BenchDoc
from specwise.contracts.bench_table import bench_rows, check_extension
from specwise.contracts.bench_table import render as render_table
from specwise.contracts.calibration import CalibrationDoc, is_calibration_text
from specwise.contracts.document import json_safe
from specwise.errors import SpecwiseError, redact_url
from specwise.fileio import check_output_file, refuse_a_foreign_file, same_file, write_json_atomic, write_text_atomic
from specwise.loadgen import plan
from specwise.loadgen.client import api_key_from, served_root
from specwise.loadgen.launcher import LaunchFile, load_launch_file
from specwise.loadgen.plan import RunConfig, client_config, refuse_level_conflicts
from specwise.loadgen.relaunch import check_new_launch, launch_base_of, resume_launch
from specwise.loadgen.runner import ServerLost, ServerUnreachable, held_back_notes
from specwise.loadgen.session import (
    DEFAULT_KEY_ENV,
    RunProgress,
    all_failed,
    execute,
    launch_all,
    new_run,
    stored_key_env,
    stored_notes,
)
from specwise.loadgen.store import ResultStore
from specwise.loadgen.workload import load_prompts, synthetic_prompts
from specwise.prompts.items import PromptItem
from specwise.prompts.synthetic import token_prompts
from specwise.prompts.tokenizer import load_tokenizer
from specwise.report.bench import render_bench, render_calibration, render_comparison


def _metrics_arg(text: str) -> str:
    return text if text == "none" else CHECKS["metrics_urls"](text)


SYNTHETIC_WORDS = 60  # the synthetic prompts' length in words when neither --prompts nor --synthetic-* is given

CHECKS: dict[str, Callable[[str], Any]] = {name: argparse_type(check) for name, check in plan.CHECKS.items()}
"""The flags' types: :data:`specwise.loadgen.plan.CHECKS` (each :class:`RunConfig` field's check) as argparse
types."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="load-test a running server at several request rates; read its spec-decode metrics",
        description="Send the same streamed requests at each request rate to an OpenAI-compatible server, record "
        "every request as it completes (SQLite, resumable), and read vLLM's spec-decode counters from /metrics "
        "before and after each level.",
    )
    p.add_argument("--url", type=CHECKS["url"], help="server base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--model", type=non_empty, help="model name the server serves")
    p.add_argument("--endpoint", choices=("completions", "chat"), help="API to call (default completions)")
    p.add_argument(  # None: not given (the defaults are RunConfig's), so a conflicting flag is refused, not dropped
        "--rates", type=CHECKS["rates"], help="requests/s per level, e.g. 1,2,4 (default 1,4)"
    )
    p.add_argument(
        "--concurrency",
        type=CHECKS["concurrency"],
        metavar="N[,N...]",
        help="closed-loop levels keeping N requests in flight, instead of --rates",
    )
    p.add_argument(
        "--sweep",
        type=CHECKS["sweep"],
        metavar="N",
        help=f"probe synchronous and max throughput, then run N rates spread between (instead of --rates; "
        f"N <= {plan.MAX_SWEEP})",
    )
    p.add_argument(
        "--requests-per-level", type=CHECKS["requests_per_level"], metavar="N", help="requests per level (default 20)"
    )
    p.add_argument(
        "--arrivals", choices=("poisson", "gamma", "constant"), help="open-loop arrival process (default poisson)"
    )
    p.add_argument(
        "--burstiness-cv",
        type=CHECKS["cv"],
        help="with --arrivals gamma: the gaps' coefficient of variation (default 1)",
    )
    _add_prompt_flags(p)
    p.add_argument("--max-tokens", type=CHECKS["max_tokens"], metavar="N", help="tokens per request (default 64)")
    p.add_argument("--temperature", type=CHECKS["temperature"], help="sampling temperature (default 0)")
    p.add_argument(
        "--ignore-eos", action="store_true", default=None, help="ask the server to generate exactly --max-tokens"
    )
    p.add_argument(
        "--max-concurrency", type=CHECKS["max_concurrency"], metavar="N", help="most requests in flight (default 256)"
    )
    p.add_argument(
        "--request-timeout", type=CHECKS["request_timeout_s"], metavar="S", help="seconds per request (default 120)"
    )
    p.add_argument(
        "--metrics-url",
        type=_metrics_arg,
        action="append",
        help="Prometheus endpoint (default: URL/metrics; 'none' to skip); behind a router, give it once per "
        "replica: each replica's counters are read on its own and summed",
    )
    p.add_argument(
        "--api-key-env",
        type=CHECKS["api_key_env"],
        metavar="VAR",
        help=f"env var holding the API key (default {DEFAULT_KEY_ENV}; never stored); a VAR named here must be set "
        "('' sends no key)",
    )
    p.add_argument("--seed", type=CHECKS["seed"], help="seed of the arrivals and synthetic prompts (default 0)")
    _add_slo_and_speculation_flags(p)
    _add_storage_flags(p)
    _add_launch_flags(p)
    add_wide_flag(p)
    add_json_flag(p)
    p.set_defaults(handler=run)


def _add_prompt_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prompts",
        type=path_text,
        metavar="FILE|hf:PATH|builtin:NAME",
        help="JSON/JSONL prompts (specwise's 'prompt' + optional 'class', 'max_tokens', 'temperature'; chat "
        "'messages'; ShareGPT; Spec-Bench question.jsonl), a local Hugging Face dataset, or a built-in set",
    )
    add_dataset_flags(p)
    p.add_argument(
        "--synthetic-words",
        type=positive_int,
        metavar="N",
        help=f"without --prompts: synthetic prompts of N words (default {SYNTHETIC_WORDS})",
    )
    p.add_argument(
        "--synthetic-tokens",
        type=positive_int,
        metavar="N",
        help="without --prompts: synthetic prompts of N tokens of the model's tokenizer (see --tokenizer)",
    )
    p.add_argument(
        "--tokenizer",
        type=path_text,
        metavar="DIR|FILE|ORG/NAME",
        help="tokenizer for --synthetic-tokens: a model directory, a tokenizer.json, or a model id in the local "
        "Hugging Face cache (default: --model; nothing is downloaded)",
    )


def _add_slo_and_speculation_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--slo-ttft", type=CHECKS["slo_ttft_s"], help="goodput SLO on TTFT (s)")
    p.add_argument("--slo-tpot", type=CHECKS["slo_tpot_s"], help="goodput SLO on TPOT (s)")
    p.add_argument(
        "--speculative-config",
        type=CHECKS["speculative_config"],
        metavar="JSON",
        help="the --speculative-config the server at --url runs, kept with the results: advise --bench matches the "
        "run to its candidate by it (without it, a run stands only for a scenario's only candidate); --launch "
        "runs record their own",
    )


def _add_storage_flags(p: argparse.ArgumentParser) -> None:
    """Where results go: the database, resuming, exports."""
    p.add_argument(
        "--db",
        type=path_arg,
        default=Path("specwise-bench.sqlite"),
        help="results database (default: specwise-bench.sqlite in the current directory; runs accumulate in it)",
    )
    p.add_argument("--run-id", type=non_empty, help="name for this run (default: random)")
    p.add_argument(
        "--resume",
        type=non_empty,
        metavar="RUN_ID",
        help="finish an interrupted run from --db (a --launch run: with --launch FILE, which starts its servers again)",
    )
    p.add_argument("--export-jsonl", type=path_arg, metavar="FILE", help="also write every record as JSON lines")
    p.add_argument(
        "--output",
        type=path_arg,
        metavar="FILE",
        help="also write one row per level (and per --launch config) with vllm bench serve's field names and units "
        "(latencies in ms, spec_decode_acceptance_rate in percent); the extension says the format: .csv, .jsonl "
        "(one object per line, as --append-result), .json (rows and a field/unit list); advise --bench reads "
        "the .json and .jsonl back",
    )


def _add_launch_flags(p: argparse.ArgumentParser) -> None:
    """Starting servers per configuration, and calibrating the simulator to them."""
    p.add_argument(
        "--launch",
        type=path_arg,
        metavar="FILE",
        help="TOML listing vLLM configurations: start each on 127.0.0.1, bench it, stop it, compare",
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="with --launch: fit the simulator's step-time model to the measured steps and report its "
        "predicted-vs-measured TPOT speedup per rate (vLLM launch files: it reads vLLM's spec-decode counters)",
    )
    p.add_argument(
        "--calibration-out",
        type=path_arg,
        metavar="FILE",
        help="where --calibrate / --calibrate-run write the calibration file (default: beside --db, named after "
        "the run); simulate, advise and monitor take it with --calibration",
    )
    p.add_argument(
        "--calibrate-run",
        type=non_empty,
        metavar="RUN_ID",
        help="calibrate from a finished --launch run kept in --db, without sending requests",
    )


def _key_env(args: argparse.Namespace) -> str:
    """The variable the API key is read from: --api-key-env's, else :data:`DEFAULT_KEY_ENV`."""
    return DEFAULT_KEY_ENV if args.api_key_env is None else str(args.api_key_env)


def run_config(args: argparse.Namespace, url: str | None, model: str | None) -> RunConfig:
    """The run's configuration from the flags (``url``/``model`` None: filled in per launched server)."""
    if url is not None and not url.startswith(("http://", "https://")):
        raise SpecwiseError(f"--url {url!r}: expected http://HOST:PORT")
    prompts = _prompts(args, model)
    metrics_urls = _metrics_urls(args, url or "")
    return RunConfig(  # a flag not given (None) takes RunConfig's default
        url=url or "",
        model=model or "",
        prompts=prompts,
        endpoint=_or_default(args.endpoint, "endpoint"),
        rates=tuple(args.rates) if args.rates else RunConfig.rates,
        concurrency=tuple(args.concurrency) if args.concurrency else None,
        sweep=args.sweep,
        requests_per_level=_or_default(args.requests_per_level, "requests_per_level"),
        arrivals=args.arrivals or RunConfig.arrivals,
        cv=_or_default(args.burstiness_cv, "cv"),
        max_tokens=_or_default(args.max_tokens, "max_tokens"),
        temperature=_or_default(args.temperature, "temperature"),
        ignore_eos=_or_default(args.ignore_eos, "ignore_eos"),
        max_concurrency=_or_default(args.max_concurrency, "max_concurrency"),
        request_timeout_s=_or_default(args.request_timeout, "request_timeout_s"),
        metrics_urls=metrics_urls,
        api_key_env=_key_env(args),
        api_key_sent=api_key_from(_key_env(args)) is not None,
        seed=_or_default(args.seed, "seed"),
        slo_ttft_s=args.slo_ttft,
        slo_tpot_s=args.slo_tpot,
        speculative_config=args.speculative_config,
    )


def _or_default(given: Any, field: str) -> Any:
    """A flag's value, or (not given: None) :class:`RunConfig`'s default for ``field``."""
    return getattr(RunConfig, field) if given is None else given


def _prompts(args: argparse.Namespace, model: str | None) -> tuple[PromptItem, ...]:
    """The dataset, or synthetic prompts sized in tokens (with the model's tokenizer) or words."""
    if args.prompts:
        return tuple(load_prompts(args.prompts, dataset_selection(args)))
    if args.category is not None or args.turns is not None:  # '' too: given, and nothing to select from
        raise SpecwiseError("--category and --turns select from a dataset: give --prompts")
    count, seed = _or_default(args.requests_per_level, "requests_per_level"), _or_default(args.seed, "seed")
    if args.synthetic_tokens:
        name = args.tokenizer or model
        if not name:
            raise SpecwiseError("--synthetic-tokens needs --tokenizer (a model directory, tokenizer.json or ORG/NAME)")
        encoder = load_tokenizer(name)
        return tuple(token_prompts(count, args.synthetic_tokens, seed, encoder))
    words = args.synthetic_words or SYNTHETIC_WORDS
    return tuple(synthetic_prompts(count, words, seed))


def _metrics_urls(args: argparse.Namespace, url: str) -> tuple[str, ...]:
    given: list[str] = args.metrics_url or []
    if "none" in given:
        if len(given) > 1:
            raise SpecwiseError("--metrics-url none: not with other --metrics-url")
        return ()
    for i, u in enumerate(given):
        if u in given[:i]:  # read twice, a replica's counters would be summed twice
            raise SpecwiseError(f"--metrics-url {redact_url(u)} is given twice; give each replica's once")
    return tuple(given) or (url.rstrip("/") + "/metrics",)


class _Progress:
    """What a run shows while it works: one bar per configuration and level, and while a ``--launch`` server
    starts, its elapsed time and the last line of its log (on a terminal, a live line; elsewhere, a line on
    stderr every 15 s)."""

    def __init__(self, bar: Progress, show_bars: bool) -> None:
        self.bar, self.show_bars = bar, show_bars
        self.tasks: dict[str, Any] = {}
        self.starting: dict[str, Any] = {}
        self.printed_s: dict[str, float] = {}

    def startup(self, name: str, elapsed_s: float, log_line: str) -> None:
        text = f"starting vllm serve ({name}): {elapsed_s:.0f} s" + (f" | {log_line[-90:]}" if log_line else "")
        if self.bar.disable:
            if elapsed_s - self.printed_s.get(name, -1e9) >= 15.0:
                print(text, file=sys.stderr, flush=True)
                self.printed_s[name] = elapsed_s
            return
        if name not in self.starting:
            self.starting[name] = self.bar.add_task(text, total=None)
        self.bar.update(self.starting[name], description=text)

    def tick(self, label: str, level: int, done: int, total: int, acceptance: float | None) -> None:
        for name in [n for n in self.starting if label.startswith(n)]:
            self.bar.remove_task(self.starting.pop(name))  # that server is up: its requests take over
        if not self.show_bars:
            return
        if label not in self.tasks:
            self.tasks[label] = self.bar.add_task(label, total=total)
        live = f", acceptance {acceptance:.2f}" if acceptance is not None else ""
        self.bar.update(self.tasks[label], completed=done, total=total, description=f"{label} level {level}{live}")


@dataclass(frozen=True)
class _Inputs:
    """What a run reads besides --db: the launch file and a new run's configuration (its prompts, tokenizer and
    URLs), read and checked before the database is opened, so a refused input leaves no empty database behind."""

    launch: LaunchFile | None
    config: RunConfig | None  # a new run's (a --launch run's template); None for --resume: the stored one is used


def _read_inputs(args: argparse.Namespace) -> _Inputs:
    launch = load_launch_file(args.launch) if args.launch else None
    if args.resume:
        return _Inputs(launch, None)
    if launch is not None:
        return _Inputs(launch, run_config(args, None, None))  # the URL and model come with each launched server
    if not args.url or not args.model:
        raise SpecwiseError("--url and --model are required (or --resume RUN_ID)")
    return _Inputs(None, run_config(args, args.url, args.model))


def _bench(args: argparse.Namespace, run_id: str, store: ResultStore, shown: _Progress, inputs: _Inputs) -> BenchDoc:
    progress: RunProgress | None = shown.tick if shown.show_bars else None
    if inputs.launch is not None:
        launch = inputs.launch
        if inputs.config is None:  # --resume: the launched servers stopped with the bench that started them
            doc = resume_launch(launch, args.launch, store, args.db, run_id, progress, on_wait=shown.startup)
        else:
            check_new_launch(store, run_id, launch)
            doc = launch_all(launch, inputs.config, store, args.db, run_id, progress, on_wait=shown.startup)
        if args.export_jsonl:  # every configuration's records, in launch order (each line names its run)
            lines = (line + "\n" for c in doc.configs for line in store.export_jsonl(c.run_id))
            write_text_atomic(args.export_jsonl, "".join(lines))
            doc = replace(doc, jsonl=str(args.export_jsonl))
        return doc if not args.calibrate else _with_calibration(doc, store)
    if inputs.config is None:  # --resume
        _refuse_launch_resume(store, args)
        stored = RunConfig.from_json(store.run_config(run_id))
        complete = store.status(run_id) == "complete"
        config = _resumed_config(args, stored, run_id, sends=not complete)
        if config.speculative_config != stored.speculative_config:  # said now: kept for the next --resume too
            store.update_config(run_id, replace(stored, speculative_config=config.speculative_config).to_json())
        if complete:  # review s59: it printed the table again without a word
            print(f"run {run_id} is complete: its stored results (no request sent)", file=sys.stderr)
    else:
        config = inputs.config
        new_run(store, run_id, config)
    levels = execute(store, run_id, config, f"run {run_id}", progress)
    jsonl = None
    if args.export_jsonl:
        write_text_atomic(args.export_jsonl, "".join(line + "\n" for line in store.export_jsonl(run_id)))
        jsonl = str(args.export_jsonl)
    return BenchDoc(
        run_id=run_id,
        db=str(args.db),
        model=config.model,
        url=redact_url(config.url),
        levels=tuple(levels),
        jsonl=jsonl,
        temperatures=config.sent_temperatures(),
        speculative_config=config.speculative_config,
        model_root=served_root(client_config(config)) if config.url else None,
    )


def _refuse_launch_resume(store: ResultStore, args: argparse.Namespace) -> None:
    """``--resume`` of a ``--launch`` run (or of one of its configurations) without ``--launch``: its server was
    stopped with the bench that started it, and its stored URL is a dead port (or, later, someone else's)."""
    base = launch_base_of(store, args.resume)
    if base is None:
        return
    what = "the --launch run" if base == args.resume else "one configuration of the --launch run"
    raise SpecwiseError(
        f"run {args.resume!r} is {what} {base!r}, whose servers stopped with the bench that started them; resume it "
        f"with its launch file, which starts them again: {_resume_command(args, base, launch='FILE')}"
    )


def _new_run_id(args: argparse.Namespace) -> str:
    """The run's id (a ``--launch`` run's base id: each configuration's run is ``ID-NAME``), known before the run
    starts so an interruption can say how to resume it."""
    return str(args.resume or args.run_id or uuid.uuid4().hex[: 8 if args.launch else 12])


def _resume_command(
    args: argparse.Namespace, run_id: str, launch: str | None = None, outputs: Sequence[str] = ()
) -> str:
    """The exact command that finishes the run (and writes ``outputs``: flags and their files)."""
    words = ["specwise", "bench"]
    if launch or args.launch:
        words += ["--launch", launch or str(args.launch)]
    words += ["--resume", run_id]
    if args.db != Path("specwise-bench.sqlite"):
        words += ["--db", str(args.db)]
    # credentials are never stored nor printed: the user gives those URLs again (review s59: the printed command
    # failed with "pass --url again")
    url = getattr(args, "url", None)
    if url and "@" in urlsplit(url).netloc:
        words += ["--url", "URL"]
    for metrics in getattr(args, "metrics_url", None) or ():
        if "@" in urlsplit(metrics).netloc:
            words += ["--metrics-url", "URL"]
    return " ".join(w if w in ("FILE", "URL") else shlex.quote(w) for w in [*words, *outputs])


def _unwritten(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The files a run writes only when it finishes, with the flags that ask for them: an unfinished run writes none.
    Its --output rows would read as finished levels (vllm bench serve's fields have no place to say a level was cut
    short, and advise --bench takes them as measurements), so its records stay in --db until --resume completes it."""
    given = [("--output", args.output), ("--export-jsonl", args.export_jsonl)]
    if args.calibrate:
        given.append(("--calibration-out", args.calibration_out))
    return [(flag, path) for flag, path in given if path is not None]


def _say_resume(
    args: argparse.Namespace,
    store: ResultStore,
    run_id: str,
    what: str,
    unwritten: Sequence[tuple[str, Path]] = (),
) -> bool:
    """On stderr (stdout may be --json), when the run was stored: how to finish it, and which of the files it writes
    on finishing were not written (``unwritten``: the command given writes them); whether it was said."""
    try:
        saved = store.launch_runs(run_id) if args.launch else store.has_run(run_id)
    except Exception:  # a broken database: nothing to point at
        return False
    if not saved:
        return False
    outputs = (["--calibrate"] if args.calibrate else []) + [w for flag, path in unwritten for w in (flag, str(path))]
    files = f"; not written: {', '.join(str(path) for _, path in unwritten)}" if unwritten else ""
    print(
        f"{what}: finished requests are saved in {args.db}{files}; continue with: "
        f"{_resume_command(args, run_id, outputs=outputs)}",
        file=sys.stderr,
    )
    return True


def _resumed_config(args: argparse.Namespace, config: RunConfig, run_id: str, sends: bool = True) -> RunConfig:
    """The stored configuration, with the URLs given again (a fleet's stored --metrics-url are kept unless
    --metrics-url is given again); ``sends``: requests are left to send (a complete run's key is not needed)."""
    if args.url:
        keep = len(config.metrics_urls) > 1 and not args.metrics_url
        metrics = config.metrics_urls if keep else _metrics_urls(args, args.url)
        config = replace(config, url=args.url, metrics_urls=metrics)
    elif args.metrics_url:
        config = replace(config, metrics_urls=_metrics_urls(args, config.url))
    if args.api_key_env is not None:  # the key is never stored: the variable holding it may be named again
        config = replace(config, api_key_env=args.api_key_env)
    elif sends and _key_gone(config):
        # resumed without the key the run sent, every request would be a stored 401 and the run spoiled (review s59
        # B1: exit 0 with "7 of 12 requests failed (7 http 401)"), as a new run naming an unset variable is refused
        raise SpecwiseError(
            f"run {run_id} sent its API key from ${config.api_key_env}, which is not set (or empty) now; export it, "
            "or give --api-key-env VAR to read it from another variable ('' to send no key)"
        )
    config = _resumed_speculation(args.speculative_config, config, run_id)
    if sends and config.credentials_dropped:  # a complete run sends nothing: its stored results need no URL
        raise SpecwiseError(
            f"run {run_id}: its URL had credentials, which are never stored; pass --url again with --resume "
            "(and each --metrics-url that had them)"
        )
    return config


def _key_gone(config: RunConfig) -> bool:
    """Whether the run sent a key (its variable was set at its start, or it named one with --api-key-env: a run
    stored before ``api_key_sent`` was) whose variable is unset now."""
    name = config.api_key_env
    if not name or api_key_from(name) is not None:
        return False
    return config.api_key_sent or name != DEFAULT_KEY_ENV


def _resumed_speculation(given: dict[str, Any] | None, config: RunConfig, run_id: str) -> RunConfig:
    """A resumed run's speculative config: the stored one; one given with --resume is taken where none was stored,
    and refused where another was (the levels already measured ran that one)."""
    if given is None or given == config.speculative_config:
        return config
    if config.speculative_config is None:
        return replace(config, speculative_config=given)
    raise SpecwiseError(
        f"--speculative-config: run {run_id} was started with {json.dumps(config.speculative_config)}, which its "
        "measured levels ran; a resumed run keeps it (start a new run for another config)"
    )


def _with_calibration(doc: BenchDoc, store: ResultStore) -> BenchDoc:
    return replace(doc, calibration=calibrate(store, doc.run_id))


def _write_calibration(args: argparse.Namespace, cal: CalibrationDoc) -> Path:
    path: Path = args.calibration_out or args.db.parent / f"{cal.run_id}.calibration.json"
    write_json_atomic(path, json_safe(cal.to_json()))
    return path


def _refuse_server_flags_with_launch(args: argparse.Namespace) -> None:
    """``--url``, ``--model`` and a ``--metrics-url`` name a running server; ``--launch`` starts its own (on
    127.0.0.1 at a free port, serving the launch file's model, its /metrics read): given together, the first would
    be ignored without a word, so they are refused (``--metrics-url none``, no metrics, applies to both)."""
    if not args.launch:
        return
    metrics = [u for u in args.metrics_url or [] if u != "none"]
    named = (("--url", args.url), ("--model", args.model), ("--metrics-url", metrics))
    for flag, given in (*named, ("--speculative-config", args.speculative_config)):
        if given:
            raise SpecwiseError(
                f"{flag}: not with --launch, which starts its own servers on 127.0.0.1 (the launch file's model, "
                f"their /metrics); drop {flag}, or drop --launch to bench a server already running"
            )


def _refuse_conflicting_flags(args: argparse.Namespace) -> None:
    """Flags of which one would be dropped without a word are refused, before any request or database file: the
    levels are --rates, --concurrency or --sweep; an arrival process paces open-loop levels only, and only gamma
    arrivals have a --burstiness-cv; synthetic prompts (--synthetic-words or --synthetic-tokens, the latter sized with
    --tokenizer) are sent only without --prompts. Only flags given count: their defaults are None."""
    refuse_level_conflicts(
        _flag,
        rates=args.rates,
        concurrency=args.concurrency,
        sweep=args.sweep,
        arrivals=args.arrivals,
        cv=args.burstiness_cv,
    )
    synthetic = _given(args, "synthetic_words", "synthetic_tokens")
    if synthetic and args.prompts:
        raise SpecwiseError(f"{synthetic[0]}: not with --prompts, whose prompts are sent instead of synthetic ones")
    if len(synthetic) > 1:
        raise SpecwiseError("--synthetic-words: not with --synthetic-tokens; give one length for the synthetic prompts")
    if args.tokenizer is not None and args.synthetic_tokens is None:
        raise SpecwiseError("--tokenizer: only with --synthetic-tokens, whose prompts it sizes in tokens")
    _refuse_shape_flags_on_resume(args)


def _flag(name: str, value: str | None) -> str:
    """A :class:`RunConfig` setting as ``specwise bench``'s flag (and value) for it."""
    flag = "--burstiness-cv" if name == "cv" else "--" + name.replace("_", "-")
    return flag if value is None else f"{flag} {value}"


def _given(args: argparse.Namespace, *names: str) -> list[str]:
    """The flags among ``names`` (argparse's attribute names) the user gave, as typed (``--burstiness-cv``): each
    defaults to None, so a flag left out is never taken for one given."""
    return ["--" + name.replace("_", "-") for name in names if getattr(args, name) is not None]


# what a run's levels and requests are, and how they are sent and scored: stored with the run, so a resumed run keeps
# them (flags with a None default: only one given counts)
SHAPE_FLAGS: tuple[str, ...] = ("rates", "concurrency", "sweep", "arrivals", "burstiness_cv", "prompts")
SHAPE_FLAGS += ("category", "turns", "synthetic_words", "synthetic_tokens", "tokenizer", "requests_per_level", "seed")
SHAPE_FLAGS += ("endpoint", "max_tokens", "temperature", "ignore_eos", "max_concurrency", "request_timeout")
SHAPE_FLAGS += ("slo_ttft", "slo_tpot")


def _refuse_shape_flags_on_resume(args: argparse.Namespace) -> None:
    """--resume finishes the levels a run was started with, on its stored requests: a flag that would shape other
    levels or requests is refused, not dropped."""
    given = _given(args, *SHAPE_FLAGS) if args.resume else []
    if given:
        raise SpecwiseError(
            f"{given[0]}: not with --resume, which finishes run {args.resume}'s levels with its stored requests "
            "and settings (start a new run for other levels, prompts or settings)"
        )


def _refuse_a_missing_database(args: argparse.Namespace) -> None:
    """``--resume`` reads a run from --db: a missing file is refused before the store would create it (and its
    folder), leaving an empty database behind."""
    if args.resume and not args.db.exists():
        what = "--launch run" if args.launch else "run"
        raise SpecwiseError(f"{args.db}: no {what} {args.resume!r} to resume (no results database there)")


def _calibrate_stored(args: argparse.Namespace) -> int:
    """--calibrate-run: the calibration of a finished --launch run kept in --db, sending no request."""
    if not args.db.exists():
        raise SpecwiseError(f"{args.db}: no results database")
    store = ResultStore(args.db)
    try:
        if args.calibrate_run not in (bases := store.launch_bases()):
            raise SpecwiseError(
                f"{args.db}: no --launch run {args.calibrate_run!r}; the launch runs here: "
                + (", ".join(bases[-8:]) or "none (bench --launch FILE --calibrate makes one)")
            )
        cal = calibrate(store, args.calibrate_run)
    finally:
        store.close()
    path = _write_calibration(args, cal)
    print_json({"calibration": cal.to_json(), "calibration_file": str(path)}) if args.json else render_calibration(
        cal, path
    )
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    _refuse_server_flags_with_launch(args)
    _refuse_conflicting_flags(args)
    if args.calibrate and not args.launch:
        raise SpecwiseError("--calibrate needs --launch (or use --calibrate-run RUN_ID on a finished launch run)")
    if args.calibration_out is not None and not (args.calibrate or args.calibrate_run):
        raise SpecwiseError("--calibration-out names the file --calibrate (with --launch) or --calibrate-run writes")
    if args.calibration_out is not None:  # review s60: calibrate --out replaced any file without a word
        refuse_a_foreign_file(args.calibration_out, is_calibration_text, "--calibration-out")
    if args.calibrate_run:
        return _calibrate_stored(args)
    if args.output is not None:
        check_extension(args.output)
    reads = [("--db", args.db), ("--prompts", args.prompts), ("--launch", args.launch)]
    writes = [("--export-jsonl", args.export_jsonl), ("--calibration-out", args.calibration_out)]
    for i, (flag, path) in enumerate([*writes, ("--output", args.output)]):
        if path is not None:
            check_output_file(path, reads)  # before any request: a bad destination must not cost the run
            _check_distinct(flag, path, writes[:i])
    if args.calibrate:
        check_calibratable(args.launch)  # before any server starts: an engine without the counters fails the fit
    _refuse_a_missing_database(args)
    inputs = _read_inputs(args)  # every input read and checked before the database is opened (or created)
    store = ResultStore(args.db)
    run_id = _new_run_id(args)
    try:
        with progress_bar(disable=args.json) as bar:
            doc = _bench(args, run_id, store, _Progress(bar, show_bars=not args.json), inputs)
        notes = held_back_notes(store, doc)
        key_env = args.api_key_env if args.api_key_env is not None else stored_key_env(store, _first_run_id(doc))
    except ServerUnreachable as exc:  # one line: the run is kept, every request unsent (review s59: it said neither)
        resume = f"; the run is kept in {args.db}: once it is up, {_resume_command(args, run_id)} sends them all"
        raise SpecwiseError(exc.text("check --url and that the server is up") + resume) from None
    except ServerLost:
        _say_resume(args, store, run_id, "the server went away", _unwritten(args))
        raise
    except KeyboardInterrupt as exc:
        if _say_resume(args, store, run_id, stop_word(exc), _unwritten(args)):
            raise StopSaid from exc
        raise
    except SpecwiseError:
        raise
    except Exception:
        _say_resume(args, store, run_id, f"run {run_id} stopped by an internal error", _unwritten(args))
        raise
    finally:
        store.close()
    notes += stored_notes(args.db, [c.run_id for c in doc.configs] or [doc.run_id], key_env)
    cal_path = _write_calibration(args, doc.calibration) if doc.calibration is not None else None
    rows = bench_rows(doc)
    if args.output is not None:
        write_text_atomic(args.output, render_table(rows, args.output.suffix))
    if args.json:
        out = doc.to_json()
        if cal_path is not None:
            out["calibration_file"] = str(cal_path)
        if args.output is not None:
            out["output_file"] = str(args.output)
        if notes:
            out["notes"] = notes
        print_json(out)
    elif doc.configs:
        render_comparison(doc, wide=args.wide, notes=notes)
        if doc.calibration is not None:
            render_calibration(doc.calibration, cal_path)
    else:
        render_bench(doc, wide=args.wide, notes=notes)
    if args.output is not None and not args.json:
        print(f"{len(rows)} row{'' if len(rows) == 1 else 's'} (vllm bench serve fields) written to {args.output}")
    if args.export_jsonl is not None and not args.json:  # --json names it as the document's "jsonl"
        print(f"every record written to {args.export_jsonl} (JSON lines)")
    return _exit_status(doc, key_env)


def _first_run_id(doc: BenchDoc) -> str:
    """The stored run of a run against a server, or of a --launch run's first configuration."""
    return doc.configs[0].run_id if doc.configs else doc.run_id


def _check_distinct(flag: str, path: Path, earlier: list[tuple[str, Path | None]]) -> None:
    """Two outputs on one file: the second would overwrite the first."""
    for other_flag, other in earlier:
        if other is not None and (other == path or same_file(path, other)):
            raise SpecwiseError(f"{flag} {path}: is also the {other_flag} file; give each output its own file")


def _exit_status(doc: BenchDoc, key_env: str | None) -> int:
    """2 when no request of the run succeeded: the results are printed and kept first, so what failed is on screen
    and in --db."""
    failed = all_failed(doc, key_env=key_env)
    if failed is not None:
        print(f"specwise bench: error: {failed}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
