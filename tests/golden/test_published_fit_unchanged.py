"""The simulator's speed work (issue 16) must not move a number: every shipped example on the published-fit
predictor (the default) gives the JSON recorded in ``tests/golden/examples_published_fit``, and ``specwise validate
--json`` (the evidence replays, on both predictors) the JSON in ``tests/golden/validate``.

Recorded before the scalar step path and the event fast-forward went in. Floats compare to 1e-9 relative (a sum
taken in another order may differ in its last bits); everything else exactly. A deliberate change of output
regenerates them with ``python tests/golden/regen_published_fit.py`` and says why in its commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main
from tests.golden.test_examples_unchanged import CASES, diff, expected_exit
from tests.golden.test_examples_unchanged import command as roofline_command

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "examples_published_fit"
VALIDATE = Path(__file__).parent / "validate"
PREDICTORS = ("published-fit", "roofline")


def command(case: str) -> list[str]:
    """The example's command on the published-fit predictor."""
    cmd = roofline_command(case)
    return [*cmd[: cmd.index("--predictor")], "--predictor", "published-fit"]


def validate_command(predictor: str) -> list[str]:
    return ["validate", "--json", "--predictor", predictor]


def _check(cmd: list[str], path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want = json.loads(path.read_text())
    assert main(cmd) == expected_exit(want)
    # commands quote the scenario's path: recorded as <repo>/..., wherever the checkout is
    got = json.loads(capsys.readouterr().out.replace(str(ROOT), "<repo>"))
    differences = diff(got, want)
    assert not differences, "\n".join(differences[:20])


@pytest.mark.parametrize("case", CASES)
def test_example_output_unchanged_published_fit(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    _check(command(case), GOLDEN / f"{case}.json", capsys)


@pytest.mark.parametrize("predictor", PREDICTORS)
def test_validate_output_unchanged(predictor: str, capsys: pytest.CaptureFixture[str]) -> None:
    _check(validate_command(predictor), VALIDATE / f"{predictor}.json", capsys)
