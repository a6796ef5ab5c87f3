"""The published evidence set: every record carries its provenance, the set is as large as promised, and the
speedup a record stands for is derived as its metric says."""

from __future__ import annotations

import pytest

from specwise.evidence.lengths import DATASETS, lengths_for
from specwise.evidence.records import LOAD_KINDS, all_records, load_families


def test_every_record_names_its_source_and_setup() -> None:
    for r in all_records():
        assert r.url.startswith("http"), r.id
        assert r.where and r.how_read, r.id
        assert r.engine in ("vllm", "sglang"), r.id
        assert r.gpu and r.target and r.method and r.metric, r.id
        assert r.load.kind in LOAD_KINDS and r.load.value > 0, r.id
    ids = [r.id for r in all_records()]
    assert len(ids) == len(set(ids))


def test_the_set_is_large_enough_with_slowdowns() -> None:
    measured = [r for r in all_records() if r.kind == "measured" and r.speculative and r.speedup is not None]
    slow = [r for r in measured if r.is_slowdown]
    assert len(measured) >= 40 and len(slow) >= 8
    assert len(load_families()) >= 5


def test_speedup_follows_the_metric() -> None:
    by_id = {r.id: r for r in all_records()}
    blog = by_id["vllm-blog-2024-llama3-70b-qwama-k4-sharegpt-qps10"]  # E2E latency: no-SD / SD
    assert blog.speedup == pytest.approx(blog.baseline_value / blog.value)  # type: ignore[operator]
    assert blog.is_slowdown
    tput = next(r for r in all_records() if r.metric == "output_tokens_per_s" and r.speculative and r.baseline_value)
    assert tput.speedup == pytest.approx(tput.value / tput.baseline_value)  # type: ignore[operator]
    plain = next(r for r in all_records() if not r.speculative)
    assert plain.speedup is None


def test_lengths_come_from_the_record_the_dataset_or_an_assumption_said_so() -> None:
    for r in all_records():
        got = lengths_for(r)
        assert got.prompt_tokens > 0 and got.output_tokens > 0
        if r.prompt_tokens is None and r.dataset not in DATASETS:
            assert got.assumed


def test_thinking_mode_records_say_their_output_lengths_are_assumed() -> None:
    thinking = [r for r in all_records() if r.reasoning and r.output_tokens is None]
    assert thinking
    for r in thinking:
        assert lengths_for(r).assumed, r.id


def test_reasoning_must_be_a_boolean() -> None:
    import pytest

    from specwise.contracts.document import DocumentError, Fields

    assert Fields({"reasoning": True}, "f.json").flag("reasoning") is True
    assert Fields({}, "f.json").flag("reasoning") is False
    with pytest.raises(DocumentError, match=r"f.json: reasoning: expected true or false"):
        Fields({"reasoning": "yes"}, "f.json").flag("reasoning")
