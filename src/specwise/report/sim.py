"""Terminal views of a simulation sweep and of the analytic speedup."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specwise.acceptance.leviathan import ASSUMES, LEVIATHAN_TABLE4, PREDICTOR, BatchOneSpeedup
from specwise.contracts.sweep import PartialSweep, SweepResult
from specwise.perfmodel.factory import band_text
from specwise.report.console import console
from specwise.report.overload import (
    OVERLOAD_MARK,
    mark,
    overload_footnote,
    speculation_only_loads,
    speedup_overloaded,
)
from specwise.report.tables import print_table, sayer
from specwise.units import fmt_rate

METRIC_LABELS = {
    "e2e": "E2E latency (p50)",
    "tpot": "TPOT (p50)",
    "throughput": "output tokens/s",
    "goodput": "goodput",
}


def render_sweep(doc: SweepResult, out: Console | None = None, wide: bool = False) -> None:
    out = console(out)
    ks = [k for k in doc.k_values if k != 0]
    title = f"{doc.target} on {doc.tp} x {doc.gpu}, speculation: {doc.draft or doc.method}"
    metric = doc.decision_metric
    table = Table(title=escape(f"{title}\nspeedup of {METRIC_LABELS[metric]} vs no speculation"), title_justify="left")
    table.add_column("QPS", justify="right")
    table.add_column("k=0 TPOT ms", justify="right")
    for k in ks:
        table.add_column(f"k={k}", justify="right")
    if doc.schedule_results:
        table.add_column("sched", justify="right")
    table.add_column("best", justify="right")
    for b in doc.baseline:
        q = b.qps
        tpot = "-" if b.tpot_p50_s is None or b.tpot_p50_s != b.tpot_p50_s else f"{b.tpot_p50_s * 1e3:.1f}"
        cells = [f"{q:g}", tpot + mark(b.overloaded)]  # no TPOT: one-token outputs
        best = doc.best_k_by_qps[q]
        for k in ks:
            row = doc.row(q, k)
            s = row.speedup(metric) if row else None
            text = "-" if s is None else f"{s:.2f}" + mark(speedup_overloaded(doc, q, row))
            style = "yellow" if OVERLOAD_MARK in text else "green" if s and s > 1.0 else "red"
            cells.append(f"[bold {style}]{text}[/]" if k == best else f"[{style}]{text}[/]")
        for r in doc.schedule_results:
            if r.qps == q:
                s = r.speedup(metric)
                cells.append(f"{s:.2f}" + mark(speedup_overloaded(doc, q, r)) if s else "-")
        cells.append("-" if doc.speedup_undefined(q) else str(best))
        table.add_row(*cells)
    print_table(out, table, wide=wide)
    say = sayer(out, wide)
    if doc.schedule_results:
        say("sched: the speedup with the scenario's k-by-batch-size schedule ([speculation].k_schedule)", markup=False)
    say(pays_sentence(doc))
    if (undefined := [q for q in doc.qps if doc.speedup_undefined(q)]) and metric == "goodput":
        loads = ", ".join(f"{q:g}" for q in undefined)
        say(
            f"-: at {loads} QPS no request met the SLOs without speculation (goodput 0), so no goodput speedup is "
            "defined there (--json: null; each row's goodput_per_s is given)"
        )
        for q in undefined:
            if (top := doc.only_speculation_has_goodput(q)) is not None:
                say(
                    f"only speculation meets the SLOs at {q:g} QPS: {top.goodput_per_s:.2f} req/s with k={top.k} "
                    "(none without)"
                )
    if (only := speculation_only_sentence(doc)) is not None:
        say(only)
    for line in saturation_lines(doc):
        say(line)
    say(escape(f"predictor: {doc.predictor}; speedups {band_text(doc.band, doc.band_statistic, doc.band_source)}"))
    for w in doc.warnings:
        say(f"[yellow]warning[/yellow]: {escape(w)}")


def render_partial(doc: PartialSweep, out: Console | None = None, wide: bool = False) -> None:
    """The cells an interrupted sweep finished, one row each, marked partial (no decision is drawn from them)."""
    out = console(out)
    metric = doc.decision_metric
    title = (
        f"{doc.scenario}: PARTIAL, interrupted after {doc.cells_done} of {doc.cells_total} simulations\n"
        f"the cells that finished; speedup of {METRIC_LABELS[metric]} vs k=0 at the same QPS"
    )
    table = Table(title=escape(title), title_justify="left")
    for name in ("QPS", "k", "TPOT p50 ms", "E2E p50 s", "output tok/s", "speedup"):
        table.add_column(name, justify="right")
    for r in doc.results:
        s = r.speedup(metric)
        table.add_row(
            f"{r.qps:g}",
            "sched" if r.k is None else str(r.k),
            f"{r.tpot_p50_s * 1e3:.1f}",
            f"{r.e2e_p50_s:.2f}",
            f"{r.output_tokens_per_s:,.0f}",
            "-" if s is None else f"{s:.2f}",
        )
    print_table(out, table, wide=wide)
    say = sayer(out, wide)
    say(
        "no best k, crossover or capacity: those need every cell (a rerun gives these cells again: each seeds its own"
        " random numbers)"
    )
    say(escape(f"predictor: {doc.predictor}; speedups {band_text(doc.band, doc.band_statistic, doc.band_source)}"))


def saturation_lines(doc: SweepResult) -> list[str]:
    """Where the deployment cannot keep up with the simulated load, in words (nothing where it keeps up)."""
    footnote = overload_footnote(doc)
    return [] if footnote is None else [f"[yellow]{capacity_sentence(doc)}[/yellow]", footnote]


def speculation_only_sentence(doc: SweepResult) -> str | None:
    """The loads plain decoding cannot keep up with but some k can, in advise's words for its measure_first verdict
    there ("only speculation keeps up": :func:`specwise.report.overload.speculation_only_rows`): the headline's
    speedups are over the loads plain decoding keeps up with, so without this line a load only speculation makes
    sustainable would go unsaid. None: there is none."""
    only = speculation_only_loads(doc)
    if not only:
        return None
    loads = " and ".join(f"{q:g} QPS ({ks})" for q, ks in only.items())
    base = doc.sustainable_qps
    plain = f"plain decoding serves ~{fmt_rate(base)} req/s" if base is not None else "plain decoding does not"
    measure = "measure it on your server before relying on it"
    return f"[yellow]only speculation keeps up at {loads}: {plain}; {measure}[/yellow]"


def capacity_sentence(doc: SweepResult) -> str:
    """The deployment's capacity without and with speculation (the k that serves most), in words."""
    base = doc.sustainable_qps
    ks = [k for k in doc.k_values if k and doc.sustainable_qps_with(k) is not None]
    without = (
        f"~{fmt_rate(base)} QPS without speculation" if base is not None else "an unmeasured rate without speculation"
    )
    if not ks:
        return f"the deployment saturates at {without}"
    best = max(ks, key=lambda k: doc.sustainable_qps_with(k) or 0.0)
    return f"the deployment saturates at {without} (~{doc.sustainable_qps_with(best) or 0.0:.1f} with k={best})"


def pays_sentence(doc: SweepResult) -> str:
    """Where speculation pays, in words, over the loads the deployment keeps up with (a speedup at a load above
    its capacity compares two growing queues); the loads where only the point estimate pays are named. A best
    speedup that prints as 1.00x breaks even: it does not pay."""
    gains = {
        q: s
        for q, s in sorted(doc.best_speedup_by_qps.items())
        if q not in doc.overloaded_qps and not doc.speedup_undefined(q)
    }
    if not gains and any(q not in doc.overloaded_qps for q in doc.qps):
        # every load kept up with has an undefined speedup: said below the table, not "does not pay"
        return (
            f"no {METRIC_LABELS[doc.decision_metric]} speedup is defined at any simulated rate it keeps up with (below)"
        )
    sentence = _pays(doc, gains)
    unsure = [q for q, s in gains.items() if round(s, 2) > 1.0 and s * (1.0 - doc.band) < 1.0]
    if unsure and doc.band:
        sentence += (
            f" -- point estimates: the low end of the +-{doc.band:.0%} band is below 1x at "
            f"{', '.join(f'{q:g}' for q in unsure)} QPS"
        )
    return sentence


def _pays(doc: SweepResult, gains: dict[float, float]) -> str:
    """:func:`pays_sentence` over ``gains``, the best speedups at the loads the deployment keeps up with."""
    if not gains:
        return "[yellow]the deployment keeps up with none of the simulated rates: no latency speedup to quote[/yellow]"
    kept_up = len(gains) < len(doc.best_speedup_by_qps)
    rates = "simulated rate" + (" the deployment keeps up with" if kept_up else "")
    cross = doc.crossover_qps if doc.crossover_qps is not None and doc.crossover_qps <= max(gains) else None
    if all(s <= 1.0 for s in gains.values()):
        return f"[red]speculation does not pay at any {rates}[/red]"
    if cross is not None:
        return f"speculation pays below [bold]{cross:.2f} QPS[/bold] (crossover); above it, set k=0"
    even = [q for q, s in gains.items() if round(s, 2) <= 1.0]
    if not even:
        return f"speculation pays at every {rates} " + (
            f"(up to {max(gains):g} QPS)" if kept_up else f"up to {max(gains):g} QPS"
        )
    paying = [q for q, s in gains.items() if round(s, 2) > 1.0]
    where = ", ".join(f"{q:g}" for q in even)
    if not paying:
        return f"[red]speculation does not pay at any {rates}[/red] (at best it breaks even: 1.00x at {where} QPS)"
    return f"speculation pays at {', '.join(f'{q:g}' for q in paying)} QPS and only breaks even (1.00x) at {where} QPS"


def render_speedup(result: BatchOneSpeedup, out: Console | None = None) -> None:
    """The speedup, then its predictor and that predictor's validation error (what ``--json`` carries too)."""
    shown = console(out)
    s = result.speedup
    verdict = "" if s > 1.0 else ": no gain" if s == 1.0 else ": a slowdown, slower than plain decoding"
    shown_s = f"{s:.3f}" if s >= 0.001 or s == 0.0 else f"{s:.3g}"  # 1e-308 is not 0.000
    shown.print(
        f"alpha={result.alpha}, k={result.k}, c={result.cost_ratio}: expected tokens/step "
        f"{result.expected_tokens_per_step:.3f}, speedup {shown_s}x at batch {result.batch_size} "
        f"(Leviathan et al. 2023){verdict}"
    )
    shown.print(
        f"predictor: {PREDICTOR} ({ASSUMES}); error: Leviathan Table 4 max |diff| "
        f"{result.max_abs_error:.3f} over {len(LEVIATHAN_TABLE4)} published speedups"
    )
