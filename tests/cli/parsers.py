"""Every (sub)parser of the CLI, for tests that check a rule across all commands' flags."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any


def walk(parser: argparse.ArgumentParser, argv: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(the command words, its parser) for ``parser`` and every subcommand under it, depth first."""
    yield argv, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, (*argv, name))
