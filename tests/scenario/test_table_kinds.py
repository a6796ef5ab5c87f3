"""A table written the other TOML way: ``[[deployment]]`` (an array of tables) was refused as "[deployment]: required
table is missing" (advise) or "expected a table" (simulate), and a single ``[workload]`` table as "at least one
[[workload]] table is required". Each now says which way to write it, in simulate and advise scenarios and launch
files alike (scenario/fields.py: Section, Section.array_of_tables)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specwise.advisor.inputs import load_inputs
from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.loadgen.launcher import load_launch_file
from specwise.scenario.toml_loader import load_scenario_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SIMULATE = (EXAMPLES / "llama70b-4xh100.toml").read_text()
ADVISE = (EXAMPLES / "advise" / "summarize-low-qps.toml").read_text()
LAUNCH = (EXAMPLES / "launch" / "smollm2.toml").read_text()
ONE_CANDIDATE = ADVISE[: ADVISE.rindex("[[candidate]]")]  # its first candidate only
ONE_CONFIG = LAUNCH[: LAUNCH.index("\n[[config]]", LAUNCH.index("\n[[config]]") + 1)]  # its first config only


def _edit(text: str, old: str, new: str) -> str:
    """``text`` with the table header ``old`` (a whole line) written as ``new``."""
    edited = re.sub(rf"(?m)^{re.escape(old)}$", new, text)
    assert edited != text
    return edited


def _array(name: str) -> str:
    return f"[{name}] must be a table, not an array of tables ([[{name}]])"


def _single(name: str) -> str:
    return f"[{name}] is a single table; it must be written [[{name}]] (an array of tables)"


CASES: list[tuple[str, Callable[[Path], Any], str]] = [
    (_edit(SIMULATE, "[deployment]", "[[deployment]]"), load_scenario_spec, _array("deployment")),
    (_edit(SIMULATE, "[speculation]", "[[speculation]]"), load_scenario_spec, _array("speculation")),
    (_edit(SIMULATE, "[sweep]", "[[sweep]]"), load_scenario_spec, _array("sweep")),
    (_edit(SIMULATE, "[[workload]]", "[workload]"), load_scenario_spec, _single("workload")),
    (_edit(ADVISE, "[deployment]", "[[deployment]]"), load_inputs, _array("deployment")),
    (_edit(ADVISE, "[advise]", "[[advise]]"), load_inputs, _array("advise")),
    (_edit(ADVISE, "[sweep]", "[[sweep]]"), load_inputs, _array("sweep")),
    (_edit(ADVISE, "[[workload]]", "[workload]"), load_inputs, _single("workload")),
    (_edit(ONE_CANDIDATE, "[[candidate]]", "[candidate]"), load_inputs, _single("candidate")),
    (_edit(ONE_CONFIG, "[[config]]", "[config]"), load_launch_file, _single("config")),
]


@pytest.mark.parametrize(("text", "read", "said"), CASES)
def test_a_table_written_the_other_way_says_how_to_write_it(
    tmp_path: Path, text: str, read: Callable[[Path], Any], said: str
) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(SpecwiseError) as err:
        read(path)
    assert str(err.value) == f"{path}: {said}"


@pytest.mark.parametrize("command", ["simulate", "advise"])
def test_deployment_as_an_array_is_one_line_exit_2(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.toml"
    path.write_text(_edit(SIMULATE if command == "simulate" else ADVISE, "[deployment]", "[[deployment]]"))
    assert main([command, "--scenario", str(path)]) == 2
    assert capsys.readouterr().err == f"specwise {command}: error: {path}: {_array('deployment')}\n"


def test_the_tables_as_written_still_load(tmp_path: Path) -> None:
    for text, read in ((ONE_CANDIDATE, load_inputs), (ONE_CONFIG, load_launch_file)):
        path = tmp_path / "ok.toml"
        path.write_text(text)
        read(path)
