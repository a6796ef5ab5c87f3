"""The published evidence set: every record carries its provenance, the set is as large as promised, and the
speedup a record stands for is derived as its metric says."""

from __future__ import annotations

import dataclasses

import pytest

from specwise.evidence.lengths import DATASETS, lengths_for
from specwise.evidence.records import LOAD_KINDS, EvidenceRecord, all_records, load_families


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


def test_thinking_mode_records_without_thinking_lengths_have_none() -> None:
    """A thinking-mode record without its own lengths takes an assumption made for thinking (AIME, GPQA), or has no
    lengths: its dataset's were measured on non-thinking replies, several times shorter (review 14-B #2)."""
    thinking = [r for r in all_records() if r.reasoning and r.output_tokens is None]
    unknown = [r for r in thinking if lengths_for(r).unknown]
    assumed = [r for r in thinking if lengths_for(r).assumed]
    assert len(unknown) + len(assumed) == len(thinking)
    assert {r.dataset for r in unknown} == {"gsm8k", "cnn_dailymail", "sharegpt", "instructcoder"}
    assert {r.dataset for r in assumed} == {"aime", "gpqa_main"}
    assert all("thinking" in lengths_for(r).how for r in thinking)
    plain = next(r for r in all_records() if r.id == "sdb-fig1-qwen3-8b-gsm8k-ngram-bs1")
    assert not lengths_for(plain).unknown and not lengths_for(plain).assumed


def test_a_speedup_within_1pct_of_1_is_a_tie_not_a_slowdown() -> None:
    by_id = {r.id: r for r in all_records()}
    tie = by_id["llmd-2074-qwen3-32b-h200-tp2-eagle3-k3-qps8"]  # 209.7 vs 210.1 ms: "0%" in the source
    assert tie.speedup == pytest.approx(0.998, abs=5e-4)
    assert tie.is_tie and not tie.is_slowdown
    slow = by_id["sdb-fig1-qwen3-8b-cnndailymail-draftmodel-bs128"]  # 0.97x
    assert slow.is_slowdown and not slow.is_tie
    base = by_id["sdb-fig1-qwen3-8b-gsm8k-ngram-bs1"]
    cases = ((0.99, False, True), (0.9901, True, False), (1.0099, True, False), (1.01, False, False))
    for value, tie_, slowdown in cases:
        r = dataclasses.replace(base, value=value)
        assert (r.is_tie, r.is_slowdown) == (tie_, slowdown), value


def test_a_simulated_point_or_another_workload_is_another_series() -> None:
    """SpecDecode-Bench's Figure 10 simulated the runs Figure 1 measured, at other lengths: one series would mix
    both into one crossover (review 14-B #6)."""
    base = next(r for r in all_records() if r.id == "sdb-fig1-llama31-8b-gsm8k-ngram-bs1")
    assert dataclasses.replace(base, kind="simulated").series != base.series
    assert dataclasses.replace(base, output_tokens=500).series != base.series
    assert dataclasses.replace(base, id="other", value=2.0).series == base.series
    keys: dict[object, set[tuple[float, str]]] = {}
    for r in all_records():
        point = (r.load.value, r.metric)
        assert point not in keys.setdefault(r.series, set()), f"{r.id}: its series has this load twice"
        keys[r.series].add(point)


def test_reasoning_must_be_a_boolean() -> None:
    import pytest

    from specwise.contracts.document import DocumentError, Fields

    assert Fields({"reasoning": True}, "f.json").flag("reasoning") is True
    assert Fields({}, "f.json").flag("reasoning") is False
    with pytest.raises(DocumentError, match=r"f.json: reasoning: expected true or false"):
        Fields({"reasoning": "yes"}, "f.json").flag("reasoning")


def _record(**overrides: object) -> EvidenceRecord:
    data: dict[str, object] = {
        "id": "r1",
        "target": "meta-llama/Meta-Llama-3-70B-Instruct",
        "method": "none",
        "metric": "e2e_latency_s",
        "value": 2.0,
        "dataset": "sharegpt",
        "load": {"kind": "qps", "value": 1},
    }
    data.update(overrides)
    return EvidenceRecord.from_json(data, "fam", "https://example.invalid", "fam.json")


def test_a_benchmark_protocol_sets_the_lengths_it_sampled() -> None:
    """ShareGPT as vLLM's serving benchmark samples it (each request asks for its reply's length) is ~203 generated
    tokens with the Llama-3 tokenizer, not the 630 Llama-3 writes when left to finish (SpecDecode-Bench's traces);
    it is said to be ASSUMED (the source does not name its tool) and where the numbers come from."""
    default = lengths_for(_record())
    bench = lengths_for(_record(lengths_protocol="vllm-benchmark-serving"))
    assert default.output_tokens == DATASETS["sharegpt"].output_tokens and not default.assumed
    assert bench.output_tokens == pytest.approx(203.1) and bench.prompt_tokens == pytest.approx(229.7)
    assert bench.assumed and "vLLM PR #18566" in bench.how
    # a record's own lengths still win
    own = lengths_for(_record(lengths_protocol="vllm-benchmark-serving", prompt_tokens=100, output_tokens=50))
    assert (own.prompt_tokens, own.output_tokens) == (100, 50)


def test_a_protocol_without_lengths_for_the_dataset_or_an_unknown_one_is_refused() -> None:
    from specwise.contracts.document import DocumentError
    from specwise.errors import SpecError

    with pytest.raises(SpecError, match=r"r1: no lengths for dataset 'gsm8k' under lengths_protocol"):
        lengths_for(_record(dataset="gsm8k", lengths_protocol="vllm-benchmark-serving"))
    with pytest.raises(DocumentError, match=r"fam.json.*lengths_protocol: expected one of dataset, vllm-bench"):
        _record(lengths_protocol="guidellm")


def test_a_record_is_replayed_as_the_release_it_states_or_its_family_declares() -> None:
    assert _record(engine_version="0.15.1 (image vllm/vllm-openai:v0.15.1)").release == "0.15.1"
    assert _record(engine_version="v0.6").release == "0.6.0"
    unstated = _record(engine_version="not stated (main, March 2026)")
    assert unstated.release is None
    assert _record(engine_version="not stated (V0 engine assumed: before vLLM 0.8 made V1 its default)").release is None
    assert dataclasses.replace(unstated, replay_release="0.18.0").release == "0.18.0"
    # the shipped families that state no release declare one, each with its basis
    declared = {r.family: r.release for r in all_records() if r.replay_release is not None}
    assert declared == {"vllm-blog-p-eagle-2026": "0.18.0", "llm-d-guides": "0.24.0"}


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"version": "main", "basis": "b"}, r"src.json: source.replay_release.version: a release number"),
        ({"version": "0.18.0", "basis": " "}, r"source.replay_release.basis: state why"),
        ({"version": "0.18.0"}, r"source.replay_release.basis: missing"),
    ],
)
def test_a_declared_replay_release_is_a_number_with_its_basis(declared: dict[str, str], message: str) -> None:
    from specwise.contracts.document import DocumentError, Fields
    from specwise.evidence.records import _replay_release

    with pytest.raises(DocumentError, match=message):
        _replay_release(Fields({"replay_release": declared}, "src.json: source"))
