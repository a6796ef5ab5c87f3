"""Every command's --help renders, and says "95%", never "95%%" (argparse %-formats help strings, not a
description without ``%(prog)``: a doubled percent there is printed as it is)."""

from __future__ import annotations

import argparse

import pytest

from specwise.cli import build_parser


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("command", sorted(_subparsers()))
def test_help_has_no_doubled_percent(command: str) -> None:
    text = _subparsers()[command].format_help()
    assert "%%" not in text


def test_profile_help_says_95_percent() -> None:
    assert "95% CIs" in " ".join(_subparsers()["profile"].format_help().split())
