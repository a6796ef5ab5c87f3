"""errors.as_written: a value read from a user's TOML or JSON file, shown in a message as the file writes it."""

from __future__ import annotations

import datetime
import math

import pytest

from specwise.errors import as_written


@pytest.mark.parametrize(
    ("value", "toml", "json"),
    [
        (True, "true", "true"),
        (False, "false", "false"),
        (None, "null", "null"),
        (datetime.date(1979, 5, 27), "1979-05-27", "1979-05-27"),
        (datetime.datetime(1979, 5, 27, 7, 32), "1979-05-27T07:32:00", "1979-05-27T07:32:00"),
        (datetime.time(7, 32), "07:32:00", "07:32:00"),
        ({"name": "H100"}, "a table", "an object"),
        ([1, True, {"a": 1}], "[1, true, a table]", "[1, true, an object]"),
        ("H100", "'H100'", "'H100'"),
        (1.5, "1.5", "1.5"),
        (7, "7", "7"),
        (math.inf, "inf", "Infinity"),
        (math.nan, "nan", "NaN"),
    ],
)
def test_a_value_is_shown_as_its_file_writes_it(value: object, toml: str, json: str) -> None:
    assert as_written(value) == toml
    assert as_written(value, "json") == json
