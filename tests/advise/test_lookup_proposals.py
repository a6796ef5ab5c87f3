"""advise prices an n-gram candidate as vLLM runs it: a step without a match drafts nothing and costs a plain step
(``vllm/v1/spec_decode/ngram_proposer.py`` returns no draft tokens), so only matching steps pay for verification."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from specwise.acceptance.model import AcceptanceModel
from specwise.advisor.decision import advise, scenario_for
from specwise.advisor.evidence import resolve_evidence
from specwise.advisor.inputs import load_inputs, parse_inputs
from specwise.cli import main
from specwise.contracts.profile import ProfileDoc
from specwise.perfmodel.profiles import published_fit
from specwise.study.sweep import run_cell

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "advise" / "summarize-low-qps.toml"
CNN_DM_PER_STEP = (0.1235, 0.0896, 0.0684, 0.0539, 0.0429)  # SpecDecode-Bench, the prior's source


def test_the_ngram_prior_drafts_only_on_a_match_and_keeps_the_measured_per_step_rates() -> None:
    inputs = load_inputs(EXAMPLE)
    ngram = next(c for c in inputs.candidates if c.label == "ngram")
    (ev,) = resolve_evidence(inputs, ngram, [], [])
    assert ev.kind == "assumed" and 0.1 < ev.proposal_rate < 0.3
    assert "a match in" in ev.source
    per_match = ev.model.per_position(5)
    assert per_match[0] == pytest.approx(published_fit().first_given_match)
    assert [ev.proposal_rate * a for a in per_match] == pytest.approx(CNN_DM_PER_STEP)
    (cls,) = scenario_for(inputs, ngram, [ev]).classes
    assert cls.proposal_rate == ev.proposal_rate


def test_drafting_only_on_matches_costs_less_than_verifying_every_step_at_the_same_accepted_tokens() -> None:
    """Same expected accepted tokens per step; the old pricing verified k tokens at every step."""
    inputs = load_inputs(EXAMPLE)
    ngram = next(c for c in inputs.candidates if c.label == "ngram")
    (ev,) = resolve_evidence(inputs, ngram, [], [])
    sc = scenario_for(inputs, ngram, [ev])
    (cls,) = sc.classes
    every_step = replace(
        sc, classes=(replace(cls, proposal_rate=1.0, acceptance=AcceptanceModel.from_per_position(CNN_DM_PER_STEP)),)
    )
    on_match, always = run_cell(sc, 4.0, 4).summary, run_cell(every_step, 4.0, 4).summary
    assert on_match.overall.tpot_s.p50 < always.overall.tpot_s.p50
    # per draft, vLLM's AL: per match it is far higher than per step
    assert on_match.mean_acceptance_length is not None and always.mean_acceptance_length is not None
    assert on_match.mean_acceptance_length > always.mean_acceptance_length + 0.5


def _ngram_profile(tmp_path: Path) -> Path:
    profile = {
        "schema": "specwise.profile/1",
        "method": "ngram",
        "target": "meta-llama/Llama-3.1-70B-Instruct",
        "draft": None,
        "results": [
            {"temperature": 0.0, "drafting": "greedy", "quantization": {}, "class": None,
             "per_position_acceptance": [0.6, 0.4, 0.3, 0.2],
             "by_k": [{"k": 4, "per_position_acceptance": [0.6, 0.4, 0.3, 0.2]}]}  # no steps: match rate unknown
        ],
    }  # fmt: skip
    path = tmp_path / "ngram.json"
    path.write_text(json.dumps(profile))
    return path


def test_a_profiled_lookup_is_per_match_at_the_assumed_match_rate_and_says_so(tmp_path: Path) -> None:
    """The profiler (like vLLM) counts a lookup's drafts only on a match: its rates are per match, and how often a
    match is found is not in the document -- the prior's match rate is used and said to be assumed, never a
    match at every step (which would credit the per-match rates to every step)."""
    inputs = load_inputs(EXAMPLE)
    ngram = next(c for c in inputs.candidates if c.label == "ngram")
    (ev,) = resolve_evidence(inputs, ngram, [ProfileDoc.read(_ngram_profile(tmp_path))], [])
    (assumed,) = resolve_evidence(inputs, ngram, [], [])
    assert ev.kind == "profiled" and ev.proposal_rate == assumed.proposal_rate < 0.3
    assert "match rate ASSUMED" in ev.source and "match_rate ~=" in ev.source and ev.match_rate_assumed
    assert ev.model.per_position(4) == pytest.approx((0.6, 0.4, 0.3, 0.2))


def test_a_given_match_rate_is_used(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace(
        "prompt_lookup_max = 4\n", "prompt_lookup_max = 4\nper_position = [0.6, 0.4, 0.3]\nmatch_rate = 0.45\n"
    )
    path = tmp_path / "s.toml"
    path.write_text(text)
    inputs = load_inputs(path)
    ngram = next(c for c in inputs.candidates if c.label == "ngram")
    (ev,) = resolve_evidence(inputs, ngram, [], [])
    assert ev.kind == "given" and ev.proposal_rate == 0.45 and "45% of steps (given)" in ev.source


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        ("method = 'draft_model'\ndraft = 'meta-llama/Llama-3.2-1B-Instruct'\nacceptance = 0.7\nmatch_rate = 0.5",
         "draft_model drafts every step"),
        ("method = 'ngram'\nmatch_rate = 0.5", "goes with the per-match acceptance"),
        ("method = 'ngram'\nper_position = [0.5]\nmatch_rate = 1.5", "match_rate"),
    ],
)  # fmt: skip
def test_a_match_rate_where_it_means_nothing_is_refused(
    candidate: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.toml"
    path.write_text(EXAMPLE.read_text() + f"\n[[candidate]]\nname = 'extra'\n{candidate}\n")
    assert main(["advise", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "[[candidate]] #3" in err and "Traceback" not in err


def test_an_assumed_match_rate_is_said_with_the_assumed_acceptance(tmp_path: Path) -> None:
    """Review 2: rates given, match rate from the prior -- the headline's ASSUMED list names the workload."""
    text = EXAMPLE.read_text().replace(
        "prompt_lookup_max = 4\n", "prompt_lookup_max = 4\nper_position = [0.6, 0.4, 0.3]\n"
    )
    data = tomllib.loads(text)
    data["candidate"] = [c for c in data["candidate"] if c["method"] == "ngram"]
    doc = advise(parse_inputs(data, "s.toml", tmp_path), processes=1)
    (ev,) = doc.candidates[0].evidence
    assert ev.kind == "given" and ev.match_rate_assumed and doc.assumed_acceptance_for == ("summarize",)


def test_a_profile_that_walked_its_steps_gives_the_match_rate(tmp_path: Path) -> None:
    """Review 2: the profiler walks every step, matched or not; its document records the steps, so a profiled
    n-gram's match rate is measured (drafts / steps), not assumed."""
    by_k = {
        "k": 4,
        "acceptance_rate": 0.4,
        "mean_acceptance_length": 2.6,
        "ci95": [None, None],
        "mean_acceptance_length_ci95": [None, None],
        "per_position_acceptance": [0.6, 0.4, 0.3, 0.2],
        "num_drafts": 30.0,
        "num_draft_tokens": 120.0,
        "num_accepted_tokens": 45.0,
        "num_steps": 120.0,
    }
    profile = json.loads(_ngram_profile(tmp_path).read_text())
    profile["results"][0]["by_k"] = [by_k]
    path = tmp_path / "walked.json"
    path.write_text(json.dumps(profile))
    inputs = load_inputs(EXAMPLE)
    ngram = next(c for c in inputs.candidates if c.label == "ngram")
    (ev,) = resolve_evidence(inputs, ngram, [ProfileDoc.read(path)], [])
    assert ev.kind == "profiled" and ev.proposal_rate == 0.25 and not ev.match_rate_assumed
    assert "a match in 25% of steps (profiled)" in ev.source and "ASSUMED" not in ev.source


def test_an_assumed_lookup_prior_says_its_match_rate_is_assumed_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 14: the n-gram prior's evidence said ``match_rate_assumed: false`` though its match rate (the
    proposal rate) is the prior's, read as "not assumed"; a draft model, which has no match rate, still says false."""
    assert main(["advise", "--scenario", str(EXAMPLE), "--json", "--processes", "1"]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)
    evidence = {c["method"]: c["evidence"] for c in doc["candidates"]}
    [ngram] = evidence["ngram"]
    assert ngram["kind"] == "assumed" and ngram["proposal_rate"] < 0.3 and ngram["match_rate_assumed"] is True
    assert all(e["match_rate_assumed"] is False for e in evidence["draft_model"])
