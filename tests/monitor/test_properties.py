"""Property tests: any text -> a Scrape or one SpecwiseError; windows never report negative rates."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from specwise.errors import SpecwiseError
from specwise.metrics import parse_exposition
from specwise.monitor.window import window_stats

_LINES = st.sampled_from(
    [
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10',
        "# TYPE vllm:generation_tokens_total counter",
        'vllm:generation_tokens_total{model_name="m"} 5e3',
        'vllm:num_requests_running{model_name="m"} 3',
        "vllm:x{ 1",
        "garbage line",
        "# HELP something",
        "",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=12), st.text(max_size=40))
def test_any_text_parses_or_fails_with_one_error(lines: list[str], noise: str) -> None:
    text = "\n".join(lines) + "\n" + noise
    try:
        scrape = parse_exposition(text)
    except SpecwiseError as exc:
        assert "\n" not in str(exc)
    else:
        assert all(isinstance(s.value, float) for s in scrape.samples)


def _page(drafts: float, tokens: float, accepted: float, generated: float) -> str:
    lab = 'engine="0",model_name="m"'
    return (
        f"# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total{{{lab}}} {drafts}\n"
        f"# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
        f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {tokens}\n"
        f"# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
        f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {accepted}\n"
        f"# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{{{lab}}} {generated}\n"
    )


_counts = st.tuples(st.integers(0, 10**5), st.integers(1, 8), st.floats(0, 1), st.integers(0, 10**6))


@settings(max_examples=300, deadline=None)
@given(_counts, _counts, st.floats(0.1, 600))
def test_windows_never_go_negative_even_across_restarts(a: tuple, b: tuple, window_s: float) -> None:
    def page(c: tuple) -> str:
        drafts, k, frac, gen = c
        return _page(drafts, drafts * k, int(drafts * k * frac), gen)

    s = window_stats(parse_exposition(page(a)), parse_exposition(page(b)), window_s)
    for value in (s.drafts, s.draft_tokens_per_s, s.accepted_tokens_per_s, s.generation_tokens_per_s):
        assert value is None or value >= 0
    if s.acceptance_rate is not None:
        assert 0 <= s.acceptance_rate <= 1
    if s.mean_acceptance_length is not None:
        assert s.mean_acceptance_length >= 1
