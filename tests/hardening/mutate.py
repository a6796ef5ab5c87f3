"""Mutations of real input documents (scenario TOML, profile/bench JSON, config.json): every leaf replaced by
values of the wrong kind, size or finiteness. Used by the hardening tests and ``scripts/hardening_table.py``."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Path_ = tuple[str | int, ...]

BAD_VALUES: tuple[tuple[str, Any], ...] = (
    ("inf", math.inf),
    ("-inf", -math.inf),
    ("nan", math.nan),
    ("negative", -1),
    ("zero", 0),
    ("huge", 10**12),
    ("string", "hot"),
    ("mathtext", "$\\foo{$"),
    ("empty list", []),
    ("table", {"x": 1}),
    ("bool", True),
)


@dataclass(frozen=True)
class Mutation:
    path: Path_
    label: str
    value: Any

    @property
    def name(self) -> str:
        return ".".join(str(p) for p in self.path) + f"={self.label}"


def leaves(doc: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Paths to every value in ``doc``: scalars, lists, and the tables and arrays of tables themselves."""
    if isinstance(doc, dict):
        if prefix:
            yield prefix
        for key, value in doc.items():
            yield from leaves(value, (*prefix, key))
    elif isinstance(doc, list) and doc and all(isinstance(v, dict) for v in doc):
        yield prefix
        for i, value in enumerate(doc):
            yield from leaves(value, (*prefix, i))
    else:
        yield prefix


def mutations(doc: Any) -> Iterator[Mutation]:
    for path in leaves(doc):
        for label, value in BAD_VALUES:
            yield Mutation(path, label, value)
    for path in leaves(doc):  # a missing field
        yield Mutation(path, "missing", _MISSING)


_MISSING = object()


def apply(doc: Any, m: Mutation) -> Any:
    out = copy.deepcopy(doc)
    node = out
    for key in m.path[:-1]:
        node = node[key]
    if m.value is _MISSING:
        del node[m.path[-1]]
    else:
        node[m.path[-1]] = copy.deepcopy(m.value)
    return out


def dump_json(doc: Any) -> str:
    return json.dumps(doc, allow_nan=True)


def dump_toml(doc: dict[str, Any]) -> str:
    """A small TOML writer (tables, arrays of tables, inline tables, inf/nan) -- enough for scenario files."""
    lines: list[str] = []
    _table(doc, (), lines)
    return "\n".join(lines) + "\n"


def _table(doc: dict[str, Any], prefix: tuple[str, ...], lines: list[str]) -> None:
    subtables = []
    for key, value in doc.items():
        if isinstance(value, dict) and not _inline(key, prefix):
            subtables.append((key, value, False))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            subtables.append((key, value, True))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value, array in subtables:
        name = ".".join(_key(k) for k in (*prefix, key))
        if array:
            for item in value:
                lines.append(f"\n[[{name}]]")
                _table(item, (*prefix, key), lines)
        else:
            lines.append(f"\n[{name}]")
            _table(value, (*prefix, key), lines)


def _inline(key: str, prefix: tuple[str, ...]) -> bool:
    return bool(prefix)  # tables below the top level are written inline (token distributions, etc.)


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))
