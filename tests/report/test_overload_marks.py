"""Overloaded loads are marked wherever a report shows them, as the terminal table does: the advise HTML report's
tables put the mark (and the terminal's footnote) on exactly the overloaded cells, and every speedup-vs-load and
latency-vs-load plot draws exactly the overloaded points hollow, with a shaded region from the first load the
deployment without speculation cannot keep up with. The expected cells are read off the documents' ``overloaded``
fields here, independently of the code under test.

The documents are the golden examples (real simulations), with one row marked overloaded at a load the baseline
keeps up with: a k whose own queue grows while no speculation keeps up, so "the whole load" is not enough."""

from __future__ import annotations

import json
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from specwise.contracts.advice import Advice, CandidateAdvice
from specwise.contracts.sweep import SweepResult
from specwise.report import advise_plots, plots
from specwise.report.advise_html import render_html
from specwise.report.overload import OVERLOAD_LABEL, OVERLOAD_MARK
from specwise.report.sim import saturation_lines

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "examples"
FOOTNOTE_START = f"{OVERLOAD_MARK} overloaded at "


def _with_overloaded_row(sim: SweepResult, qps: float, k: int) -> SweepResult:
    """``sim`` with row (qps, k) above its own capacity while the baseline at ``qps`` keeps up."""
    base = sim.baseline_at(qps)
    assert base is not None and not base.overloaded
    rows = tuple(replace(r, overloaded=True) if (r.qps, r.k) == (qps, k) else r for r in sim.results)
    return replace(sim, results=rows)


def _advice(name: str) -> Advice:
    return Advice.from_json(json.loads((GOLDEN / name).read_text()))


def _with_sim(doc: Advice, cand: CandidateAdvice, sim: SweepResult) -> Advice:
    return replace(doc, candidates=tuple(replace(c, sim=sim) if c is cand else c for c in doc.candidates))


# --- HTML ---------------------------------------------------------------------------------------------------------


class _Tables(HTMLParser):
    """Every <table>: its rows, each a list of (cell text, cell class)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[tuple[str, str]]]]] = []
        self._cell: list[str] | None = None
        self._cls = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.tables.append((a.get("class") or "", []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell, self._cls = [], a.get("class") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][1][-1].append(("".join(self._cell), self._cls))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _tables(page: str) -> list[tuple[str, list[list[tuple[str, str]]]]]:
    parser = _Tables()
    parser.feed(page)
    return parser.tables


def _marked_cells(rows: list[list[tuple[str, str]]]) -> set[tuple[str, str]]:
    """(first cell of the row, column header) of every cell carrying the mark."""
    header = [text for text, _ in rows[0]]
    return {(row[0][0], header[i]) for row in rows[1:] for i, (text, _) in enumerate(row) if OVERLOAD_MARK in text}


def _expected_sweep_marks(sim: SweepResult) -> set[tuple[str, str]]:
    want = set()
    for b in sim.baseline:
        q = f"{b.qps:g}"
        if b.overloaded:
            want.add((q, "k=0 TPOT ms"))
        for r in sim.results:
            if r.qps == b.qps and r.k and (b.overloaded or r.overloaded):
                want.add((q, f"k={r.k}"))
        # the best column is the top k among those that keep up (SweepResult.top_k), else among all
        spec = [r for r in sim.results if r.qps == b.qps and r.k]
        keeping_up = [r for r in spec if b.overloaded or not r.overloaded]
        top = max(keeping_up or spec, key=lambda r: r.speedup_e2e or 0.0)
        if b.overloaded or top.overloaded:
            want.add((q, f"best (±{sim.band:.0%} band)"))
    return want


def test_html_sweep_table_marks_exactly_the_overloaded_cells() -> None:
    doc = _advice("advise-summarize-high-qps.json")
    cand = doc.ranked[0]
    assert cand.sim is not None and cand.sim.overloaded_qps == (16.0, 64.0)
    sim = _with_overloaded_row(cand.sim, 4.0, 6)  # k=6 is not the best k at 4 QPS: the best column stays clean
    page = render_html(_with_sim(doc, cand, sim))
    sweeps = [rows for cls, rows in _tables(page) if cls == "sweep"]
    assert len(sweeps) == 1
    marked = _marked_cells(sweeps[0])
    assert ("4", "k=6") in marked and ("4", "k=4") not in marked and ("16", "k=2") in marked
    assert marked == _expected_sweep_marks(sim)
    assert all(cls == "overloaded" for row in sweeps[0][1:] for text, cls in row if OVERLOAD_MARK in text)
    footnote = next(line for line in saturation_lines(sim) if line.startswith(FOOTNOTE_START))
    # every load with a marked cell is named: 4 QPS too, where only k=6 cannot keep up
    assert footnote == "* overloaded at 16, 64 QPS and for some k at 4 QPS: " + footnote.split(": ", 1)[1]
    assert page.count(footnote) == 1  # the terminal's footnote, word for word, under the one marked table


def test_html_quotes_no_speedup_at_an_overloaded_load_unmarked() -> None:
    doc = _advice("advise-summarize-high-qps.json")
    page = render_html(doc)
    # the sentence under the table names only the loads the deployment keeps up with (as the terminal's does)
    assert "<p>speculation pays at every simulated rate the deployment keeps up with (up to 4 QPS)" in page
    band_cells = [row[-1][0] for row in next(rows for cls, rows in _tables(page) if cls == "sweep")[1:]]
    assert [OVERLOAD_MARK in c for c in band_cells] == [False, False, True, True]


def test_html_candidates_table_marks_an_overloaded_speedup_at_the_operating_load() -> None:
    doc = _advice("advise-summarize-low-qps.json")
    top = doc.ranked[0]
    assert top.sim is not None and top.speedup_at_operating_qps is not None
    op = doc.operating_qps  # no k keeps up there, while the baseline does: the best speedup is an overloaded one's
    sim = top.sim
    for k in sim.k_values:
        if k:
            sim = _with_overloaded_row(sim, op, k)
    page = render_html(_with_sim(doc, top, sim))
    clean = render_html(doc)
    candidates = next(rows for cls, rows in _tables(page) if rows[0][0][0] == "rank")
    speedups = {row[1][0]: row[4][0] for row in candidates[1:]}
    assert speedups[top.candidate] == f"{top.speedup_at_operating_qps:.2f}x{OVERLOAD_MARK}"
    assert all(OVERLOAD_MARK not in s for name, s in speedups.items() if name != top.candidate)
    assert f"{OVERLOAD_MARK} overloaded" not in clean and OVERLOAD_MARK + "</td>" not in clean  # no mark
    some_k = f"{OVERLOAD_MARK} overloaded for some k at 0.5 QPS"  # the baseline keeps up there, the top k does not
    assert page.count(some_k) == 2  # under the candidates table and under its sweep table


# --- plots --------------------------------------------------------------------------------------------------------


def _axes(monkeypatch: pytest.MonkeyPatch, draw: Any) -> list[Any]:
    """Every Axes the plot function creates through plt.subplots, in order."""
    import matplotlib.pyplot as plt

    seen: list[Any] = []
    real = plt.subplots

    def spy(*args: Any, **kwargs: Any) -> Any:
        fig, ax = real(*args, **kwargs)
        seen.extend(ax.flat if hasattr(ax, "flat") else [ax])
        return fig, ax

    monkeypatch.setattr(plt, "subplots", spy)
    draw()
    return seen


def _hollow(ax: Any) -> set[tuple[float, float]]:
    """Points drawn with hollow markers (face colour none)."""
    return {
        (float(x), round(float(y), 9))
        for line in ax.get_lines()
        if line.get_markerfacecolor() == "none" and line.get_label() != OVERLOAD_LABEL
        for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)
    }


def _filled(ax: Any) -> set[tuple[float, float]]:
    """Points drawn with filled markers (a line's markevery indices)."""
    out = set()
    for line in ax.get_lines():
        if line.get_markerfacecolor() == "none" or line.get_marker() in ("None", "", None):
            continue
        xs, ys, every = line.get_xdata(), line.get_ydata(), line.get_markevery()
        idx = range(len(xs)) if every is None else every
        out |= {(float(xs[i]), round(float(ys[i]), 9)) for i in idx if ys[i] is not None}
    return out


def _span_left(ax: Any) -> list[float]:
    """Left edge of every shaded region labelled overloaded."""
    return [float(p.get_x()) for p in ax.patches if p.get_label() == OVERLOAD_LABEL]


def _speedup_points(sim: SweepResult) -> tuple[set[tuple[float, float]], set[tuple[float, float]]]:
    """(overloaded, served) speedup points of every k > 0, from the document's fields."""
    over: set[tuple[float, float]] = set()
    served: set[tuple[float, float]] = set()
    for r in sim.results:
        if r.k and r.speedup_e2e is not None:
            base = sim.baseline_at(r.qps)
            hot = r.overloaded or (base is not None and base.overloaded)
            (over if hot else served).add((r.qps, round(r.speedup_e2e, 9)))
    return over, served


def _sweep_doc() -> SweepResult:
    sim = SweepResult.from_json(json.loads((GOLDEN / "simulate-llama70b-4xh100.json").read_text()))
    assert sim.overloaded_qps == (8.0, 12.0, 16.0) and sim.decision_metric == "e2e"
    return _with_overloaded_row(sim, 4.0, 8)


def test_simulate_speedup_plot_marks_exactly_the_overloaded_points(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sim = _sweep_doc()
    speedup, tpot, ttft = _axes(monkeypatch, lambda: plots.plot_sweep(sim, tmp_path))
    over, served = _speedup_points(sim)
    assert (4.0, round(sim.row(4.0, 8).speedup_e2e or 0.0, 9)) in over  # type: ignore[union-attr]
    assert _hollow(speedup) == over
    assert _filled(speedup) == served
    assert _span_left(speedup) == [8.0]
    assert OVERLOAD_LABEL in [t.get_text() for t in speedup.get_legend().get_texts()]
    for ax in (tpot, ttft):  # latency: a point is overloaded when its own row is
        assert _span_left(ax) == [8.0]
        hollow_x = {x for x, _ in _hollow(ax)}
        assert hollow_x == {8.0, 12.0, 16.0} and not {x for x, _ in _filled(ax)} & hollow_x


def test_advise_plots_mark_exactly_the_overloaded_points(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _advice("advise-summarize-high-qps.json")
    cand = doc.ranked[0]
    assert cand.sim is not None
    sim = _with_overloaded_row(cand.sim, 4.0, 6)
    cand = replace(cand, sim=sim)
    (ax,) = _axes(monkeypatch, lambda: advise_plots.speedup_vs_qps(cand, doc.operating_qps))
    over, served = _speedup_points(sim)
    assert _hollow(ax) == over and _filled(ax) == served
    assert _span_left(ax) == [16.0]
    k = 6
    tpot, e2e = _axes(monkeypatch, lambda: advise_plots.latency_percentiles(replace(cand, k=k), doc.operating_qps))
    for ax, metric in ((tpot, "tpot"), (e2e, "e2e")):
        rows = [r for r in sim.results if r.k == k]
        want = {
            (r.qps, round(getattr(r, f"{metric}_{p}_s") * 1e3, 9)) for r in rows if r.overloaded for p in ("p50", "p99")
        }
        want |= {(b.qps, round(getattr(b, f"{metric}_p50_s") * 1e3, 9)) for b in sim.baseline if b.overloaded}
        assert _hollow(ax) == want
        assert _span_left(ax) == [16.0]


def test_plots_without_overload_draw_no_mark(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _advice("advise-int4-target.json")
    cand = doc.ranked[0]
    assert cand.sim is not None and not any(r.overloaded for r in cand.sim.results)
    (ax,) = _axes(monkeypatch, lambda: advise_plots.speedup_vs_qps(cand, doc.operating_qps))
    assert not _hollow(ax) and not _span_left(ax)
    assert OVERLOAD_LABEL not in [t.get_text() for t in ax.get_legend().get_texts()]


def test_speedup_plots_shade_the_band_and_name_the_predictor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plots carry the uncertainty the tables print: the best speedup's band and the predictor that made it."""
    doc = _advice("advise-int4-target.json")
    cand = doc.ranked[0]
    sim = cand.sim
    assert sim is not None and sim.band > 0
    (ax,) = _axes(monkeypatch, lambda: advise_plots.speedup_vs_qps(cand, doc.operating_qps))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"best k ±{sim.band:.0%}" in labels
    assert f"predictor: {sim.predictor}" in ax.get_title() and f"±{sim.band:.0%}" in ax.get_title()
    (band,) = [c for c in ax.collections if c.get_label() == f"best k ±{sim.band:.0%}"]
    top = max(sim.best_speedup_by_qps.values())
    assert band.get_paths()[0].vertices[:, 1].max() == pytest.approx(top * (1 + sim.band))
