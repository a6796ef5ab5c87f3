"""Advise and simulate sentences: said once, and a speedup that prints as 1.00x is not called paying; the serve
command wraps between arguments (terminal and HTML), never inside one."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from specwise.contracts.advice import Advice
from specwise.contracts.sweep import SweepResult
from specwise.engines.base import shell_lines
from specwise.report.advise_html import render_html
from specwise.report.sim import pays_sentence

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "examples"


def _advice(name: str) -> Advice:
    return Advice.from_json(json.loads((GOLDEN / name).read_text()))


def test_reasons_name_the_operating_load_once() -> None:
    for path in GOLDEN.glob("advise-*.json"):
        doc = _advice(path.name)
        for c in doc.candidates:
            assert c.reason.count("at the operating") <= 1, c.reason
            assert "pays" not in c.reason or "1.00x" not in c.reason
        assert doc.headline not in doc.reason


def test_measure_first_is_said_once() -> None:
    doc = _advice("advise-summarize-high-qps.json")
    text = doc.headline + " " + doc.reason
    assert text.count("measure") + text.count("Measure") <= 1


def _sweep(speedups: dict[float, float]) -> SweepResult:
    doc = SweepResult.from_json(json.loads((GOLDEN / "simulate-llama70b-4xh100.json").read_text()))
    steady = tuple(replace(b, overloaded=False) for b in doc.baseline)  # break-even, not capacity, under test
    return replace(doc, baseline=steady, best_speedup_by_qps=speedups, crossover_qps=None)


def test_break_even_is_not_paying() -> None:
    base = _sweep({q: 1.2 for q in (0.5, 1, 2, 4, 8, 12, 16)})
    assert "pays at every simulated rate up to 16 QPS" in pays_sentence(base)
    even = _sweep({**{q: 1.2 for q in (0.5, 1, 2, 4, 8, 12)}, 16: 1.001})
    sentence = pays_sentence(even)
    assert "every simulated rate" not in sentence and "breaks even (1.00x) at 16 QPS" in sentence
    flat = _sweep({q: 1.002 for q in (0.5, 1, 2, 4, 8, 12, 16)})
    assert "does not pay at any simulated rate" in pays_sentence(flat)


def test_shell_lines_one_flag_per_line_and_same_command() -> None:
    argv = ["vllm", "serve", "m/x", "--tp", "4", "--speculative-config", '{"method": "ngram"}', "--enforce-eager"]
    text = shell_lines(argv)
    lines = text.split(" \\\n  ")
    assert lines[0] == "vllm serve m/x" and lines[1] == "--tp 4" and lines[-1] == "--enforce-eager"
    assert shlex.split(text.replace("\\\n", " ")) == argv


def test_html_command_wraps_between_arguments() -> None:
    doc = _advice("advise-summarize-low-qps.json")
    page = render_html(doc)
    assert "break-all" not in page
    assert "<pre class='cmd'>" in page and "--tensor-parallel-size 4 \\\n" in page
    assert "http" not in page.split("<body>")[0].replace("http-equiv", "")  # still self-contained: nothing fetched


def test_text_quoting_a_files_tables_is_printed_not_read_as_markup() -> None:
    from rich.console import Console

    from specwise.report.advise import render_advise

    doc = _advice("advise-summarize-low-qps.json")
    quoted = "[deployment].tp = 4 would leave room; [[candidate]] 'x'"
    doc = replace(doc, reason=quoted, headline="[bold]not markup[/]")
    top = doc.ranked[0]
    rule = replace(top.rules[0], message="set [deployment].max_model_len = 4096")
    doc = replace(doc, candidates=tuple(replace(c, rules=(rule, *c.rules[1:])) for c in doc.candidates))
    out = Console(width=200, record=True)
    render_advise(doc, out)
    text = out.export_text()
    assert quoted in text and "[bold]not markup[/]" in text and "[deployment].max_model_len = 4096" in text


def test_a_gain_inside_the_band_is_said_to_be_a_point_estimate() -> None:
    """Review: "speculation pays at every simulated rate" while the band's low end was 0.96x and 0.83x."""
    doc = _sweep({**{q: 2.0 for q in (0.5, 1, 2, 4, 8, 12)}, 16: 1.2})
    sentence = pays_sentence(replace(doc, band=0.28))
    assert "pays at every simulated rate" in sentence
    assert "point estimates: the low end of the +-28% band is below 1x at 16 QPS" in sentence
    assert "point estimates" not in pays_sentence(replace(doc, band=0.1))


def test_a_warning_every_candidate_carries_is_said_once() -> None:
    """A scenario-wide note (a missing ``[advise].operating_qps``) was printed once per candidate."""
    from io import StringIO

    from rich.console import Console

    from specwise.report.advise import EVERY_CANDIDATE, grouped_warnings, render_advise

    doc = _advice("advise-summarize-low-qps.json")
    assert len(doc.ranked) > 1
    shared, own = "scenario-wide note", "only the first's"
    top = doc.ranked[0].candidate
    doc = replace(
        doc,
        candidates=tuple(
            replace(c, warnings=(*c.warnings, shared, own) if c.candidate == top else (shared, *c.warnings))
            for c in doc.candidates
        ),
    )
    pairs = grouped_warnings(doc)
    assert pairs.count((EVERY_CANDIDATE, shared)) == 1 and [w for _, w in pairs].count(shared) == 1
    assert (doc.ranked[0].candidate, own) in pairs
    out = StringIO()
    render_advise(doc, Console(file=out, width=200))
    assert out.getvalue().count(shared) == 1
    assert shared in render_html(doc) and render_html(doc).count(shared) == 1


def test_the_nearest_evidence_is_said_under_the_published_fit_only(capsys: pytest.CaptureFixture[str]) -> None:
    """advise names the held-back published measurements most like the deployment and the predictor's error on
    them (validate/nearest.py), with the command that lists them; the JSON reads back with it."""
    from specwise.cli import main

    scenario = "examples/advise/evidence-llama31-8b-eagle-rtx3090.toml"
    assert main(["advise", scenario, "--json"]) == 0  # measure first: at the k=2 capacity, a slowdown in the band
    doc = json.loads(capsys.readouterr().out)
    near = doc["nearby_evidence"]
    assert near["records"] == 8 and near["slowdowns"] == near["slowdowns_predicted"] == 3
    assert near["command"] == f"specwise validate --like {scenario}"
    assert all(rid.startswith("eagle3-paper-vllm-llama31-8b-eagle-") for rid in near["record_ids"][:7])
    assert Advice.from_json(doc).to_json()["nearby_evidence"] == near
    assert main(["advise", scenario, "--wide"]) == 0
    text = capsys.readouterr().out
    assert "nearest evidence: the 8 held-back published measurements most like this deployment (nearness" in text
    assert "3 of their 3 published slowdowns predicted below 1" in text
    assert f"at the 80th percentile, {near['within_25pct']:.0%} within +-25%" in text
    assert main(["advise", scenario, "--json", "--predictor", "roofline"]) in (0, 1)  # roofline: optimistic
    assert json.loads(capsys.readouterr().out)["nearby_evidence"] is None  # its error there is not stored
