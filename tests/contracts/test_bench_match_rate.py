"""A lookup's match rate from a bench run: vLLM's num_drafts over the decode steps the level's requests took
(output tokens - completed requests - accepted tokens); advise uses it with the measured per-match rates."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.advisor.evidence import names_match, resolve_evidence
from specwise.advisor.inputs import load_inputs
from specwise.contracts.bench import BenchConfig, BenchDoc, BenchLevel, SpecDecodeReading
from specwise.latency import LevelSummary, Percentiles

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "advise" / "summarize-low-qps.toml"
NOTHING = Percentiles.of_nothing()


def _level(requests: int, failed: int, tokens_per_request: float, drafts: float, accepted: float) -> BenchLevel:
    rate = 2.0  # completed requests/s; output tokens/s over the same span
    summary = LevelSummary(
        requests, NOTHING, NOTHING, NOTHING, NOTHING, rate * tokens_per_request, rate, None, failed=failed
    )
    counts = SpecDecodeCounts(drafts, drafts * 3, accepted, (accepted * 0.5, accepted * 0.3, accepted * 0.2))
    return BenchLevel(summary, SpecDecodeReading("vllm", counts))


def _doc() -> BenchDoc:
    levels = (_level(100, 0, 200.0, 4000.0, 6000.0), _level(110, 10, 150.0, 2000.0, 3000.0))
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, "prompt_lookup_max": 4}
    config = BenchConfig("ngram", "r", spec, "", levels)
    return BenchDoc("r", "db", "meta-llama/Llama-3.1-70B-Instruct", configs=(config,))


def test_the_match_rate_is_drafts_over_decode_steps() -> None:
    # level 1: 100 x 200 = 20,000 tokens - 100 first tokens - 6,000 accepted = 13,900 steps, 4,000 drafted
    # level 2: 100 completed x 150 = 15,000 - 100 - 3,000 = 11,900 steps, 2,000 drafted
    (cfg,) = _doc().configs
    assert cfg.match_rate() == pytest.approx(6000 / (13_900 + 11_900))
    measured = _doc().measured_acceptance("ngram", None, names_match)
    assert measured is not None and measured.match_rate == cfg.match_rate()
    assert "of decode steps (drafts / steps)" in measured.source


def test_advise_uses_the_measured_match_rate() -> None:
    inputs = load_inputs(EXAMPLE)
    ngram = next(c for c in inputs.candidates if c.label == "ngram")
    (ev,) = resolve_evidence(inputs, ngram, [], [_doc()])
    assert ev.kind == "measured" and ev.proposal_rate == pytest.approx(6000 / 25_800)
    assert "ASSUMED" not in ev.source


def test_no_completed_request_gives_no_rate() -> None:
    levels = (_level(10, 10, 200.0, 400.0, 600.0),)
    cfg = BenchConfig("ngram", "r", {"method": "ngram"}, "", levels)
    assert cfg.match_rate() is None
