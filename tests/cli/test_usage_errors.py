"""An argument error names the (sub)command it belongs to and that command's --help, left-over arguments included:
``specwise gpus extra`` said "specwise: error: ... (see 'specwise --help')" while a missing argument of the same
command named ``specwise gpus``."""

from __future__ import annotations

import argparse
import os

import pytest

from specwise.cli import build_parser, main


def _commands() -> list[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(action.choices)


@pytest.mark.parametrize("command", _commands())
def test_an_unknown_flag_names_the_command(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--no-such-flag"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"specwise {command}: error: ") and f"(see 'specwise {command}" in err, err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "prog"),
    [
        (["gpus", "extra"], "specwise gpus"),
        (["completion", "bash", "--json"], "specwise completion"),
        (["export", "grafana", "extra"], "specwise export grafana"),  # a sub-subcommand names itself
    ],
)
def test_left_over_arguments_name_the_command(argv: list[str], prog: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"{prog}: error: unrecognized arguments: {argv[-1]} (see '{prog} --help')\n"


def test_top_level_errors_still_name_specwise(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-such-flag"]) == 2
    assert capsys.readouterr().err.startswith("specwise: error: unrecognized arguments: --no-such-flag")


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["export", "prometheus-rules", "--for", "-5m"], "--for"),  # argparse takes -5m for an option
        (["export", "prometheus-rules", "--for"], "--for"),
        (["plan-memory", "--target", "x", "--gpu"], "--gpu"),
    ],
)
def test_a_missing_value_says_how_to_write_one_that_begins_with_a_dash(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review D, finding 4: ``--for -5m`` said only "expected one argument"."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: expected one argument; a value that begins with '-' is written {flag}=VALUE" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("command", ["advise", "simulate"])
def test_the_scenario_is_given_as_file_or_flag(command: str) -> None:
    """``specwise advise FILE`` (what a new user types) and ``--scenario FILE`` parse the same."""
    parser = build_parser()
    as_file = parser.parse_args([command, "example:llama70b-ngram"])
    as_flag = parser.parse_args([command, "--scenario", "example:llama70b-ngram"])
    assert as_file.scenario == as_flag.scenario and as_file.scenario.name == "llama70b-ngram.toml"
    assert not hasattr(as_file, "scenario_positional")
    both = parser.parse_args([command, "example:llama70b-ngram", "--scenario", "example:llama70b-ngram"])
    assert both.scenario == as_flag.scenario  # the same file twice is one scenario
    relative = os.path.relpath(as_flag.scenario)  # and so is one file spelled two ways
    assert parser.parse_args([command, relative, "--scenario", str(as_flag.scenario)]).scenario.resolve() == (
        as_flag.scenario.resolve()
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["advise"], "the scenario is required: FILE or --scenario FILE"),
        (["simulate", "--json"], "the scenario is required: FILE or --scenario FILE"),
        (
            ["advise", "example:llama70b-ngram", "--scenario", "example:llama70b-4xh100"],
            "two scenarios given",
        ),
    ],
)
def test_no_scenario_or_two_are_refused(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"specwise {argv[0]}: error: ") and said in err and err.count("\n") == 1, err


def test_no_command_prints_the_usage_on_stderr_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """``specwise`` alone is a usage error (exit 2): its usage goes to stderr, as every other usage error's does,
    and stdout stays empty for a script reading it (first-hour audit 2026-12-07)."""
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "usage: specwise" in err
