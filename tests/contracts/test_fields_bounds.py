"""``Fields.number`` / ``Fields.integer`` with ``low`` / ``high`` (inclusive): a value outside is refused in one line
naming the file and the field, the value as the document writes it, and the range."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from specwise.contracts.document import DocumentError, Fields
from specwise.errors import SpecwiseError


def _number(value: object, low: float | None = None, high: float | None = None) -> float | None:
    return Fields({"x": value}, "d.json").number("x", low=low, high=high)


def _integer(value: object, low: int | None = None, high: int | None = None) -> int | None:
    return Fields({"x": value}, "d.json").integer("x", low=low, high=high)


@pytest.mark.parametrize(
    ("read", "value", "low", "high", "says"),
    [
        (_number, -0.5, 0, None, r"-0\.5: must be at least 0"),
        (_number, 0, 0, None, None),
        (_number, 0.5, 0, None, None),
        (_number, 0.5, None, 1, None),
        (_number, 1, None, 1, None),
        (_number, 1.5, None, 1, r"1\.5: must be at most 1"),
        (_integer, 0, 1, None, r"0: must be at least 1"),
        (_integer, 1, 1, None, None),
        (_integer, 2, 1, None, None),
        (_integer, 3, None, 4, None),
        (_integer, 4, None, 4, None),
        (_integer, 5, None, 4, r"5: must be at most 4"),
    ],
)
def test_each_bound_is_inclusive(
    read: Callable[..., float | None], value: float, low: float | None, high: float | None, says: str | None
) -> None:
    """Below, at and above each bound, for numbers and integers: the bound itself is allowed."""
    if says is None:
        assert read(value, low=low, high=high) == value
    else:
        with pytest.raises(DocumentError, match=rf"^d\.json: x: {says}$"):
            read(value, low=low, high=high)


@pytest.mark.parametrize(
    ("value", "says"),
    [(-1, r"-1: must be in \[0, 1\]"), (0, None), (1, None), (1.25, r"1\.25: must be in \[0, 1\]")],
)
def test_both_bounds_are_said_as_one_range(value: float, says: str | None) -> None:
    if says is None:
        assert _number(value, low=0, high=1) == value
    else:
        with pytest.raises(DocumentError, match=rf"^d\.json: x: {says}$"):
            _number(value, low=0, high=1)


def test_the_value_is_said_as_written_and_what_it_is_in_parentheses() -> None:
    f = Fields({"n": -1, "m": -2.0, "k": 0}, "run.json: results[2]")
    with pytest.raises(DocumentError, match=r"^run\.json: results\[2\]\.n: -1: must be at least 0 \(a count\)$"):
        f.number("n", low=0, what="a count")  # -1 as written, not float()'s -1.0
    with pytest.raises(DocumentError, match=r"^run\.json: results\[2\]\.m: -2\.0: must be at least 0$"):
        f.integer("m", low=0)
    with pytest.raises(DocumentError, match=r"k: 0: must be at least 1 \(draft tokens per step\)$") as exc:
        f.integer("k", required=True, low=1, what="draft tokens per step")
    assert isinstance(exc.value, SpecwiseError)  # the CLI's exit 2


def test_what_is_not_a_number_is_refused_as_before_any_bound() -> None:
    with pytest.raises(DocumentError, match=r"^d\.json: x: expected a finite number, got True$"):
        _number(True, low=0)  # a bool is not a number, though True >= 0
    with pytest.raises(DocumentError, match=r"^d\.json: x: expected a finite number, got False$"):
        _integer(False, low=0, high=1)
    with pytest.raises(DocumentError, match=r"^d\.json: x: expected an integer, got 0\.5$"):
        _integer(0.5, low=1)  # not "must be at least 1": the integer check comes first


def test_absent_or_null_is_not_bounded() -> None:
    f = Fields({"null": None}, "d.json")
    assert f.number("absent", low=1) is None and f.number("null", low=1) is None
    assert f.integer("absent", low=1, high=2) is None and f.integer("null", low=1) is None
    assert f.integer("absent", 3, low=1) == 3
    with pytest.raises(DocumentError, match=r"^d\.json: absent: missing$"):
        f.integer("absent", required=True, low=1)
