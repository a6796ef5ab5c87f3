"""What every document shares: its schema id and version, and reading a JSON file as one, with clear errors.

A document's ``schema`` is ``specwise.<kind>/<version>``. A reader takes its own kind at any version up to the one
it knows; a newer version is refused ("written by a newer specwise"), another kind is refused naming both kinds,
and a JSON file that is no specwise document at all is refused saying what was expected.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specwise.errors import SpecwiseError, as_written
from specwise.fileio import read_bytes_bounded

JsonObject = Mapping[str, Any]
MAX_DOCUMENT_BYTES = 64 * 2**20  # a document larger than this is not one specwise wrote


class DocumentError(SpecwiseError):
    """A file or JSON value that is not the document expected, in one line."""


@dataclass(frozen=True)
class Schema:
    kind: str  # e.g. "specwise.profile"
    version: int

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.version}"

    def check(self, data: JsonObject, where: str, *, required: bool = True) -> int:
        """The document's version; raises when ``data`` is another kind or newer. Without ``required``, a document
        with no ``schema`` key is taken as version 1 (files written before the key existed)."""
        raw = data.get("schema")
        if raw is None:
            if required:
                raise DocumentError(f"{where}: not a {self.kind} document (no 'schema' key)")
            return 1
        if not isinstance(raw, str) or "/" not in raw:
            raise DocumentError(f"{where}: 'schema' must look like '{self.id}', got {raw!r}")
        kind, _, version = raw.rpartition("/")
        if kind != self.kind:
            article = "an" if kind[:1].lower() in "aeiou" else "a"
            raise DocumentError(f"{where}: is {article} {kind} document, expected {self.kind}")
        if not version.isdigit():
            raise DocumentError(f"{where}: bad schema version in {raw!r}")
        if int(version) > self.version:
            raise DocumentError(
                f"{where}: {raw} was written by a newer specwise (this one reads up to {self.id}); upgrade specwise"
            )
        return int(version)


NEGATIVE_SCHEMA = Schema("specwise.no", 1)
"""What ``--json`` prints when a command's answer is "no" before it could write its own document (exit 1):
``{"schema", "command", "answer": "no", "why"}`` (specwise/cli ``_negative_json``)."""


def is_bench_result(data: JsonObject) -> bool:
    """A ``specwise bench`` result: its ``--json`` (the schema says so, or, written before the key, its ``configs``
    / ``levels``) or its ``--output`` ``.json`` (the ``format`` says so)."""
    schema, kind = data.get("schema"), data.get("format")
    if isinstance(kind, str) and kind.startswith("specwise bench --output/"):  # its rows, vllm bench serve's fields
        return True
    if isinstance(schema, str):
        return schema.startswith("specwise.bench/")
    return "configs" in data or "levels" in data


# What to run instead, when a bench result is given where a calibration file is read (advise / simulate / monitor
# --calibration, specwise calibrate)
CALIBRATE_A_BENCH_RUN = (
    "a specwise bench --launch run is calibrated by specwise bench --calibrate-run RUN_ID (the file --calibration "
    "takes); a server of yours, from vllm bench serve --save-result --save-detailed files by specwise calibrate"
)


def read_json_file(path: Path, what: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> JsonObject:
    """A JSON object from ``path``, bounded in size; every failure one line naming the file."""
    try:
        raw = read_bytes_bounded(path, max_bytes, what)
    except SpecwiseError as exc:
        raise DocumentError(str(exc)) from None
    if not raw.strip():
        raise DocumentError(f"{path}: empty file; expected a {what} JSON")
    try:
        doc = json.loads(raw.decode("utf-8-sig"))  # a leading BOM dropped, as read_text_bounded drops it
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DocumentError(f"{path}: not a readable {what} JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise DocumentError(f"{path}: a {what} JSON must be an object, got {type(doc).__name__}")
    return doc


class Fields:
    """Typed access to one JSON object's fields, each failure one line naming where (``file: results[2].k``)."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, Mapping):
            raise DocumentError(f"{where}: expected an object, got {type(data).__name__}")
        self.data: JsonObject = data
        self.where = where

    def at(self, key: str) -> str:
        """Where ``key`` is: ``file: key`` under a file, ``file: results[2].key`` further down."""
        return f"{self.where}{'.' if ': ' in self.where else ': '}{key}"

    def fail(self, key: str, message: str) -> DocumentError:
        return DocumentError(f"{self.at(key)}: {message}")

    def text(self, key: str, default: str | None = None, *, required: bool = False) -> str | None:
        value = self.data.get(key, default)
        if value is None and required:
            raise self.fail(key, "missing")
        if value is not None and not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {value!r}")
        return value

    def choice(self, key: str, choices: tuple[str, ...], *, required: bool = False) -> str:
        """A string that must be one of ``choices``; the first when the key is absent (unless ``required``)."""
        value = self.text(key, None if required else choices[0], required=required) or ""
        return self._one_of(key, value, choices)

    def optional_choice(self, key: str, choices: tuple[str, ...]) -> str | None:
        """One of ``choices``, or None where the document does not say."""
        value = self.text(key)
        return None if value is None else self._one_of(key, value, choices)

    def _one_of(self, key: str, value: str, choices: tuple[str, ...]) -> str:
        if value not in choices:
            raise self.fail(key, f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    def _bounded(self, key: str, value: float, low: float | None, high: float | None, what: str | None) -> None:
        """Refuses ``value`` (``key``'s, read) outside [low, high] (either end None: open), saying the value as the
        document writes it, the range, and ``what`` the value is in parentheses:
        ``run.json: k: 0: must be at least 1 (draft tokens per step)``."""
        if (low is None or value >= low) and (high is None or value <= high):
            return
        if low is not None and high is not None:
            bound = f"in [{low:g}, {high:g}]"
        else:
            bound = f"at least {low:g}" if low is not None else f"at most {high:g}"
        written = as_written(self.data.get(key, value), "json")  # -1 as the file has it, not float()'s -1.0
        raise self.fail(key, f"{written}: must be {bound}" + (f" ({what})" if what else ""))

    def number(
        self,
        key: str,
        default: float | None = None,
        *,
        required: bool = False,
        low: float | None = None,
        high: float | None = None,
        what: str | None = None,
    ) -> float | None:
        """A finite number (never a bool), in [low, high] where given (:meth:`_bounded`)."""
        value = self.data.get(key, default)
        if value is None:
            if required:
                raise self.fail(key, "missing")
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or value != value
            or abs(value) == float("inf")
        ):
            raise self.fail(key, f"expected a finite number, got {value!r}")
        self._bounded(key, value, low, high, what)
        return float(value)

    def integer(
        self,
        key: str,
        default: int | None = None,
        *,
        required: bool = False,
        low: int | None = None,
        high: int | None = None,
        what: str | None = None,
    ) -> int | None:
        """A whole number (``2.5`` refused, never truncated), in [low, high] where given (:meth:`_bounded`)."""
        value = self.number(key, default, required=required)
        if value is None:
            return None
        if value != int(value):
            raise self.fail(key, f"expected an integer, got {value!r}")
        self._bounded(key, value, low, high, what)
        return int(value)

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {value!r}")
        return value

    def numbers(self, key: str, *, allow_null: bool = False) -> tuple[float | None, ...]:
        value = self.data.get(key, [])
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise self.fail(key, f"expected a list of numbers, got {value!r}")
        out: list[float | None] = []
        for v in value:
            if v is None and allow_null:
                out.append(None)
            elif isinstance(v, bool) or not isinstance(v, int | float) or v != v:
                raise self.fail(key, f"expected a list of numbers, got {value!r}")
            else:
                out.append(float(v))
        return tuple(out)

    def objects(self, key: str) -> list[Fields]:
        value = self.data.get(key, [])
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise self.fail(key, f"expected a list, got {type(value).__name__}")
        return [Fields(v, f"{self.at(key)}[{i}]") for i, v in enumerate(value)]

    def object(self, key: str) -> Fields | None:
        value = self.data.get(key)
        return None if value is None else Fields(value, self.at(key))


def map_leaves(data: object, leaf: Callable[[object], object]) -> object:
    """``data`` (dicts, lists and tuples of values) with ``leaf`` applied to every value that is neither; tuples
    come back as lists, as JSON has them."""
    if isinstance(data, dict):
        return {k: map_leaves(v, leaf) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [map_leaves(v, leaf) for v in data]
    return leaf(data)


def json_safe(data: Any) -> Any:
    """``data`` with every NaN or infinity replaced by None: JSON has neither (RFC 8259 section 6), and a
    browser's ``JSON.parse`` fails on them (e.g. a percentile of no samples)."""
    return map_leaves(data, lambda v: v if not isinstance(v, float) or math.isfinite(v) else None)
