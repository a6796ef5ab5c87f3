from __future__ import annotations

import pytest

from specwise.metrics import parse_exposition
from specwise.metrics.engines import llamacpp_acceptance, sglang_acceptance


def _llama(drafted: float, accepted: float, old_names: bool = False) -> str:
    d, a = ("n_draft_total", "n_draft_accepted_total") if old_names else ("n_drafted_total", "n_drafted_accepted_total")
    return (
        f"# TYPE llamacpp:{d} counter\nllamacpp:{d} {drafted}\n"
        f"# TYPE llamacpp:{a} counter\nllamacpp:{a} {accepted}\n"
        "# TYPE llamacpp:n_decode_total counter\nllamacpp:n_decode_total 999\n"
    )


@pytest.mark.parametrize("old_names", [False, True])
def test_llamacpp_counters(old_names: bool) -> None:
    got = llamacpp_acceptance(
        parse_exposition(_llama(100, 60, old_names)), parse_exposition(_llama(500, 320, old_names))
    )
    assert got is not None
    reading, reset = got
    assert reading.acceptance_rate == pytest.approx(260 / 400)
    assert reading.acceptance_length is None and not reset
    assert reading.to_json()["spec_decode_draft_tokens"] == 400


def test_llamacpp_restart_and_absence() -> None:
    got = llamacpp_acceptance(parse_exposition(_llama(500, 320)), parse_exposition(_llama(40, 30)))
    assert got is not None and got[1] and got[0].acceptance_rate == pytest.approx(0.75)
    assert llamacpp_acceptance(parse_exposition("x 1\n"), parse_exposition("x 2\n")) is None


def test_sglang_gauges() -> None:
    text = (
        '# TYPE sglang:spec_accept_rate gauge\nsglang:spec_accept_rate{tp_rank="0"} 0.5\n'
        'sglang:spec_accept_rate{tp_rank="1"} 0.6\n# TYPE sglang:spec_accept_length gauge\n'
        'sglang:spec_accept_length{tp_rank="0"} 2.5\n'
    )
    got = sglang_acceptance(parse_exposition(text))
    assert got is not None
    assert got.to_json() == {
        "engine": "sglang",
        "spec_decode_acceptance_rate": pytest.approx(0.55),
        "spec_decode_acceptance_length": 2.5,
    }
    assert sglang_acceptance(parse_exposition("x 1\n")) is None
