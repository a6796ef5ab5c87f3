"""A lookup record whose source published vLLM's counters (adixg/vllm-specdecode-cost-model: n-gram k=3) carries its
match rate, drafts / decode steps, and its per-position rates per match (vLLM's definition); the replay drafts on
that share of steps with those rates instead of splitting per-step trace rates with the fitted first-token rate,
which read vLLM's per-match 0.38 as a match in 54% of steps (15.7% measured) and predicted 1.56x for a 0.91x."""

from __future__ import annotations

import pytest

from specwise.contracts.document import DocumentError
from specwise.evidence.records import EvidenceRecord, all_records
from specwise.validate.predict import published_acceptance


def _ngram(**overrides: object) -> EvidenceRecord:
    data: dict[str, object] = {
        "id": "r1",
        "target": "Qwen/Qwen2.5-1.5B-Instruct",
        "method": "ngram",
        "k": 3,
        "metric": "output_tokens_per_s",
        "value": 68.38,
        "baseline_value": 75.22,
        "load": {"kind": "concurrency", "value": 1},
        "per_position": [0.37615, 0.14679, 0.08257],
    }
    data.update(overrides)
    return EvidenceRecord.from_json(data, "fam", "https://example.invalid", "fam.json")


def test_a_published_match_rate_is_drafted_on_as_published() -> None:
    got = published_acceptance(_ngram(match_rate=0.1566), first_given_match=0.69)
    assert got is not None and got.proposal_rate == 0.1566
    assert got.model.per_position(3) == pytest.approx((0.37615, 0.14679, 0.08257))
    assert "published counts" in got.how
    # without it the rates are read as per-step trace rates and split with the first-token rate
    split = published_acceptance(_ngram(), first_given_match=0.69)
    assert split is not None and split.proposal_rate == pytest.approx(0.37615 / 0.69)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"match_rate": 0.0}, r"match_rate: a share of decode steps, in \(0, 1\]; got 0"),
        ({"match_rate": 1.5}, r"match_rate: a share of decode steps, in \(0, 1\]; got 1.5"),
        ({"match_rate": 0.2, "per_position": None}, "match_rate: comes with per_position"),
        ({"match_rate": 0.2, "method": "draft_model"}, "match_rate: only a lookup method .* 'draft_model'"),
    ],
)
def test_a_match_rate_that_cannot_be_is_refused(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(DocumentError, match=message):
        _ngram(**overrides)


def test_the_shipped_ngram_records_with_counts_match_vllms_formula() -> None:
    """Each adixg n-gram record's match rate is its notes' drafts / (6,144 - accepted - 48)."""
    import re

    ngram = [r for r in all_records() if r.family == "adixg-specdecode-cost-model" and r.method == "ngram"]
    assert len(ngram) == 7
    for r in ngram:
        m = re.search(r"num_drafts (\d+) / decode steps (\d+) \(6,144 generated - (\d+) accepted - 48", r.notes)
        assert m is not None, r.id
        drafts, steps, accepted = (int(x) for x in m.groups())
        assert steps == 6144 - accepted - 48
        assert r.match_rate == pytest.approx(drafts / steps, abs=1e-4)


def test_the_formula_against_the_sources_draft_model_rows() -> None:
    """Where every decode step drafts (a draft model), vLLM's num_drafts is the decode-step count the match-rate
    formula estimates: the source's own rows put the formula within 6% (review H #8: it undercounts by the tokens a
    request's last step accepts past max_tokens, so it is approximate, and so the hint says)."""
    import re

    from specwise.acceptance.lookup import MATCH_RATE_HINT

    rows = [r for r in all_records() if r.family == "adixg-specdecode-cost-model" and r.method == "draft_model"]
    assert len(rows) == 21
    for r in rows:
        m = re.search(r"accepted (\d+) of \d+ draft tokens in (\d+) drafts", r.notes)
        assert m is not None, r.id
        accepted, drafts = int(m.group(1)), int(m.group(2))
        steps = 6144 - accepted - 48
        assert 1.0 <= drafts / steps <= 1.065, (r.id, drafts, steps)
    assert "approximate" in MATCH_RATE_HINT and "~=" in MATCH_RATE_HINT
