"""Typed field access on a parsed ``config.json`` with one-line errors that name the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specwise.errors import SpecwiseError

_MISSING = object()


MAX_CONFIG_INT = 2**32  # no dimension, vocabulary or position count of a real model comes near this
MAX_LAYERS = 10_000


class ConfigFields:
    """Read fields of a config mapping; every failure names ``where`` and the field."""

    def __init__(self, data: Mapping[str, Any], where: str) -> None:
        self.data = data
        self.where = where

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def raw(self, key: str, default: Any = None) -> Any:
        value = self.data.get(key)
        return default if value is None else value

    def positive_int(self, key: str, default: Any = _MISSING) -> int:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise SpecwiseError(f"{self.where}: required field {key!r} is missing")
            return int(default)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise SpecwiseError(f"{self.where}: field {key!r} must be a positive integer, got {value!r}")
        return self._sane(key, value)

    def _sane(self, key: str, value: int) -> int:
        """Sizes no real model has are refused before anything is allocated from them."""
        if value > MAX_CONFIG_INT:
            raise SpecwiseError(
                f"{self.where}: field {key!r} = {value:,} is beyond any real model (limit {MAX_CONFIG_INT:,})"
            )
        if key in ("num_hidden_layers", "n_layer", "num_layers") and value > MAX_LAYERS:
            raise SpecwiseError(f"{self.where}: field {key!r} = {value:,} layers is beyond any real model")
        return value

    def non_negative_int(self, key: str, default: int = 0) -> int:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SpecwiseError(f"{self.where}: field {key!r} must be an integer >= 0, got {value!r}")
        return self._sane(key, value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise SpecwiseError(f"{self.where}: field {key!r} must be true or false, got {value!r}")
        return value

    def int_list(self, key: str) -> list[int]:
        value = self.data.get(key)
        if value is None:
            return []
        if isinstance(value, int) and not isinstance(value, bool):
            return [value]
        if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return list(value)
        raise SpecwiseError(f"{self.where}: field {key!r} must be an integer or a list of integers")

    def optional_int(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecwiseError(f"{self.where}: field {key!r} must be an integer, got {value!r}")
        return value
