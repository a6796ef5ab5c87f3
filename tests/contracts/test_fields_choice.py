"""``Fields.choice`` and ``Fields.optional_choice`` share one membership check: a value outside the choices is refused
in one line naming the file and field, the choices and the value; absent, ``choice`` takes the first and
``optional_choice`` says nothing (None)."""

from __future__ import annotations

import pytest

from specwise.contracts.document import DocumentError, Fields

CHOICES = ("fp8", "int8")


def test_absent() -> None:
    assert Fields({}, "d.json").choice("q", CHOICES) == "fp8"
    assert Fields({}, "d.json").optional_choice("q", CHOICES) is None
    with pytest.raises(DocumentError, match=r"^d.json: q: missing$"):
        Fields({}, "d.json").choice("q", CHOICES, required=True)


@pytest.mark.parametrize("read", [Fields.choice, Fields.optional_choice])
def test_one_of_them_or_refused_alike(read: object) -> None:
    assert read(Fields({"q": "int8"}, "d.json"), "q", CHOICES) == "int8"  # type: ignore[operator]
    with pytest.raises(DocumentError, match=r"^d.json: q: expected one of fp8, int8, got 'fp4'$"):
        read(Fields({"q": "fp4"}, "d.json"), "q", CHOICES)  # type: ignore[operator]
    with pytest.raises(DocumentError, match=r"^d.json: q: expected a string, got 8$"):
        read(Fields({"q": 8}, "d.json"), "q", CHOICES)  # type: ignore[operator]
