"""Shared CLI plumbing: one-line argument errors, value types, JSON output."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any, NoReturn

EXIT_OK = 0
EXIT_NEGATIVE = 1  # the command worked and its answer is "no" (does not fit, incompatible pair)
EXIT_USAGE = 2  # the user's input is wrong


class UsageError(Exception):
    """An argument error, reported as one line (argparse would print usage plus the error)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message} (see '{self.prog} --help')")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def json_safe(data: Any) -> Any:
    """NaN and infinities (e.g. a percentile of no samples) become null: JSON has no NaN."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [json_safe(v) for v in data]
    return data


def print_json(data: Any) -> None:
    json.dump(json_safe(data), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of tables")
