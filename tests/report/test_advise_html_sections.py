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
    bare = replace(doc, candidates=tuple(replace(c, sampling=None) for c in doc.candidates))
    assert "At the operating" not in render_html(bare)
