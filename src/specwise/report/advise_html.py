"""The advise report: one self-contained HTML page (inline CSS, plots as data: URIs, no scripts, nothing
fetched at view time). Written atomically: a failure leaves no half-written page."""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

from rich.text import Text

from specwise.contracts.advice import Advice, CandidateAdvice
from specwise.contracts.sweep import SweepResult
from specwise.engines.base import shell_lines
from specwise.fileio import write_text_atomic
from specwise.perfmodel.factory import band_basis
from specwise.report import advise_plots
from specwise.report.advise import grouped_warnings, nearby_words
from specwise.report.overload import best_overloaded, mark, overload_footnote, speedup_overloaded
from specwise.report.sim import capacity_sentence, pays_sentence, speculation_only_sentence
from specwise.units import fmt_ratio

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222;
line-height:1.45;padding:0 1em}
h1{font-size:1.5em} h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
.decision{padding:1em 1.2em;border-radius:8px;font-size:1.1em}
.enable{background:#e6f4ea;border:1px solid #34a853}.enable_below{background:#fef7e0;border:1px solid #f9ab00}
.disable,.unsupported{background:#fce8e6;border:1px solid #d93025}
.measure_first{background:#e8f0fe;border:1px solid #1a73e8}
.assumed{background:#fff3cd;border:1px solid #f0ad4e;padding:.6em 1em;border-radius:6px;margin-top:.8em}
table{border-collapse:collapse;width:100%;font-size:.9em;margin:.6em 0}
th,td{border:1px solid #ddd;padding:.35em .5em;text-align:left;vertical-align:top} th{background:#f5f5f5}
.pass{color:#137333;font-weight:600}.warn{color:#b06000;font-weight:600}.fail{color:#c5221f;font-weight:600}
pre{background:#f6f8fa;padding:.8em;overflow-x:auto;white-space:pre-wrap;overflow-wrap:normal;word-break:normal}
pre.cmd{white-space:pre;overflow-wrap:normal} pre.json{overflow-wrap:anywhere}
td.overloaded{background:#fff4d6} p.footnote{font-size:.9em;color:#555}
img{max-width:100%;border:1px solid #eee;margin:.4em 0} .grid{display:flex;flex-wrap:wrap;gap:1em}
"""


def _e(x: object) -> str:
    """Escaped text; a band the terminal writes in ASCII (``+-27%``) reads ``±27%`` here, as the page's own do."""
    return _ASCII_BAND.sub("&plusmn;\\1", html.escape(str(x)))


_ASCII_BAND = re.compile(r"\+-(\d+(?:\.\d+)?%)")


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _head(doc: Advice) -> list[str]:
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>specwise advise: {_e(doc.scenario)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Speculative decoding for {_e(doc.target)} on {doc.tp} x {_e(doc.gpu)}</h1>",
        f"<div class='decision {doc.decision}'><b>{_e(doc.headline)}</b><br>{_e(doc.reason)}</div>",
    ]
    if doc.assumed_acceptance_for:
        parts.append(
            "<div class='assumed'><b>ASSUMED acceptance</b> (or n-gram match rate; not measured) for workload(s): "
            + _e(", ".join(doc.assumed_acceptance_for))
            + ". Measure it: <code>specwise profile</code> (offline) or <code>specwise bench</code> (server), "
            "then pass <code>--profile</code> / <code>--bench</code>.</div>"
        )
    if doc.predictor:
        parts.append(
            f"<p>Step times: <b>{_e(doc.predictor)}</b>. Every simulated speedup carries a &plusmn;{doc.band:.0%} "
            f"band: the {_e(band_basis(doc.band_statistic, doc.band_source))}.</p>"
        )
    if doc.nearby_evidence is not None:
        parts.append(f"<p>{_e(nearby_words(doc.nearby_evidence))}.</p>")
    if doc.measure is not None:
        parts.append(
            f"<h2>Measure first: {_e(doc.measure.candidate)}</h2><p>Save as the launch file the command names:</p>"
            f"<pre>{_e(doc.measure.launch_toml)}</pre><pre>{_e(doc.measure.command)}</pre>"
            + "".join(f"<p>Note: {_e(n)}</p>" for n in doc.measure.notes)
        )
    # one flag per line (backslash continuations: it still pastes as one command); scrolls rather than breaking a flag
    parts.append("<h2>Commands</h2><pre class='cmd'>" + _e(shell_lines(doc.serve.argv)) + "</pre>")
    if doc.serve.speculative_config:
        parts.append(
            "<p>--speculative-config:</p><pre class='json'>"
            + _e(json.dumps(dict(doc.serve.speculative_config), indent=2))
            + "</pre>"
        )
    parts.extend(f"<p><b>Note:</b> {_e(note)}</p>" for note in doc.serve.notes)
    if not doc.serve.speculative_config:
        return parts  # nothing speculative to monitor
    promql = doc.monitoring
    parts.append(
        "<p>Monitor it (PromQL):</p><pre>acceptance rate = "
        + _e(promql.get("acceptance_rate_promql", ""))
        + "\nmean acceptance length = "
        + _e(promql.get("acceptance_length_promql", ""))
        + "</pre>"
    )
    return parts


def _candidates_table(doc: Advice) -> list[str]:
    parts = [
        f"<h2>Candidates at {doc.operating_qps:g} QPS</h2><table><tr><th>rank</th><th>candidate</th>"
        "<th>verdict</th><th>k / schedule</th><th>speedup</th><th>KV tokens</th>"
        "<th>reason</th></tr>"
    ]
    marked: list[SweepResult] = []
    for i, c in enumerate(doc.ranked, start=1):
        s = c.speedup_at_operating_qps
        over = s is not None and c.sim is not None and best_overloaded(c.sim, doc.operating_qps)
        if over and c.sim is not None:
            marked.append(c.sim)
        sched = f"{c.k}" + (f"<br>{_e([list(b) for b in c.schedule])}" if c.schedule else "")
        css = "pass" if c.verdict.startswith("enable") else ("warn" if c.verdict == "measure_first" else "fail")
        parts.append(
            f"<tr><td>{i}</td><td>{_e(c.candidate)}</td><td class='{css}'>"
            f"{_e(c.verdict)}</td><td>{sched}</td>{_cell('-' if s is None else f'{s:.2f}x', over)}"
            f"<td>{c.kv_tokens_text()}; {c.memory.kv_cache_tokens_without_draft:,} without draft</td>"
            f"<td>{_e(c.reason)}</td></tr>"
        )
    parts.append("</table>")
    notes = dict.fromkeys(note for sim in marked if (note := overload_footnote(sim)) is not None)
    parts.extend(f"<p class='footnote'>{_e(note)}</p>" for note in notes)
    return parts


def _warnings(doc: Advice) -> list[str]:
    """Every candidate's warnings, as the terminal lists them (a calibration from other hardware, a package the
    method needs, k values dropped for memory ...)."""
    items = grouped_warnings(doc)
    if not items:
        return []
    rows = "".join(f"<li><b>{_e(name)}</b>: {_e(w)}</li>" for name, w in items)
    return [f"<h2>Warnings</h2><ul class='warnings'>{rows}</ul>"]


def _cell(text: str, overloaded: bool) -> str:
    """A table cell; an overloaded one carries the terminal's mark (and a shade)."""
    return f"<td class='overloaded'>{_e(text + mark(True))}</td>" if overloaded else f"<td>{_e(text)}</td>"


def _footnote(sim: SweepResult) -> str:
    note = overload_footnote(sim)
    return "" if note is None else f"<p class='footnote'>{_e(capacity_sentence(sim))}<br>{_e(note)}</p>"


def _band_cell(best: float, band: float) -> str:
    """A best speedup and its band's ends, shown as the sentence above the table compares them with 1x: a low end
    of 0.998 is "below 1x" and shows as 0.998, not 1.00."""
    return f"{fmt_ratio(best)} ({fmt_ratio(best * (1 - band))}-{fmt_ratio(best * (1 + band))})"


def _sweep_table(c: CandidateAdvice) -> list[str]:
    """A candidate's simulated speedups by load and k, marked as in the terminal's table (``specwise simulate``):
    an overloaded cell carries the mark and the footnote says what it means."""
    sim = c.sim
    assert sim is not None
    metric, ks = sim.decision_metric, [k for k in sim.k_values if k]
    parts = [
        f"<h3>{_e(c.candidate)}: {_e(metric)} p50 speedup vs no speculation</h3><table class='sweep'><tr><th>QPS</th>"
        "<th>k=0 TPOT ms</th>"
        + "".join(f"<th>k={k}</th>" for k in ks)
        + ("<th>sched</th>" if sim.schedule_results else "")
        + f"<th>best k</th><th>best (&plusmn;{sim.band:.0%} band)</th></tr>"
    ]
    for b in sim.baseline:
        q = b.qps
        cells = [f"<td>{q:g}</td>", _cell(f"{b.tpot_p50_s * 1e3:.1f}", b.overloaded)]
        for row in [sim.row(q, k) for k in ks] + [r for r in sim.schedule_results if r.qps == q]:
            s = row.speedup(metric) if row is not None else None
            cells.append("<td>-</td>" if s is None else _cell(f"{s:.2f}", speedup_overloaded(sim, q, row)))
        best = sim.best_speedup_by_qps.get(q)
        band = _band_cell(best, sim.band) if best else "-"
        if best and q in sim.capacity_bound_qps:
            band = f"≤{best:.2f} (no k keeps up: capacity / load)"  # an upper bound, not a cell
        cells.append(f"<td>{sim.best_k_by_qps.get(q, 0)}</td>" + _cell(band, bool(best) and best_overloaded(sim, q)))
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table>")
    # the terminal's sentence, over the loads the deployment keeps up with only
    parts.append(f"<p>{_e(Text.from_markup(pays_sentence(sim)).plain)}</p>")
    if (only := speculation_only_sentence(sim)) is not None:  # the terminal's line under it
        parts.append(f"<p>{_e(Text.from_markup(only).plain)}</p>")
    if c.sampling is not None:  # what the verdict rests on at the operating load, not the table's one draw
        n = c.sampling
        parts.append(
            f"<p>At the operating {n.qps:g} QPS, k={n.k}: {_e(n.words())} (seed {n.seed}, replicates "
            f"{_e(', '.join(map(str, n.replicates)))}); the verdict weighs this interval with the band, not the "
            "table's one draw"
            + (
                ", and the table's best column holds this mean (its k= cells keep their one draw)"
                if sim.best_speedup_by_qps.get(n.qps) == n.mean
                else ""
            )
            + ".</p>"
        )
    for n in c.edge_sampling:  # the loads either side of the edge an "enable below" names
        parts.append(
            f"<p>At {n.qps:g} QPS, k={n.k}, either side of where the gain falls below the minimum: {_e(n.words())} "
            "(the table's best column holds this mean).</p>"
        )
    for check in c.schedule_results:
        if check.interval_90 is not None:  # the schedule where it must switch a loss off
            parts.append(f"<p>The k-by-batch-size schedule at {_e(check.words())}.</p>")
    parts.append(_footnote(sim))
    return parts


def _sweeps(doc: Advice) -> list[str]:
    simulated = [c for c in doc.ranked if c.sim is not None]
    if not simulated:
        return []
    return ["<h2>Simulated speedup by load</h2>"] + [p for c in simulated for p in _sweep_table(c)]


def _rules_and_evidence(top: CandidateAdvice, ranked: tuple[CandidateAdvice, ...]) -> list[str]:
    parts = []
    if top.rules:  # an unsupported candidate is checked by no rule: no empty table
        parts.append(
            f"<h2>Rule checks: {_e(top.candidate)}</h2><table><tr><th>rule</th><th>status</th>"
            "<th>message</th><th>evidence</th></tr>"
        )
        for r in top.rules:
            parts.append(
                f"<tr><td>{_e(r.rule)}</td><td class='{r.status}'>{r.status}</td>"
                f"<td>{_e(r.message)}</td><td>{_e(r.evidence)}</td></tr>"
            )
        parts.append("</table>")
    parts.append(
        "<h2>Acceptance evidence</h2><table><tr><th>candidate</th><th>workload</th><th>kind</th><th>source</th></tr>"
    )
    for c in ranked:
        for e in c.evidence:
            parts.append(
                f"<tr><td>{_e(c.candidate)}</td><td>{_e(e.workload)}</td><td>{_e(e.label(c.k))}</td>"
                f"<td>{_e(e.source)}</td></tr>"
            )
    parts.append("</table>")
    return parts


def _plots(doc: Advice) -> list[str]:
    ranked = doc.ranked
    parts = ["<h2>Plots</h2><div class='grid'>"]
    simulated = [c for c in ranked if c.sim is not None]
    for c in simulated:
        parts.append(_img(advise_plots.speedup_vs_qps(c, doc.operating_qps), f"speedup vs QPS: {c.candidate}"))
    if simulated:
        parts.append(_img(advise_plots.latency_percentiles(simulated[0], doc.operating_qps), "latency percentiles"))
    if doc.acceptance_vs_temperature:
        parts.append(
            _img(
                advise_plots.acceptance_vs_temperature(doc.acceptance_vs_temperature, [c.candidate for c in ranked]),
                "acceptance vs temperature",
            )
        )
    parts.append(_img(advise_plots.per_position(ranked), "per-position acceptance"))
    parts.append(_img(advise_plots.memory_bars(ranked), "memory per GPU"))
    parts.append("</div>")
    return parts


def render_html(doc: Advice) -> str:
    ranked = doc.ranked
    parts = (
        _head(doc)
        + _candidates_table(doc)
        + _warnings(doc)
        + _sweeps(doc)
        + _rules_and_evidence(ranked[0], ranked)
        + _plots(doc)
    )
    parts.append(
        "<p><small>specwise advise; simulated with specwise's serving simulator; every number "
        "above names its source.</small></p></body></html>"
    )
    return "\n".join(parts)


def write_report(doc: Advice, path: Path) -> Path:
    write_text_atomic(path, render_html(doc))
    return path
