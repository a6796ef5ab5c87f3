"""The validation report (``specwise validate --report OUT.html``): one self-contained HTML page (inline CSS, plots
as data: URIs, no scripts, nothing fetched at view time), written atomically. The terminal's tables -- per source
family, the bands, the crossovers, the acceptance criteria, advise's verdicts scored -- and two kinds of plot: every
predicted speedup against its published one, and each series' speedups against its load, held-back families first."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path

from specwise.fileio import write_text_atomic
from specwise.report import validate_plots
from specwise.report.validate import CRITERION_WORDS, FAMILY_COLUMNS, LEGEND, bands_sentence, family_rows
from specwise.report.validate import predicted_crossing as crossing_words
from specwise.report.validate_decisions import decision_sentences
from specwise.report.validate_decisions import rows as decision_rows
from specwise.report.validate_decisions import title as decision_title
from specwise.units import fmt_sig3
from specwise.validate.decisions import DecisionScore
from specwise.validate.run import Validation

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1400px;color:#222;
line-height:1.45;padding:0 1em}
h1{font-size:1.5em} h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em;margin:.6em 0}
th,td{border:1px solid #ddd;padding:.3em .5em;text-align:right;vertical-align:top} th{background:#f5f5f5}
.name{text-align:left} .met{color:#137333;font-weight:600}.notmet{color:#c5221f;font-weight:600}
.na{color:#777} p.note{font-size:.9em;color:#555} img{max-width:100%;border:1px solid #eee;margin:.4em 0}
code{background:#f6f8fa;padding:0 .2em}
"""


def _e(x: object) -> str:
    """Escaped text of a sentence or number this module writes; a band the terminal writes in ASCII (``+-26%``)
    reads ``±26%`` here. Names and commands from elsewhere go through :func:`_t`."""
    return _ASCII_BAND.sub("&plusmn;\\1", html.escape(str(x)))


def _t(x: object) -> str:
    """Escaped text kept as given: a record's family or id, a predictor name, the command to reproduce."""
    return html.escape(str(x))


_ASCII_BAND = re.compile(r"\+-(\d+(?:\.\d+)?%)")


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{_t(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], names: int = 1) -> str:
    """An HTML table; the first ``names`` columns are text (left-aligned), the rest numbers."""
    head = "".join(f"<th{' class=name' if i < names else ''}>{_e(h)}</th>" for i, h in enumerate(header))
    body = "".join(
        "<tr>"
        + "".join(f"<td class=name>{_t(c)}</td>" if i < names else f"<td>{_e(c)}</td>" for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _criteria(v: Validation) -> str:
    css = {True: "met", False: "notmet", None: "na"}
    items = "".join(
        f"<li><span class={css[ok]}>{_e(CRITERION_WORDS[ok][1])}</span> {_e(name)}</li>"
        for name, ok in v.criteria.items()
    )
    base = "-" if v.baseline_within_20pct is None else f"{v.baseline_within_20pct:.0%}"
    return (
        f"<p>plain-decoding records within &plusmn;20%: {base}; Leviathan Table 4 max |diff| "
        f"{v.leviathan_max_abs_diff:.3f}</p>{_baselines_in_runs(v)}<ul>{items}</ul>"
    )


def _baselines_in_runs(v: Validation) -> str:
    """The no-speculation arm published beside each speedup against the replay's, per family (as the terminal)."""
    if not v.baselines_in_runs:
        return ""
    rows = [
        [b.family, "fit" if b.family in v.fit_families else "held back", str(b.arms), str(b.records),
         f"{b.median_ratio:.2f}",
         f"{b.min_ratio:.2f}-{b.max_ratio:.2f}", f"{b.within_20pct:.0%}"]
        for b in v.baselines_in_runs
    ]  # fmt: skip
    return (
        "<p>Plain decoding inside the speculative runs: the replay's speed over the published no-speculation arm's "
        "(&gt; 1: the replay is faster). Far from 1, a family is replayed with other inputs than its sources ran.</p>"
        + _table(("family", "role", "arms", "records", "median", "range", "within 20%"), rows, names=2)
    )


def _decisions(score: DecisionScore, family_selected: bool) -> str:
    if not score.decisions:
        return ""
    return (
        f"<h2>Would the advice have been right? (min_speedup {score.min_speedup:g})</h2>"
        f"<p>{_e(decision_title(score, family_selected))}.</p>"
        + _table(("role", "published", "enable", "measure first", "disable"), decision_rows(score), names=2)
        + "".join(f"<p>{_e(line)}</p>" for line in decision_sentences(score))
    )


def _crossovers(v: Validation) -> str:
    if not v.crossovers:
        return ""
    rows = [
        [x.series, x.load_kind, fmt_sig3(x.published), crossing_words(x), "yes" if x.within_2x else "no"]
        for x in v.crossovers
    ]
    return (
        "<h2>Crossover: the load where speculation stops paying</h2>"
        + _table(("series", "load", "published", "predicted", "within 2x"), rows, names=2)
        + "<p class=note>* beyond the loads the source measured: the prediction followed past them in x1.25 steps, as "
        "far as twice (or half) the published crossover; '&gt; N' ('&lt; N'): it does not cross up to (down to) load "
        "N</p>"
    )


def _series(v: Validation) -> list[str]:
    """One grid of small multiples per family with a series at three loads or more, held-back families first; the
    families without one named."""
    all_series = validate_plots.series_of(v.predictions)
    families = sorted({s.members[0].record.family for s in all_series}, key=lambda f: (f in v.fit_families, f))
    parts = [
        "<h2>Speedup against load, per series</h2><p class=note>Each experiment measured at three loads or more: "
        "published speedup, blue dots (hollow: an anchor, whose unpublished acceptance was set from it); predicted, "
        "black line; no speculation, dotted at 1.</p>"
    ]
    for family in families:
        chosen = [s for s in all_series if s.members[0].record.family == family]
        role = "fit" if family in v.fit_families else "held back"
        parts.append(f"<h3>{_t(family)} ({role}, {len(chosen)} series)</h3>")
        parts.append(_img(validate_plots.series_grid(chosen), f"{family}: speedup against load"))
    without = sorted({f.family for f in v.families} - set(families))
    if without:
        parts.append(f"<p class=note>No series at three loads or more: {_t(', '.join(without))}.</p>")
    return parts


def report_html(v: Validation, command: str) -> str:
    fitted = ", ".join(v.fit_families)
    held = ", ".join(f.family for f in v.families if f.role == "held-back")
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>specwise validate: {_t(v.predictor)}</title><style>{_CSS}</style></head><body>",
        f"<h1>How right the predictions are: predictor {_t(v.predictor)}</h1>",
        f"<p>Every published measurement in the evidence set replayed through the simulator. Fitted on: "
        f"{_t(fitted)}. Held back (never fitted on): {_t(held or 'none selected')}. Reproduce: "
        f"<code>{_t(command)}</code></p>",
        _table((*FAMILY_COLUMNS, "anchors/unrepl"), family_rows(v), names=2),
        f"<p class=note>{_e(LEGEND)}</p>",
    ]
    bands = bands_sentence(v)
    if bands:
        parts.append(f"<p>{_e(bands)}</p>")
    parts.append("<h2>Acceptance criteria</h2>" + _criteria(v))
    if v.decisions is not None:
        parts.append(_decisions(v.decisions, v.family_selected))
    parts.append(_crossovers(v))
    parts.append("<h2>Predicted against published speedup</h2>")
    parts.append(_img(validate_plots.predicted_vs_published(v.predictions, v.fit_families), "predicted vs published"))
    parts += _series(v)
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(v: Validation, path: Path, command: str) -> None:
    write_text_atomic(path, report_html(v, command))
