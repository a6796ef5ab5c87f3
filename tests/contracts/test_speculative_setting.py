"""One reading of a launched server's --speculative-config: method, draft and k."""

from __future__ import annotations

from typing import Any

import pytest

from specwise.contracts.bench import SpeculativeSetting


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (None, SpeculativeSetting()),
        ({}, SpeculativeSetting()),
        ({"method": "ngram", "num_speculative_tokens": 4}, SpeculativeSetting("ngram", None, 4)),
        (
            {"method": "draft_model", "model": "/m/d", "num_speculative_tokens": 3.0},
            SpeculativeSetting("draft_model", "/m/d", 3),
        ),
        ({"method": 7, "model": ["x"], "num_speculative_tokens": "4"}, SpeculativeSetting()),
        ({"method": "ngram", "num_speculative_tokens": True}, SpeculativeSetting("ngram", None, 0)),
        ({"method": "ngram", "num_speculative_tokens": 2.5}, SpeculativeSetting("ngram", None, 0)),
        ({"method": "ngram", "num_speculative_tokens": -3}, SpeculativeSetting("ngram", None, 0)),
    ],
)
def test_a_config_is_read_once_and_a_wrong_type_is_not_given(
    config: dict[str, Any] | None, expected: SpeculativeSetting
) -> None:
    assert SpeculativeSetting.of(config) == expected
