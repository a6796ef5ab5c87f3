"""``specwise bench``: load-test an OpenAI-compatible server across request rates, read its spec-decode counters."""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.progress import Progress

from specwise.calibration.from_bench import calibrate
from specwise.cli.common import EXIT_OK, add_json_flag, non_negative_float, positive_float, positive_int, print_json
from specwise.errors import SpecwiseError
from specwise.loadgen.client import ClientConfig
from specwise.loadgen.compare import compare_configs
from specwise.loadgen.launcher import VllmServer, load_launch_file
from specwise.loadgen.runner import BenchPlan, LevelPlan, run_plan
from specwise.loadgen.store import ResultStore
from specwise.loadgen.workload import PromptItem, level_requests, load_prompts, synthetic_prompts
from specwise.report.bench import render_bench, render_calibration, render_comparison
from specwise.sim.distributions import Arrivals


def _rates(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated request rates, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"rates must be > 0, got {text!r}")
    return values


def _concurrency(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"concurrency levels must be >= 1, got {text!r}")
    return values


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="load-test a running server at several request rates; read its spec-decode metrics",
        description="Send the same streamed requests at each request rate to an OpenAI-compatible server, record "
        "every request as it completes (SQLite, resumable), and read vLLM's spec-decode counters from /metrics "
        "before and after each level.",
    )
    p.add_argument("--url", help="server base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--model", help="model name the server serves")
    p.add_argument("--endpoint", choices=("completions", "chat"), default="completions")
    p.add_argument("--rates", type=_rates, default=[1.0, 4.0], help="requests/s per level, e.g. 1,2,4 (default 1,4)")
    p.add_argument(
        "--concurrency",
        type=_concurrency,
        metavar="N[,N...]",
        help="closed-loop levels keeping N requests in flight, instead of --rates",
    )
    p.add_argument(
        "--sweep",
        type=positive_int,
        metavar="N",
        help="probe synchronous and max throughput, then run N rates spread between (instead of --rates)",
    )
    p.add_argument("--requests-per-level", type=positive_int, default=20)
    p.add_argument("--arrivals", choices=("poisson", "gamma", "constant"), default="poisson")
    p.add_argument("--burstiness-cv", type=positive_float, default=1.0, help="gamma arrivals: gap CV")
    p.add_argument("--prompts", type=Path, help="JSONL with 'prompt' (+ optional 'class', 'max_tokens', 'temperature')")
    p.add_argument("--synthetic-words", type=positive_int, default=60, help="length of synthetic prompts (words)")
    p.add_argument("--max-tokens", type=positive_int, default=64)
    p.add_argument("--temperature", type=non_negative_float, default=0.0)
    p.add_argument("--ignore-eos", action="store_true", help="ask the server to generate exactly --max-tokens")
    p.add_argument("--max-concurrency", type=positive_int, default=256)
    p.add_argument("--request-timeout", type=positive_float, default=120.0, help="seconds per request")
    p.add_argument("--metrics-url", help="Prometheus endpoint (default: URL/metrics; 'none' to skip)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="env var holding the API key (never stored)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--slo-ttft", type=positive_float, help="goodput SLO on TTFT (s)")
    p.add_argument("--slo-tpot", type=positive_float, help="goodput SLO on TPOT (s)")
    p.add_argument("--db", type=Path, default=Path("specwise-bench.sqlite"), help="results database")
    p.add_argument("--run-id", help="name for this run (default: random)")
    p.add_argument("--resume", metavar="RUN_ID", help="finish an interrupted run from --db")
    p.add_argument("--export-jsonl", type=Path, metavar="FILE", help="also write every record as JSON lines")
    p.add_argument(
        "--launch",
        type=Path,
        metavar="FILE",
        help="TOML listing vLLM configurations: start each on 127.0.0.1, bench it, stop it, compare",
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="with --launch: fit the simulator's step-time model to the measured steps and report its "
        "predicted-vs-measured TPOT speedup per rate",
    )
    p.add_argument(
        "--calibrate-run",
        metavar="RUN_ID",
        help="calibrate from a finished --launch run kept in --db, without sending requests",
    )
    add_json_flag(p)
    p.set_defaults(handler=run)


def _config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    if not args.url or not args.model:
        raise SpecwiseError("--url and --model are required (or --resume RUN_ID)")
    if not args.url.startswith(("http://", "https://")):
        raise SpecwiseError(f"--url {args.url!r}: expected http://HOST:PORT")
    if args.prompts:
        prompts = [asdict(p) for p in load_prompts(args.prompts)]
    else:
        prompts = [asdict(p) for p in synthetic_prompts(args.requests_per_level, args.synthetic_words, args.seed)]
    metrics_url = None if args.metrics_url == "none" else (args.metrics_url or args.url.rstrip("/") + "/metrics")
    return {
        "url": args.url,
        "model": args.model,
        "endpoint": args.endpoint,
        "rates": args.rates,
        "concurrency": args.concurrency,
        "sweep": args.sweep,
        "requests_per_level": args.requests_per_level,
        "arrivals": args.arrivals,
        "cv": args.burstiness_cv,
        "prompts": prompts,
        "max_tokens": args.max_tokens,
        "temperature": args.temperature,
        "ignore_eos": args.ignore_eos,
        "max_concurrency": args.max_concurrency,
        "timeout": args.request_timeout,
        "metrics_url": metrics_url,
        "api_key_env": args.api_key_env,
        "seed": args.seed,
        "slo_ttft": args.slo_ttft,
        "slo_tpot": args.slo_tpot,
    }


def plan_from_config(c: dict[str, Any]) -> BenchPlan:
    prompts = [PromptItem(**p) for p in c["prompts"]]
    concurrency = c.get("concurrency")
    steps: list[tuple[float | None, int | None]]
    if c.get("sweep"):
        # guidellm-style: a synchronous probe, a throughput probe, then rates spread between the two.
        steps = [(None, 1), (None, min(c["max_concurrency"], c["requests_per_level"]))]
        steps += [(rate, None) for rate in c.get("sweep_rates", [])]
    elif concurrency:
        steps = [(None, n) for n in concurrency]
    else:
        steps = [(rate, None) for rate in c["rates"]]
    levels = tuple(
        LevelPlan(
            i,
            rate,
            tuple(
                level_requests(prompts, i, c["requests_per_level"], c["max_tokens"], c["temperature"], c["ignore_eos"])
            ),
            conc,
        )
        for i, (rate, conc) in enumerate(steps)
    )
    client = ClientConfig(
        base_url=c["url"],
        model=c["model"],
        endpoint=c["endpoint"],
        api_key_env=c["api_key_env"],
        request_timeout_s=c["timeout"],
        read_timeout_s=min(30.0, c["timeout"]),
    )
    return BenchPlan(
        client=client,
        levels=levels,
        arrivals=Arrivals(c["arrivals"], 1.0, c["cv"]),
        seed=c["seed"],
        max_concurrency=c["max_concurrency"],
        metrics_url=c["metrics_url"],
        slo_ttft_s=c["slo_ttft"],
        slo_tpot_s=c["slo_tpot"],
    )


def _execute(
    store: ResultStore, run_id: str, config: dict[str, Any], args: argparse.Namespace, label: str
) -> list[dict[str, Any]]:
    if config.get("sweep") and "sweep_rates" not in config:
        probes = _run_levels(store, run_id, config, args, f"{label} probes")
        config = {**config, "sweep_rates": sweep_rates(probes[0], probes[1], int(config["sweep"]))}
        store.update_config(run_id, config)  # a resumed run reuses these rates
    results = _run_levels(store, run_id, config, args, label)
    store.set_status(run_id, "complete")
    return results


def sweep_rates(sync: dict[str, Any], throughput: dict[str, Any], count: int) -> list[float]:
    """``count`` rates spread evenly between the synchronous and the throughput probes' request rates."""
    low, high = sync["request_rate_per_s"], throughput["request_rate_per_s"]
    if not low > 0 or not high > 0:
        raise SpecwiseError("sweep: a probe completed no request; check the server (see the failures above)")
    high = max(high, low * 1.01)
    return [low + (high - low) * (i + 1) / (count + 1) for i in range(count)]


def _run_levels(
    store: ResultStore, run_id: str, config: dict[str, Any], args: argparse.Namespace, label: str
) -> list[dict[str, Any]]:
    plan = plan_from_config(config)
    if args.json:
        results = asyncio.run(run_plan(plan, store, run_id))
    else:
        total = sum(len(lp.requests) for lp in plan.levels)
        with Progress(transient=True) as bar:
            task = bar.add_task(label, total=total)
            base = {lp.level: i * len(lp.requests) for i, lp in enumerate(plan.levels)}

            def tick(level: int, done: int, _total: int, acceptance: float | None) -> None:
                live = f", acceptance {acceptance:.2f}" if acceptance is not None else ""
                bar.update(task, completed=base[level] + done, description=f"{label} level {level}{live}")

            results = asyncio.run(run_plan(plan, store, run_id, progress=tick))
    return [r.to_dict() for r in results]


def _new_run(store: ResultStore, run_id: str, config: dict[str, Any], db: Path) -> None:
    try:
        store.create_run(run_id, time.time(), config)
    except sqlite3.IntegrityError:
        raise SpecwiseError(f"{db}: run {run_id!r} exists; use --resume {run_id} or another --run-id") from None


def _launch_all(args: argparse.Namespace, store: ResultStore) -> dict[str, Any]:
    launch = load_launch_file(args.launch)
    base_id = args.run_id or uuid.uuid4().hex[:8]
    runs = []
    for server_cfg in launch.configs:
        run_id = f"{base_id}-{server_cfg.name}"
        log = args.db.parent / f"{run_id}.vllm.log"
        with VllmServer(launch, server_cfg, log) as url:
            args.url, args.model = url, launch.served_model_name
            config = {
                **_config_from_args(args),
                "launch": {
                    "name": server_cfg.name,
                    "speculative_config": server_cfg.speculative_config,
                    "server_args": [*launch.extra_args, *server_cfg.extra_args],
                },
            }
            _new_run(store, run_id, config, args.db)
            levels = _execute(store, run_id, config, args, f"{server_cfg.name}")
        runs.append(
            {
                "name": server_cfg.name,
                "run_id": run_id,
                "speculative_config": server_cfg.speculative_config,
                "server_log": str(log),
                "levels": levels,
            }
        )
    return {
        "run_id": base_id,
        "db": str(args.db),
        "model": launch.model,
        "configs": runs,
        "comparison": compare_configs(runs),
    }


def run(args: argparse.Namespace) -> int:
    if args.calibrate and not args.launch:
        raise SpecwiseError("--calibrate needs --launch (or use --calibrate-run RUN_ID on a finished launch run)")
    if args.calibrate_run:
        if not args.db.exists():
            raise SpecwiseError(f"{args.db}: no results database")
        store = ResultStore(args.db)
        try:
            cal_doc: dict[str, Any] = {"calibration": calibrate(store, args.calibrate_run)}
        finally:
            store.close()
        print_json(cal_doc) if args.json else render_calibration(cal_doc["calibration"])
        return EXIT_OK
    store = ResultStore(args.db)
    run_id = args.resume or args.run_id or uuid.uuid4().hex[:12]
    doc: dict[str, Any]
    try:
        if args.launch:
            doc = _launch_all(args, store)
            if args.calibrate:
                doc["calibration"] = calibrate(store, doc["run_id"])
        else:
            if args.resume:
                config = store.run_config(run_id)
            else:
                config = _config_from_args(args)
                _new_run(store, run_id, config, args.db)
            levels = _execute(store, run_id, config, args, f"run {run_id}")
            doc = {
                "run_id": run_id,
                "db": str(args.db),
                "url": config["url"],
                "model": config["model"],
                "levels": levels,
            }
            if args.export_jsonl:
                args.export_jsonl.write_text("".join(line + "\n" for line in store.export_jsonl(run_id)))
                doc["jsonl"] = str(args.export_jsonl)
    except KeyboardInterrupt:
        print(f"interrupted: finished requests are saved in {args.db}; continue with --resume RUN_ID")
        raise
    finally:
        store.close()
    if args.json:
        print_json(doc)
    elif args.launch:
        render_comparison(doc)
        if "calibration" in doc:
            render_calibration(doc["calibration"])
    else:
        render_bench(doc)
    return EXIT_OK
