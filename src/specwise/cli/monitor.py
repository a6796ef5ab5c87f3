"""``specwise monitor``: read vLLM's /metrics and say whether speculative decoding still pays.

``--once`` evaluates one window (two scrapes ``--window`` seconds apart per server, default ``--interval``) and
exits; without it the monitor loops, writes every window to SQLite (``--db``, pruned after ``--retention``) and
prints each alert transition (and each target going down, restart and fault) once, as a JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.live import Live

from specwise.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    add_json_flag,
    add_predictor_flags,
    add_wide_flag,
    alert_rate,
    argparse_type,
    duration_s,
    http_url,
    metrics_url,
    non_empty,
    path_arg,
    positive_float,
    positive_int,
    predictor_override,
    print_json,
    prometheus_duration,
    reader_gone,
    refuse_without_scenario,
    scenario_file,
    signal_name,
)
from specwise.errors import SpecwiseError, redact_url
from specwise.methods import speculative_tokens
from specwise.metrics.exposition import Scrape
from specwise.monitor.dashboard import Dashboard
from specwise.monitor.events import MonitorEvent
from specwise.monitor.fetch import DEFAULT_MAX_BYTES, Scraper, endpoint, redact, with_metrics_path
from specwise.monitor.fleet import FAMILIES, FleetWindow
from specwise.monitor.loop import (
    TARGET_DOWN,
    Target,
    evaluate_once,
    fleet_findings,
    server_window,
    window_parser,
)
from specwise.monitor.predicted import SlowdownModel, slowdown_model
from specwise.monitor.prometheus_source import FleetSource, Judge, fleet_history, fleet_window
from specwise.monitor.report import FleetReport, MonitorReport
from specwise.monitor.rules import Thresholds
from specwise.monitor.sinks import Background, MetricsExporter, event_line, json_lines, webhook
from specwise.monitor.store import MonitorStore
from specwise.monitor.summary import LoopTally, closing_line, once_line, start_line, watched
from specwise.netaddr import is_loopback
from specwise.report.console import console
from specwise.report.monitor import live_table, predictor_lines, render_fleet, render_monitor


def register(sub: Any) -> None:
    p = sub.add_parser(
        "monitor",
        help="evaluate speculative decoding on running vLLM servers from their /metrics",
        description="Scrape each server's /metrics twice, --window (default --interval) seconds apart; report "
        "acceptance rate and length, per-position acceptance, token and request rates, latency quantiles, alerts. "
        "Exit status: 0 no alert, 1 an alert fired (low acceptance or AL, position_collapse: a later draft "
        "position accepting almost nothing, with --scenario the predicted net slowdown, a target down while another "
        "answers, a server restart, impossible counters or non-finite samples; loop mode: an alert or fault still "
        "open or a target down at the end, never up included, or a restart during the run), 2 bad input or (--once, "
        "--prometheus) no server answered, 3 internal error. Loop mode keeps polling a target that is down, from "
        "the start too. Loop mode says what it watches on stderr when it starts and, when it stops (--duration or "
        "Ctrl-C), how many windows it judged and why the exit status is what it is (--once, exiting 1, names the "
        "alerts that fired there); events are JSON lines on stdout, and with --json so is each judged window "
        '({"event": "window", "url", "stats", "alerts"}).',
    )
    p.add_argument(
        "--url",
        action="append",
        type=metrics_url,
        default=[],
        metavar="URL",
        help="a server's metrics URL, e.g. http://127.0.0.1:8000/metrics (repeatable; with no path, /metrics)",
    )
    _prometheus_flags(p)
    p.add_argument("--once", action="store_true", help="evaluate one window and exit")
    p.add_argument("--live", action="store_true", help="loop mode: a live terminal table (events print above it)")
    p.add_argument(
        "--scenario",
        type=scenario_file,
        metavar="FILE",
        help="a simulate scenario of this deployment: alert when its perf model predicts speculation costs TPOT "
        "at the live batch size and AL",
    )
    p.add_argument(
        "--k",
        type=argparse_type(speculative_tokens),  # review s60: --k 100000 was priced
        help="with --scenario: the deployed num_speculative_tokens (default: the live k the counters show, draft "
        "tokens / drafts; the scenario's largest until they show one); a k outside the scenario's [speculation].k "
        "is priced all the same, with a warning",
    )
    _loop_flags(p)
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --serve / --serve-metrics beyond loopback (127.0.0.0/8, ::1 as [::1]:PORT, localhost)",
    )
    p.add_argument("--interval", type=positive_float, default=5.0, help="seconds between scrapes")
    p.add_argument(
        "--scrape-timeout",
        type=positive_float,
        metavar="S",
        help="total deadline of one scrape: connect, headers and body (default: 80%% of --interval, at most 10 s)",
    )
    p.add_argument(
        "--max-page-bytes",
        type=positive_int,
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help="refuse a /metrics page larger than this (default 16 MiB)",
    )
    p.add_argument(
        "--window",
        type=positive_float,
        help="seconds each evaluation covers (rates and quantiles over the last WINDOW; default: one interval; "
        "with --prometheus: 60 s or one interval, whichever is longer); with --once --url, the two scrapes are "
        "WINDOW seconds apart",
    )
    p.add_argument("--min-acceptance", type=alert_rate, default=0.5, help="alert below this rate, in (0, 1)")
    p.add_argument(
        "--min-drafts",
        type=positive_float,
        default=50.0,
        help="drafts a window needs before the acceptance rules judge it (default 50; a window with fewer says so "
        "in a note)",
    )
    add_predictor_flags(p)
    add_json_flag(p)
    add_wide_flag(p)
    p.set_defaults(handler=run)


def _loop_flags(p: argparse.ArgumentParser) -> None:
    """The flags only loop mode reads (:data:`LOOP_ONLY`: --once refuses them)."""
    p.add_argument(
        "--duration", type=positive_float, help="loop mode: stop after this many seconds (at least --interval)"
    )
    p.add_argument(
        "--db", type=path_arg, help="loop mode: history database (default: $XDG_DATA_HOME/specwise/monitor.sqlite)"
    )
    p.add_argument(
        "--retention", type=positive_float, help=f"loop mode: seconds of history to keep (default {RETENTION_S:g})"
    )
    p.add_argument(
        "--webhook", type=http_url, metavar="URL", help="loop mode: POST each alert event here as JSON (3 tries)"
    )
    p.add_argument("--serve-metrics", metavar="HOST:PORT", help="loop mode: expose specwise_* gauges at /metrics")
    p.add_argument(
        "--serve",
        metavar="HOST:PORT",
        help="loop mode: a live dashboard page (charts, active alerts) at http://HOST:PORT/",
    )


def _prometheus_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prometheus",
        type=http_url,
        metavar="URL",
        help="read the fleet from this Prometheus server's HTTP API instead, e.g. http://127.0.0.1:9090: "
        "increase() over the window by (model_name, instance), one query per metric family; a per-model roll-up "
        "and the worst replicas",
    )
    p.add_argument(
        "--instance",
        action="append",
        default=[],
        type=non_empty,  # an unset variable: refused, not a filter on an empty instance label
        help="with --prometheus: only this instance label (repeatable; default: every instance with vllm:* series)",
    )
    p.add_argument(
        "--lookback",
        type=prometheus_duration,
        metavar="DURATION",
        help="with --prometheus: back-fill this much history (e.g. 1h) from Prometheus on start, so the first "
        "report, the history database and the alerts start with it",
    )


RETENTION_S = 7 * 86400.0
# Flags only the loop reads: --once refuses them instead of ignoring them (a cron job's --webhook never posting).
LOOP_ONLY = ("webhook", "serve", "serve_metrics", "live", "duration", "db", "retention")


def _refuse_loop_flags(args: argparse.Namespace) -> None:
    given = [f"--{name.replace('_', '-')}" for name in LOOP_ONLY if getattr(args, name) not in (None, False)]
    if given:
        it = "it" if len(given) == 1 else "them"
        raise SpecwiseError(f"{' and '.join(given)}: loop mode only; drop {it} or --once")


def _default_db() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "specwise" / "monitor.sqlite"


def _slowdown(args: argparse.Namespace) -> SlowdownModel | None:
    refuse_without_scenario(args)
    if not args.scenario:
        return None
    from specwise.scenario import load_scenario

    scenario = load_scenario(args.scenario, predictor_override(args), reader="monitor --scenario")
    # a --k the scenario does not model is priced and said so (SlowdownModel.warnings), as a live k is; only
    # export, whose rules would fix extrapolated bands, refuses it (specwise.monitor.predicted.check_modelled_k)
    return slowdown_model(scenario, args.k)


def _scrape_timeout(args: argparse.Namespace) -> float:
    """Each scrape's total deadline: --scrape-timeout, else 80% of the interval (at most 10 s), so a hung server
    never pushes a round past the next tick."""
    return float(args.scrape_timeout) if args.scrape_timeout else min(10.0, 0.8 * args.interval)


def _emitter(
    args: argparse.Namespace, live: Live | None
) -> tuple[Callable[[MonitorEvent], None], Callable[[MonitorEvent], None], Background | None]:
    """Events go to stdout as JSON lines (above the live table with --live) and to the --webhook on its own
    thread (a slow webhook never stalls scraping). Also returns the stdout half alone (for --json's window lines,
    which no webhook receives)."""
    log = (
        json_lines(sys.stdout)
        if live is None
        else (lambda event: live.console.print(event_line(event), soft_wrap=True, markup=False))
    )
    hook = Background(webhook(args.webhook, on_failure=log), on_drop=log) if args.webhook else None

    def emit(event: MonitorEvent) -> None:
        log(event)
        if hook is not None:
            hook(event)

    return emit, log, hook


def _say(line: str) -> None:
    print(f"specwise monitor: {line}", file=sys.stderr, flush=True)


def _loop(args: argparse.Namespace, thresholds: Thresholds, slowdown: SlowdownModel | None) -> int:
    exporter = _exporter(args)  # validate the bind addresses before creating anything
    board = _dashboard(args)
    window = _window_s(args)
    if window < args.interval:
        raise SpecwiseError(f"--window {window:g}: must be at least --interval ({args.interval:g} s)")
    db = args.db or _default_db()
    store = MonitorStore(db, args.retention or RETENTION_S)
    fleet = FleetSource(args.prometheus, window, args.instance, _scrape_timeout(args)) if args.prometheus else None
    scrapes = max(1, round(window / args.interval))
    targets = [Target(url, window_scrapes=scrapes) for url in args.url] if fleet is None else fleet.targets
    scraper = None if fleet is not None else Scraper(window_parser(), _scrape_timeout(args), args.max_page_bytes)
    live = Live(live_table(targets, window, args.wide), console=console(), auto_refresh=False) if args.live else None
    emit, log, hook = _emitter(args, live)
    tally = LoopTally(log if args.json else None)
    judge = Judge(thresholds, store, emit, slowdown, tally.on_window)
    shown = redact_url(args.prometheus) if args.prometheus else None
    _say(start_line(watched(len(targets), shown), args.interval, window, args.duration, db))
    _announce_predictor(slowdown)
    start = time.monotonic()
    stopped: str | None = None  # what stopped the loop before its --duration: Ctrl-C or SIGTERM
    if live is not None:
        live.start()
    try:
        if fleet is not None and args.lookback:
            lookback = duration_s(args.lookback)
            fleet.backfill(lookback, time.time(), max(args.interval, lookback / 1000), judge)
        _rounds(args, start, targets, fleet, scraper, judge, (exporter, board, live), window)
    except KeyboardInterrupt as exc:  # review s60: SIGTERM was called "Ctrl-C"
        stopped = signal_name(exc)
    finally:
        if (cut := _close(live, hook, store, scraper, exporter, board)) is not None:
            stopped = stopped or cut
            _say(f"{cut} while delivering the webhook's queued events: those not yet sent were dropped")
    if fleet is not None and not fleet.server.answered:  # --url targets down all along are closing-line reasons
        raise SpecwiseError("no server answered: " + (fleet.server.failing or "no query completed")[:400])
    _say(closing_line(targets, tally.windows, time.monotonic() - start, stopped))
    return EXIT_NEGATIVE if any(t.alerting for t in targets) else EXIT_OK


def _announce_predictor(slowdown: SlowdownModel | None) -> None:
    """Loop mode, at the start: the predictor behind the predicted-slowdown check and the warnings every result of
    it carries, on stderr and as one JSON line on stdout (``{"event": "predictor", "predictor", "warnings"}``)."""
    if slowdown is None:
        return
    for said in predictor_lines(slowdown):
        _say(said)
    event = {"event": "predictor", "predictor": slowdown.to_json(), "warnings": list(slowdown.warnings())}
    print(json.dumps(event), flush=True)


Views = tuple[MetricsExporter | None, Dashboard | None, Live | None]


def _rounds(
    args: argparse.Namespace,
    start: float,
    targets: list[Target],
    fleet: FleetSource | None,
    scraper: Scraper | None,
    judge: Judge,
    views: Views,
    window: float,
) -> None:
    """Every --interval (a round that overran skips the ticks it missed): one round of scrapes (or one fleet
    window), then the views updated; until --duration (or Ctrl-C)."""
    exporter, board, live = views
    end = start + args.duration if args.duration else None
    tick = start
    while True:
        left = _scrape_timeout(args) if end is None else min(_scrape_timeout(args), end - time.monotonic())
        if fleet is not None:
            fleet.round(time.time(), judge)
        else:
            evaluate_once(
                targets,
                judge.thresholds,
                judge.store,
                judge.emit,
                slowdown=judge.slowdown,
                scraper=scraper,
                deadline_s=max(0.05, left),
                on_window=judge.on_window,
            )
        if exporter is not None:
            exporter.update(targets)
        if board is not None:
            board.update(targets, time.time())
        if live is not None:
            live.update(live_table(targets, window, args.wide), refresh=True)
        tick, now = tick + args.interval, time.monotonic()
        while tick < now:  # a round that overran skips the ticks it missed instead of bunching them
            tick += args.interval
        if (end is not None and tick > end) or reader_gone():  # the reader of stdout went (| head): stop, as a pipe's
            break  # writer does
        time.sleep(tick - now)


def _close(
    live: Live | None,
    hook: Background | None,
    store: MonitorStore,
    scraper: Scraper | None,
    exporter: MetricsExporter | None,
    board: Dashboard | None,
) -> str | None:
    """Stop everything the loop started; what cut the webhook's drain short (Ctrl-C, SIGTERM), None where nothing
    did (the rest is still closed: the history database, the sockets)."""
    if live is not None:
        live.stop()
    drained = None
    if hook is not None:
        try:
            hook.close()
        except KeyboardInterrupt as exc:  # a (second) Ctrl-C or a SIGTERM while up to 10 s of deliveries drain
            drained = signal_name(exc)
    store.close()
    if scraper is not None:
        scraper.close()
    if exporter is not None:
        exporter.close()
    if board is not None:
        board.close()
    return drained


def _window_s(args: argparse.Namespace) -> float:
    """Seconds each evaluation covers: --window; else one interval (with --prometheus at least 60 s, so the
    range holds several of Prometheus' scrapes of each replica)."""
    if args.window:
        return float(args.window)
    return max(args.interval, 60.0) if args.prometheus else float(args.interval)


def _bind(flag: str, value: str, allow_remote: bool) -> tuple[str, int]:
    """HOST:PORT to bind: an IPv6 host as ``[::1]:9400`` (or ``::1:9400``); loopback only unless allowed."""
    host, _, port = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host or not port.isdigit() or "[" in host or "]" in host:
        raise SpecwiseError(f"{flag} {value!r}: expected HOST:PORT, e.g. 127.0.0.1:9400 or [::1]:9400")
    if int(port) > 65535:
        raise SpecwiseError(f"{flag} {value}: port must be 0-65535")
    if not is_loopback(host) and not allow_remote:
        raise SpecwiseError(f"{flag} {host}: binding beyond loopback needs --allow-remote")
    return host, int(port)


def _why(exc: OSError | OverflowError) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc).rstrip(".")


def _exporter(args: argparse.Namespace) -> MetricsExporter | None:
    if not args.serve_metrics:
        return None
    host, port = _bind("--serve-metrics", args.serve_metrics, args.allow_remote)
    try:
        exporter = MetricsExporter(host, port)
    except (OSError, OverflowError) as exc:
        raise SpecwiseError(f"--serve-metrics {args.serve_metrics}: cannot bind: {_why(exc)}") from None
    print(json.dumps({"event": "exporter", "url": exporter.url}), flush=True)
    return exporter


def _dashboard(args: argparse.Namespace) -> Dashboard | None:
    if not args.serve:
        return None
    host, port = _bind("--serve", args.serve, args.allow_remote)
    try:
        board = Dashboard(host, port, refresh_s=min(args.interval, 5.0))
    except (OSError, OverflowError) as exc:
        raise SpecwiseError(f"--serve {args.serve}: cannot bind: {_why(exc)}") from None
    print(json.dumps({"event": "dashboard", "url": board.url}), flush=True)
    return board


def _fetch_round(args: argparse.Namespace, scraper: Scraper) -> list[Scrape | SpecwiseError]:
    """One scrape of every --url (at once), results in --url order."""
    return scraper.fetch_all(args.url, _scrape_timeout(args))


def _resolve_targets(args: argparse.Namespace) -> None:
    if args.prometheus:
        if args.url:
            raise SpecwiseError("give --url (scrape servers) or --prometheus (read a Prometheus server), not both")
        if not args.prometheus.startswith(("http://", "https://")):
            raise SpecwiseError(f"--prometheus {redact_url(args.prometheus)!r}: expected http://HOST:9090")
        return
    if args.lookback or args.instance:
        raise SpecwiseError("--lookback and --instance need --prometheus")
    if not args.url:
        raise SpecwiseError("give at least one --url http://HOST:PORT/metrics, or --prometheus http://HOST:9090")
    for i, url in enumerate(args.url):
        if not url.startswith(("http://", "https://")):
            raise SpecwiseError(f"--url {redact_url(url)!r}: expected http://HOST:PORT/metrics")
        endpoint(url)  # a malformed URL is bad input now, not a failing target later
        fixed = with_metrics_path(url)
        if fixed is not None:
            _say(f"--url {redact_url(url)} has no path: scraping {redact_url(fixed)}")
            args.url[i] = fixed
    twice = sorted({u for u in args.url if args.url.count(u) > 1})
    if twice:  # review s60: one server scraped and listed twice, its alerts counted twice
        raise SpecwiseError(f"--url {redact_url(twice[0])} is given twice: give each server once")


def _once(args: argparse.Namespace, thresholds: Thresholds, slowdown: SlowdownModel | None) -> MonitorReport:
    """Two scrapes per server (every server at once), --window seconds apart (default --interval): one window
    each."""
    scraper = Scraper(window_parser(), _scrape_timeout(args), args.max_page_bytes)
    try:
        first = _fetch_round(args, scraper)
        t0 = time.monotonic()
        time.sleep(_window_s(args))
        second = _fetch_round(args, scraper)
        window, second_at = time.monotonic() - t0, time.time()  # unix time dates a restart (vLLM's _created)
    finally:
        scraper.close()
    servers = tuple(
        server_window(redact_url(url), *pair, window, thresholds, slowdown, after_at=second_at)
        for url, pair in zip(args.url, zip(first, second, strict=True), strict=True)
    )
    return MonitorReport(window, servers, slowdown)


def _fleet_once(args: argparse.Namespace, thresholds: Thresholds, slowdown: SlowdownModel | None) -> FleetReport:
    """The fleet's last window from Prometheus (no waiting: Prometheus already holds it), and with --lookback
    the windows before it."""
    window, now, timeout = _window_s(args), time.time(), _scrape_timeout(args)
    fleet = fleet_window(args.prometheus, window, now, args.instance, timeout)
    if not fleet.replicas:
        raise SpecwiseError(
            f"{redact_url(args.prometheus)}: no instance has vLLM spec-decode counters over the last {window:g} s"
        )
    history: tuple[FleetWindow, ...] = ()
    if args.lookback:
        lookback = duration_s(args.lookback)
        history = fleet_history(
            args.prometheus, window, now - lookback, now, max(window, lookback / 1000), args.instance, timeout
        )
        fleet = replace(fleet, queries=fleet.queries + len(FAMILIES))
    alerts = fleet_findings(fleet, thresholds, slowdown)
    return FleetReport(redact_url(args.prometheus), fleet, alerts, history, slowdown)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except SpecwiseError as exc:
        raise SpecwiseError(redact(str(exc))) from None  # a URL's credentials never reach stderr


def _run(args: argparse.Namespace) -> int:
    _resolve_targets(args)
    if args.once:
        _refuse_loop_flags(args)
    elif args.duration is not None and not args.prometheus and args.duration < args.interval:
        # a window is two scrapes --interval apart: a shorter run judges nothing and would exit 0 as if all were well
        raise SpecwiseError(
            f"--duration {args.duration:g} s ends before the second scrape ({args.interval:g} s, --interval): no "
            f"window could be judged; give --duration {args.interval:g} or more, or --once for one reading"
        )
    slowdown = _slowdown(args)
    thresholds = Thresholds(min_acceptance_rate=args.min_acceptance, min_drafts=args.min_drafts)
    if not args.once:
        return _loop(args, thresholds, slowdown)
    if args.prometheus:
        fleet = _fleet_once(args, thresholds, slowdown)
        if args.json:
            print_json(fleet.to_json())
        else:
            render_fleet(fleet, wide=args.wide)
        return _once_exit([(f.rule, instance) for instance, f in fleet.alerts])
    report = _once(args, thresholds, slowdown)
    errors = [s.error for s in report.servers if s.error is not None]
    answered = any(s.error is None or any(a.rule != TARGET_DOWN for a in s.alerts) for s in report.servers)
    if not answered:  # a server that answered with impossible counters is an alert (exit 1), as beside others
        raise SpecwiseError("; ".join(errors))
    if args.json:
        print_json(report.to_json())
    else:
        render_monitor(report, wide=args.wide)
    return _once_exit([(f.rule, s.url) for s in report.servers for f in s.alerts])


def _once_exit(fired: list[tuple[str, str]]) -> int:
    """--once's exit status: 1 when an alert fired, said in one line on stderr (as loop mode's closing line says
    why it exits 1; stdout keeps the report, or --json's document alone), else 0."""
    if not fired:
        return EXIT_OK
    _say(once_line(fired))
    return EXIT_NEGATIVE
