"""The HTML report shows only what applies: no PromQL to monitor when nothing speculative is served, no empty rule
table for a candidate no rule checked (unsupported)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from specwise.contracts.advice import Advice
from specwise.report.advise_html import render_html

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "examples"


def _advice(name: str) -> Advice:
    return Advice.from_json(json.loads((GOLDEN / name).read_text()))


def test_monitoring_only_for_a_speculative_config() -> None:
    enabled = Advice.from_json(
        json.loads((GOLDEN.parent / "examples_published_fit" / "advise-summarize-low-qps.json").read_text())
    )  # enabled under the published fit (the roofline's wider band says measure first)
    assert enabled.serve.speculative_config and "Monitor it (PromQL)" in render_html(enabled)
    disabled = _advice("advise-evidence-qwen3-8b-draft-batch128.json")
    assert disabled.decision == "disable" and not disabled.serve.speculative_config
    assert "Monitor it (PromQL)" not in render_html(disabled)


def test_no_rule_table_without_rules() -> None:
    doc = _advice("advise-draft-does-not-fit.json")
    checked = render_html(doc)
    assert f"Rule checks: {doc.ranked[0].candidate}" in checked
    unchecked = replace(doc, candidates=tuple(replace(c, rules=()) for c in doc.candidates))
    page = render_html(unchecked)
    assert "Rule checks" not in page and "Acceptance evidence" in page


def test_a_best_no_cell_has_is_shown_as_the_bound_it_is() -> None:
    """Where the baseline keeps up and no k does, the 'best' is capacity / load (an upper bound), not a cell: the
    report shows the loads the sweep result names (``capacity_bound_qps``, filled by ``study.decide``; its own
    test is tests/study/test_decide.py) so, and no other."""
    doc = _advice("advise-summarize-low-qps.json")
    sim = doc.ranked[0].sim
    assert sim is not None and not sim.capacity_bound_qps
    assert "no k keeps up" not in render_html(doc)
    q = sim.baseline[-1].qps
    named = replace(
        doc,
        candidates=tuple(
            replace(c, sim=replace(c.sim, capacity_bound_qps=(q,))) if c is doc.ranked[0] and c.sim else c
            for c in doc.candidates
        ),
    )
    page = render_html(named)
    assert f"≤{sim.best_speedup_by_qps[q]:.2f} (no k keeps up: capacity / load)" in page
    assert page.count("no k keeps up") == 1  # that load only


def test_every_candidates_warnings_are_on_the_page() -> None:
    """Review 11 #2: the terminal lists each candidate's warnings (a calibration from other hardware, a package the
    method needs); the page people share lists them too, escaped, once each."""
    doc = _advice("advise-draft-does-not-fit.json")
    first, *rest = doc.candidates
    warned = replace(
        doc,
        candidates=(
            replace(
                first,
                warnings=(
                    "calibration bcal.json ran on CPU: <AMD> EPYC",
                    "calibration bcal.json ran on CPU: <AMD> EPYC",
                ),
            ),
            *rest,
        ),
    )
    page = render_html(warned)
    assert "<h2>Warnings</h2>" in page
    assert page.count("calibration bcal.json ran on CPU: &lt;AMD&gt; EPYC") == 1
    assert f"<b>{first.candidate}</b>: calibration bcal.json" in page
    quiet = replace(doc, candidates=tuple(replace(c, warnings=()) for c in doc.candidates))
    assert "<h2>Warnings</h2>" not in render_html(quiet)


def test_the_operating_load_s_seeds_are_on_the_page() -> None:
    """What the verdict rests on at the operating load (the mean of the replicate seeds and its interval) is said
    under the candidate's sweep table, whose cells are the sweep's one draw; a document without it says nothing."""
    doc = Advice.from_json(
        json.loads((GOLDEN.parent / "examples_published_fit" / "advise-evidence-llama3-70b-qwama-v0.json").read_text())
    )
    noise = doc.ranked[0].sampling
    assert noise is not None and noise.replicates == (0, 1, 2, 3, 4)
    page = render_html(doc)
    assert f"At the operating 10 QPS, k=4: {noise.words()} (seed 0, replicates 0, 1, 2, 3, 4)" in page
    # review s59: the best column's mean beside a k= cell's one draw read as a wrong best k; said where it holds it
    sim = doc.ranked[0].sim
    assert sim is not None
    holds = "the table's best column holds this mean (its k= cells keep their one draw)"
    assert sim.best_speedup_by_qps.get(10.0) == noise.mean and holds in page  # the golden's best is the mean
    bound = replace(doc.ranked[0], sim=replace(sim, best_speedup_by_qps={**sim.best_speedup_by_qps, 10.0: 0.5}))
    assert holds not in render_html(replace(doc, candidates=(bound,)))
    bare = replace(doc, candidates=tuple(replace(c, sampling=None) for c in doc.candidates))
    assert "At the operating" not in render_html(bare)


def test_the_edge_s_runs_and_a_repeated_schedule_check_are_on_the_page() -> None:
    """The runs either side of the edge an "enable below" names, and the schedule where it was run more than once,
    are said under the candidate's sweep table; a document without them says neither."""
    doc = Advice.from_json(
        json.loads((GOLDEN.parent / "examples_published_fit" / "advise-schedule-llama3-70b-qwama.json").read_text())
    )
    edges = doc.ranked[0].edge_sampling
    assert [n.qps for n in edges] == [4.0, 8.0]
    page = render_html(doc)
    for n in edges:
        assert f"At {n.qps:g} QPS, k={n.k}, either side of where the gain falls below the minimum: {n.words()}" in page
    bare = replace(doc, candidates=tuple(replace(c, edge_sampling=()) for c in doc.candidates))
    assert "either side of where the gain falls below" not in render_html(bare)
    one_b = Advice.from_json(
        json.loads((GOLDEN.parent / "examples_published_fit" / "advise-schedule-llama31-70b-1b.json").read_text())
    )
    repeated = [s for s in one_b.ranked[0].schedule_results if s.interval_90 is not None]
    assert [s.qps for s in repeated] == [8.0]
    assert f"The k-by-batch-size schedule at {repeated[0].words()}." in render_html(one_b)
