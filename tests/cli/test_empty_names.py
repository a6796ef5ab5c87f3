"""Review D #1: an empty model, GPU or run name (an unset shell variable: ``--gpu "$GPU"``) is bad input naming its
flag, never read as "not given": ``drafts --gpu ''`` exited 0 with "memory not checked: give --gpu", and
``plan-memory --draft ''`` planned the target with no draft, both because ``if args.gpu`` / ``if draft`` took ''
for absent."""

from __future__ import annotations

import argparse

import pytest

import specwise
from specwise.cli import build_parser, main
from specwise.errors import SpecwiseError
from tests.cli.parsers import walk

# Flags naming a model, a GPU or a run, by their argparse dest: a value '' would read as "not given".
NAMES = {"target", "draft", "gpu", "model", "run_id", "resume", "calibrate_run", "name"}


def _name_flags() -> list[tuple[tuple[str, ...], str]]:
    """Every (command, flag) taking a model, GPU or run name; a positional as its metavar."""
    return [
        (argv, action.option_strings[0] if action.option_strings else str(action.metavar))
        for argv, parser in walk(build_parser())
        for action in parser._actions
        if action.dest in NAMES and not isinstance(action, argparse._SubParsersAction)
    ]


def test_the_walk_finds_the_flags() -> None:
    assert {(" ".join(argv), flag) for argv, flag in _name_flags()} >= {
        ("drafts", "--gpu"),
        ("drafts", "--target"),
        ("plan-memory", "--gpu"),
        ("plan-memory", "--target"),
        ("plan-memory", "--draft"),
        ("check-pair", "--target"),
        ("check-pair", "--draft"),
        ("inspect", "ID_OR_PATH"),
        ("profile", "--target"),
        ("profile", "--draft"),
        ("bench", "--model"),
        ("bench", "--run-id"),
        ("bench", "--resume"),
        ("bench", "--calibrate-run"),
        ("examples", "NAME"),
    }


@pytest.mark.parametrize(("argv", "flag"), _name_flags(), ids=lambda x: " ".join(x) if isinstance(x, tuple) else x)
def test_an_empty_name_is_refused_naming_its_flag(
    argv: tuple[str, ...], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    value = [""] if not flag.startswith("-") else [flag, ""]
    assert main([*argv, *value]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"argument {flag}: " in err, err


def test_the_reviewed_commands(capsys: pytest.CaptureFixture[str]) -> None:
    """The review's command, whole, and a blank name: rc 2, one line naming the flag, as plan-memory's --gpu ''."""
    llama = "meta-llama/Llama-3.1-70B-Instruct"
    for argv, flag in (
        (["drafts", "--target", llama, "--gpu", "", "--tp", "4"], "--gpu"),
        (["drafts", "--target", llama, "--gpu", " ", "--tp", "4"], "--gpu"),
        (["plan-memory", "--target", llama, "--gpu", "H100-SXM-80GB", "--tp", "4", "--draft", " "], "--draft"),
        (["plan-memory", "--target", llama, "--gpu", "", "--tp", "4"], "--gpu"),
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"argument {flag}: expected a non-empty value" in err, err


def test_the_api_refuses_an_empty_draft() -> None:
    """``specwise.plan_memory(..., draft="")`` planned with no draft, as the command did."""
    with pytest.raises(SpecwiseError, match=r"^draft: empty name"):
        specwise.plan_memory("meta-llama/Llama-3.1-70B-Instruct", "H100-SXM-80GB", tp=4, draft="")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["monitor", "--prometheus", "http://127.0.0.1:9", "--instance", ""],
            "argument --instance: expected a non-empty",
        ),
        (  # no dataset to select from: '' is given, not absent
            ["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--category", ""],
            "--category and --turns select from a dataset: give --prompts",
        ),
    ],
)
def test_other_free_text_flags_refuse_an_empty_value(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review D's leftover: ``--instance ''`` filtered on an empty label; ``--category ''`` was ignored silently."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1
