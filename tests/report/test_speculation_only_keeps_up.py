"""A load plain decoding cannot keep up with but some k can (review C, finding 2): its speedup cells keep the mark
(the ratio is against plain decoding's growing queue), but the footnote no longer calls that k overloaded, and a line
under the headline says which k keep up there -- advise's "only speculation keeps up" (its measure_first verdict at
the operating load), so the headline's "pays at every simulated rate the deployment keeps up with" does not hide it.
The expected words are read off the document's ``overloaded`` fields, which ``--json`` already carries."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.text import Text

from specwise.contracts.sweep import SweepResult
from specwise.report.overload import OVERLOAD_MARK, overload_footnote, speculation_only_loads
from specwise.report.sim import render_sweep, speculation_only_sentence

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "examples"
TAIL = "requests arrive faster than they are served and the queue grows without bound"


def _golden() -> SweepResult:
    doc = SweepResult.from_json(json.loads((GOLDEN / "simulate-llama70b-4xh100.json").read_text()))
    assert doc.overloaded_qps == (8.0, 12.0, 16.0) and all(r.overloaded for r in doc.results if r.qps >= 8)
    return doc


def _keeping_up(doc: SweepResult, qps: float, ks: set[int]) -> SweepResult:
    """``doc`` with the rows of ``ks`` at ``qps`` keeping up (the baseline there stays overloaded)."""
    rows = tuple(replace(r, overloaded=False) if r.qps == qps and r.k in ks else r for r in doc.results)
    return replace(doc, results=rows)


def _text(doc: SweepResult) -> str:
    out = Console(file=io.StringIO(), width=400, color_system=None)
    render_sweep(doc, out)
    return out.file.getvalue()  # type: ignore[attr-defined]


def test_the_footnote_says_which_k_keeps_up_where_plain_decoding_does_not() -> None:
    doc = _keeping_up(_golden(), 8.0, {3, 4, 5, 6, 7, 8})
    footnote = overload_footnote(doc)
    assert footnote is not None
    assert footnote.startswith(f"{OVERLOAD_MARK} overloaded at 12, 16 QPS: {TAIL}")  # 8 QPS is not called overloaded
    assert footnote.endswith(
        "; at 8 QPS plain decoding cannot keep up but k >= 3 can: a speedup there is against plain decoding's "
        "growing queue"
    )


def test_a_headline_line_says_only_speculation_keeps_up() -> None:
    doc = _keeping_up(_golden(), 8.0, {3, 4, 5, 6, 7, 8})
    base = doc.sustainable_qps
    assert base is not None
    line = speculation_only_sentence(doc)
    assert line == (
        f"[yellow]only speculation keeps up at 8 QPS (k >= 3): plain decoding serves ~{base:.1f} req/s; measure it "
        "on your server before relying on it[/yellow]"
    )
    text = _text(doc)
    lines = text.splitlines()
    pays = next(i for i, s in enumerate(lines) if s.startswith("speculation pays"))
    assert lines[pays + 1].startswith("only speculation keeps up at 8 QPS (k >= 3)")  # right under the headline
    row8 = next(s for s in lines if [c.strip() for c in s.split("│")][1:2] == ["8"])
    assert row8.count(OVERLOAD_MARK) == len(doc.k_values)  # the cells keep their mark: k=0 TPOT and every k


def test_which_k_in_words() -> None:
    doc = _golden()
    assert speculation_only_loads(_keeping_up(doc, 8.0, {2, 5})) == {8.0: "k=2, 5"}
    assert speculation_only_loads(_keeping_up(doc, 8.0, {8})) == {8.0: "k=8"}
    assert speculation_only_loads(_keeping_up(doc, 8.0, set(range(1, 9)))) == {8.0: "every k"}
    two = _keeping_up(_keeping_up(doc, 8.0, {4, 5, 6, 7, 8}), 12.0, {7, 8})
    assert speculation_only_loads(two) == {8.0: "k >= 4", 12.0: "k >= 7"}
    assert "only speculation keeps up at 8 QPS (k >= 4) and 12 QPS (k >= 7):" in (speculation_only_sentence(two) or "")
    footnote = overload_footnote(two) or ""
    assert footnote.startswith(f"{OVERLOAD_MARK} overloaded at 16 QPS: ")
    assert "at 8 QPS (k >= 4) and 12 QPS (k >= 7) plain decoding cannot keep up but those k can" in footnote


def test_the_k_schedule_is_named_when_it_keeps_up() -> None:
    doc = _golden()
    sched = replace(next(r for r in doc.results if r.qps == 8.0 and r.k == 4), k=None, overloaded=False)
    assert speculation_only_loads(replace(doc, schedule_results=(sched,))) == {8.0: "the k schedule"}


def test_only_speculation_loads_alone_word_the_footnote_for_plain_decoding() -> None:
    doc = _keeping_up(_golden(), 8.0, {3, 4, 5, 6, 7, 8})
    baseline = tuple(replace(b, overloaded=b.qps == 8.0) for b in doc.baseline)
    rows = tuple(replace(r, overloaded=r.qps == 8.0 and r.k not in {3, 4, 5, 6, 7, 8}) for r in doc.results)
    footnote = overload_footnote(replace(doc, baseline=baseline, results=rows))
    assert footnote == (
        f"{OVERLOAD_MARK} at 8 QPS plain decoding cannot keep up but k >= 3 can: requests arrive faster than plain "
        "decoding serves them and its queue grows without bound, so a speedup there is against a growing queue and "
        "depends on num_requests (not a steady state)"
    )


def test_nothing_changes_where_no_k_keeps_up_an_overloaded_load() -> None:
    doc = _golden()
    assert speculation_only_loads(doc) == {} and speculation_only_sentence(doc) is None
    assert overload_footnote(doc) == (
        f"{OVERLOAD_MARK} overloaded at 8, 12, 16 QPS: {TAIL}; those latencies and speedups depend on num_requests "
        "(not a steady state)"
    )
    assert "only speculation" not in _text(doc)


def test_the_advise_report_shows_the_line_too() -> None:
    """The HTML report's sweep table carries the terminal's line under its headline (left out before)."""
    from specwise.contracts.advice import Advice
    from specwise.report.advise_html import _sweep_table

    advice = Advice.from_json(json.loads((GOLDEN / "advise-summarize-high-qps.json").read_text()))
    candidate = next(c for c in advice.candidates if c.sim is not None)
    doc = _keeping_up(_golden(), 8.0, {2, 5})
    line = speculation_only_sentence(doc)
    assert line is not None
    html = "".join(_sweep_table(replace(candidate, sim=doc)))
    assert Text.from_markup(line).plain.replace("<", "&lt;").replace(">", "&gt;") in html
    assert "only speculation keeps up" not in "".join(_sweep_table(replace(candidate, sim=_golden())))


def test_the_sched_column_has_its_legend() -> None:
    """A first-hour review: simulate's 'sched' column had no legend line."""
    import io

    from rich.console import Console

    from specwise.report.sim import render_sweep

    doc = _golden()
    sched = replace(next(r for r in doc.results if r.qps == 8.0 and r.k == 4), k=None)
    for with_schedule, said in ((True, True), (False, False)):
        out = io.StringIO()
        render_sweep(replace(doc, schedule_results=(sched,) if with_schedule else ()), Console(file=out, width=200))
        assert ("sched: the speedup with the scenario's k-by-batch-size schedule" in out.getvalue()) is said
