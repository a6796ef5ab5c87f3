"""Terminal view of one monitor evaluation."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specwise.monitor.fleet import ReplicaWindow
from specwise.monitor.loop import Target
from specwise.monitor.predicted import SlowdownModel
from specwise.monitor.report import FleetReport, MonitorReport, ServerWindow
from specwise.monitor.vet import FAULTS
from specwise.monitor.window import WindowStats
from specwise.report.console import console
from specwise.report.tables import print_table


def _f(x: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if x is None else fmt.format(x)


def _tpot_p50(stats: WindowStats | None) -> float | None:
    return (stats.latency.get("tpot_s") or {}).get("p50") if stats else None


def _server_row(s: ServerWindow) -> list[str]:
    st = s.stats
    if s.error is not None or st is None:
        return [s.url, "[red]error[/red]", *[""] * 7]  # the message follows the table
    tpot = _tpot_p50(st)
    return [
        s.url,
        _f(st.acceptance_rate),
        _f(st.mean_acceptance_length),
        " ".join(f"{r:.2f}" for r in st.per_position_acceptance) or "-",
        _f(st.generation_tokens_per_s, "{:.1f}"),
        _f(st.requests_per_s),
        _f(st.running, "{:.0f}"),
        _f(st.waiting, "{:.0f}"),
        "-" if tpot is None else f"{tpot * 1e3:.1f}",
    ]


def render_monitor(report: MonitorReport, out: Console | None = None, wide: bool = False) -> None:
    out = console(out)
    table = Table(title=f"speculative decoding over the last {report.window_s:.1f} s", title_justify="left")
    for col in ("server", "accept", "AL", "per-position", "gen tok/s", "req/s", "running", "waiting", "TPOT p50 ms"):
        table.add_column(
            col,
            justify="left" if col in ("server", "per-position") else "right",
            overflow="fold" if col == "per-position" else "ellipsis",
        )
    for s in report.servers:
        table.add_row(*_server_row(s))
    print_table(out, table, wide=wide)
    render_predictor(report.predictor, out)
    for s in report.servers:
        if s.error is not None and not s.alerts:  # otherwise the alerts say why (a target down, bad counters)
            out.print(f"[red]error[/red] {s.url}: {s.error.removeprefix(s.url + ': ')}")
        for a in s.alerts:
            out.print(f"[red]{a.severity}[/red] {s.url}: {escape(a.message)}")
        for note in s.stats.notes if s.stats else ():
            out.print(f"[yellow]note[/yellow] {s.url}: {escape(note)}")


def predictor_lines(slowdown: SlowdownModel) -> list[str]:
    """The predictor behind the predicted-slowdown check with its band, then each warning every result of it
    carries (simulate's and advise's wording), as plain text (the loop's stderr)."""
    return [f"predicted-slowdown check: {slowdown.describe()}", *(f"warning: {w}" for w in slowdown.warnings())]


def render_predictor(slowdown: SlowdownModel | None, out: Console) -> None:
    if slowdown is None:
        return
    out.print(f"predicted-slowdown check: {escape(slowdown.describe())}", highlight=False)
    for w in slowdown.warnings():
        out.print(f"[yellow]warning[/yellow]: {escape(w)}", highlight=False)


def _labels(targets: Sequence[Target], wide: bool) -> list[str]:
    """How the live table names each target: ``host:port`` (its ``instance``, as Prometheus names it), never an
    ellipsised scheme; the whole (redacted) URL with ``wide``, or where two targets share a host:port."""
    short = [t.instance or t.url for t in targets]
    if wide or len(set(short)) < len(short):
        return [t.url for t in targets]
    return short


def live_table(targets: Sequence[Target], window_s: float, wide: bool = False) -> Table:
    """The loop's live terminal view: one row per target, its last window and its open alerts. The server column
    is never cut (host:port keeps its width; a --wide URL folds), so rows can always be told apart."""
    labels = _labels(targets, wide)
    table = Table(
        title=f"specwise monitor: last {window_s:g} s per server",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for col in ("server", "state", "accept", "AL", "tok/s", "run", "wait", "TPOT ms", "alerts"):
        table.add_column(
            col,
            justify="left" if col in ("server", "state", "alerts") else "right",
            overflow="fold",
            min_width=max((len(x) for x in labels), default=6) if col == "server" and not wide else None,
        )
    for t, label in zip(targets, labels, strict=True):
        s = t.last
        tpot = _tpot_p50(s)
        table.add_row(
            escape(label),
            "[red]down[/]" if t.failing else "[green]up[/]",
            _f(s.acceptance_rate if s else None),
            _f(s.mean_acceptance_length if s else None),
            _f(s.generation_tokens_per_s if s else None, "{:.1f}"),
            _f(s.running if s else None, "{:.0f}"),
            _f(s.waiting if s else None, "{:.0f}"),
            _f(tpot * 1e3 if tpot is not None else None, "{:.1f}"),
            ", ".join(sorted(t.alerts.active)) or "-",
        )
    return table


def _replica_fault(r: ReplicaWindow) -> str:
    """What keeps a replica's counts out of the roll-up, in a word or two (details: its alerts and notes)."""
    words = [FAULTS.get(kind, kind) for kind, _ in r.faults] + (["missing series"] if r.missing_series else [])
    return escape(", ".join(words)) if words else "-"


def render_fleet(report: FleetReport, out: Console | None = None, wide: bool = False) -> None:
    """Per model: the pooled acceptance and AL and the worst replicas; then one row per replica; then alerts."""
    out = console(out)
    w = report.window
    models = Table(
        title=f"fleet via {report.prometheus}: the last {w.window_s:g} s per model ({w.queries} queries)",
        title_justify="left",
    )
    for col in ("model", "replicas", "drafts", "accept", "AL", "per-position", "worst replicas (accept)"):
        models.add_column(
            col, justify="left" if col in ("model", "per-position", "worst replicas (accept)") else "right"
        )
    for m in w.models:
        c = m.counts
        models.add_row(
            m.model_name,
            f"{m.replicas} (+{len(m.left_out)} left out)" if m.left_out else str(m.replicas),
            f"{c.drafts:.0f}" if m.drafts_counted else "-",
            _f(c.acceptance_rate),
            _f(c.mean_acceptance_length),
            " ".join(f"{r:.2f}" for r in c.per_position_rates) or "-",
            ", ".join(f"{r.instance} ({_f(r.acceptance_rate)})" for r in m.worst) or "-",
        )
    print_table(out, models, wide=wide)
    replicas = Table(title="per replica", title_justify="left")
    for col in ("instance", "model", "drafts", "accept", "AL", "per-position", "running", "fault"):
        replicas.add_column(col, justify="left" if col in ("instance", "model", "per-position", "fault") else "right")
    for r in w.replicas:
        own = r.counts
        replicas.add_row(
            r.instance,
            r.model_name,
            _f(own.drafts if own and r.drafts_counted else None, "{:.0f}"),
            _f(r.acceptance_rate),
            _f(r.mean_acceptance_length),
            " ".join(f"{x:.2f}" for x in own.per_position_rates) if own and own.per_position_rates else "-",
            _f(r.running, "{:.0f}"),
            _replica_fault(r),
        )
    print_table(out, replicas, wide=wide)
    for r in w.replicas:
        for note in r.notes:
            out.print(f"note: {escape(r.instance)} ({escape(r.model_name)}): {escape(note)}")
    if report.history:
        out.print(f"history: {len(report.history)} windows back-filled from Prometheus")
        for name in sorted({m.model_name for h in report.history for m in h.models}):
            rates = [m.counts.acceptance_rate for h in report.history for m in h.models if m.model_name == name]
            seen = [r for r in rates if r is not None]
            if seen:
                out.print(f"  {name}: acceptance {min(seen):.2f}..{max(seen):.2f} over {len(seen)} windows")
    render_predictor(report.predictor, out)
    for instance, a in report.alerts:
        out.print(f"[red]{a.severity}[/red] {instance}: {escape(a.message)}")
