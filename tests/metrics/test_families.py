"""The family prefilter gives exactly the full parser's windows: on every fixture page, on first sight of a series
and from the memo, and falls back to the full parser where the text needs it."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specwise.errors import SpecwiseError
from specwise.loadgen.mock_server import MockServer
from specwise.metrics import parse_exposition
from specwise.metrics.families import FamilyParser
from specwise.monitor.window import WINDOW_SAMPLES, window_stats

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_metrics"
PAGES = sorted(FIXTURES.glob("*.txt"))


def _restricted(text: str):  # type: ignore[no-untyped-def]
    full = parse_exposition(text)
    return tuple(s for s in full.samples if s.name in WINDOW_SAMPLES)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_same_samples_as_the_full_parse(page: Path) -> None:
    text = page.read_text()
    parser = FamilyParser(WINDOW_SAMPLES)
    first, again = parser.parse(text), parser.parse(text)  # parsed by prometheus_client, then from the memo
    assert first.samples == again.samples == _restricted(text)
    assert len(first.samples) > 100


@pytest.mark.parametrize(("before", "after"), list(itertools.product(PAGES, PAGES)), ids=lambda p: p.name)
def test_identical_windows_on_every_fixture_pair(before: Path, after: Path) -> None:
    parser = FamilyParser(WINDOW_SAMPLES)
    b, a = before.read_text(), after.read_text()
    full = window_stats(parse_exposition(b), parse_exposition(a), 10.0)
    fast = window_stats(parser.parse(b), parser.parse(a), 10.0)
    assert fast == full


def test_identical_windows_on_the_mock_page() -> None:
    with MockServer() as server:
        text = server.httpd.metrics_text()
    parser = FamilyParser(WINDOW_SAMPLES)
    assert parser.parse(text).samples == _restricted(text)


def test_prefix_names_are_not_confused() -> None:
    text = (
        "# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
        'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 5\n'
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n"
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 3\n'
        'vllm:spec_decode_num_accepted_tokens_totally_else{engine="0"} 9\n'
    )
    names = [s.name for s in FamilyParser({"vllm:spec_decode_num_accepted_tokens_total"}).parse(text).samples]
    assert names == ["vllm:spec_decode_num_accepted_tokens_total"]


def test_counter_declared_without_total_goes_through_the_full_parser() -> None:
    text = "# TYPE vllm:generation_tokens counter\nvllm:generation_tokens 7\n"
    parsed = FamilyParser(WINDOW_SAMPLES).parse(text)
    assert [(s.name, s.value) for s in parsed.samples] == [("vllm:generation_tokens_total", 7.0)]


@pytest.mark.parametrize(
    "text",
    [
        "<html><body>oops</body></html>",
        'vllm:generation_tokens_total{model_name="m" 1\n',
        "vllm:generation_tokens_total 1_0\n",
    ],
)
def test_invalid_text_is_one_error(text: str) -> None:
    with pytest.raises(SpecwiseError, match="not valid Prometheus exposition text"):
        FamilyParser(WINDOW_SAMPLES).parse(text, "t")


def test_a_value_the_fast_path_refuses_goes_to_the_real_parser() -> None:
    parser = FamilyParser(WINDOW_SAMPLES)
    parser.parse('vllm:generation_tokens_total{model_name="m"} 1\n')
    with pytest.raises(SpecwiseError):
        parser.parse('vllm:generation_tokens_total{model_name="m"} x\n')
    nan = parser.parse('vllm:generation_tokens_total{model_name="m"} NaN\n').samples[0].value
    assert nan != nan


_LINES = st.sampled_from(
    [
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10',
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 1e3 1700000000000',
        "# HELP vllm:generation_tokens_total tokens",
        'vllm:generation_tokens_total{model_name="a b"} 5e3',
        "  vllm:num_requests_running 3  ",
        "vllm:num_requests_running{} +Inf",
        'vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 4',
        'vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 9',
        "vllm:time_to_first_token_seconds_count 9",
        "# TYPE vllm:time_to_first_token_seconds histogram",
        'other_metric{x="y"} 2',
        "",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=14))
def test_any_valid_page_gives_the_full_parsers_samples(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    try:
        expected = _restricted(text)
    except SpecwiseError:
        return  # the prefilter does not promise to reject what the full parser rejects in unwanted families
    parser = FamilyParser(WINDOW_SAMPLES)
    for _ in range(2):
        got = parser.parse(text).samples
        assert [(s.name, s.labels) for s in got] == [(s.name, s.labels) for s in expected]
        assert all(
            g.value == e.value or (g.value != g.value and e.value != e.value)
            for g, e in zip(got, expected, strict=True)
        )
