"""Reading one TOML table with errors that name the file and the field:
``scenario.toml: [[workload]] #2 'chat'.acceptance: must be <= 1.0, got 1.3``.

Used by every TOML a user writes (simulate and advise scenarios, bench launch files): numbers must be finite and
in range, integers real integers, unknown keys are refused with the allowed ones listed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from specwise.errors import SpecwiseError, as_written

MISSING: Any = object()
_TABLE_NAME = re.compile(r"\[[\w-]+\]")  # a top-level table as messages name it: [deployment]


class Section:
    def __init__(self, data: Any, where: str, file: str) -> None:
        if not isinstance(data, Mapping):
            if _TABLE_NAME.fullmatch(where) and isinstance(data, list) and all(isinstance(t, Mapping) for t in data):
                raise SpecwiseError(f"{file}: {where} must be a table, not an array of tables ([{where}])")
            raise SpecwiseError(f"{file}: {where}: expected a table")
        self.data: Mapping[str, Any] = data
        self.where, self.file = where, file

    def check_keys(self, allowed: set[str] | frozenset[str]) -> None:
        unknown = sorted(set(self.data) - set(allowed))
        if unknown:
            raise SpecwiseError(
                f"{self.file}: {self.where}: unknown key(s): {', '.join(unknown)} "
                f"(allowed: {', '.join(sorted(allowed))})"
            )

    def fail(self, key: str, message: str) -> SpecwiseError:
        return SpecwiseError(f"{self.file}: {self.where}.{key}: {message}")

    def error(self, message: str) -> SpecwiseError:
        return SpecwiseError(f"{self.file}: {self.where}: {message}")

    def sub(self, key: str, where: str | None = None) -> Section:
        """The table at ``key``, named ``where`` (``[deployment]``) in its errors and when it is missing."""
        name = where or f"{self.where}.{key}"
        if key not in self.data:
            raise SpecwiseError(f"{self.file}: {name}: required table is missing")
        return Section(self.data[key], name, self.file)

    def array_of_tables(self, key: str) -> Any:
        """The value at ``key``, where ``[[key]]`` tables are expected (None when absent): a single ``[key]`` table,
        which TOML reads as one table rather than a list of them, is refused saying how to write it."""
        value = self.data.get(key)
        if isinstance(value, Mapping):
            raise SpecwiseError(
                f"{self.file}: [{key}] is a single table; it must be written [[{key}]] (an array of tables)"
            )
        return value

    def get(self, key: str, default: Any = MISSING) -> Any:
        if key not in self.data:
            if default is MISSING:
                raise self.fail(key, "required field is missing")
            return default
        return self.data[key]

    def string(self, key: str, default: Any = MISSING) -> Any:
        value = self.get(key, default)
        if value is not default and not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {as_written(value)}")
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: Any = MISSING) -> Any:
        value = self.string(key, default)
        if value is not default and value not in choices:
            raise self.fail(key, f"expected one of {', '.join(choices)}, got {as_written(value)}")
        return value

    def positive_int(self, key: str, default: Any = MISSING, *, high: int | None = None) -> Any:
        return self._whole(key, default, 1, high, "a positive integer")

    def integer(self, key: str, default: Any = MISSING, *, low: int = 0, high: int | None = None) -> Any:
        """A whole number in [low, high]; a float (``1.5``, or even ``1.0``) is refused, never truncated."""
        return self._whole(key, default, low, high, f"an integer >= {low}")

    def _whole(self, key: str, default: Any, low: int, high: int | None, what: str) -> Any:
        """An int (not a bool, not a float) in [low, high]; ``what`` names the lower bound in the message."""
        value = self.get(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.fail(key, f"must be {what}, got {as_written(value)}")
        if high is not None and value > high:
            raise self.fail(key, f"must be <= {high:,}, got {value:,}")
        return value

    def number(
        self,
        key: str,
        default: Any = MISSING,
        *,
        low: float | None = None,
        high: float | None = None,
        strict_low: bool = False,
    ) -> Any:
        value = self.get(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"must be a number, got {as_written(value)}")
        if not math.isfinite(value):
            raise self.fail(key, f"must be a finite number, got {as_written(value)}")
        if low is not None and (value < low or (strict_low and value == low)):
            raise self.fail(key, f"must be {'>' if strict_low else '>='} {low}, got {value}")
        if high is not None and value > high:
            raise self.fail(key, f"must be <= {high}, got {value}")
        return float(value)

    def number_list(self, key: str, default: Any = MISSING) -> Any:
        value = self.get(key, default)
        if value is default:
            return value
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        ):
            raise self.fail(key, f"must be a non-empty list of numbers, got {as_written(value)}")
        if not all(math.isfinite(v) for v in value):
            raise self.fail(key, f"must be finite numbers, got {as_written(value)}")
        return [float(v) for v in value]
