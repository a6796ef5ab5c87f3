"""A refused TOML value was shown as Python wrote it: "got True" for ``true``, "got datetime.date(1979, 5, 27)" for
a date, "got {'name': 'H100'}" for a table. It is shown as the file wrote it (errors.as_written), in simulate and
advise scenarios alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.advisor.inputs import load_inputs
from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.scenario.toml_loader import load_scenario_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SIMULATE = (EXAMPLES / "llama70b-4xh100.toml").read_text()
ADVISE = (EXAMPLES / "advise" / "summarize-low-qps.toml").read_text()


def _set(text: str, table: str, line: str) -> str:
    """``text`` with ``line`` added at the top of ``table`` (a later key of the same name is removed)."""
    key = line.split("=")[0].strip()
    kept = "\n".join(t for t in text.splitlines() if t.split("=")[0].strip() != key)
    assert f"\n{table}\n" in kept
    return kept.replace(f"\n{table}\n", f"\n{table}\n{line}\n", 1)


@pytest.mark.parametrize(
    ("table", "line", "said"),
    [
        ("[deployment]", "tp = true", "tp: must be a positive integer, got true"),
        ("[deployment]", "tp = 1979-05-27", "tp: must be a positive integer, got 1979-05-27"),
        ("[deployment]", "tp = 1979-05-27T07:32:00", "tp: must be a positive integer, got 1979-05-27T07:32:00"),
        ("[deployment]", "tp = 07:32:00", "tp: must be a positive integer, got 07:32:00"),
        ("[deployment]", 'gpu = { name = "H100" }', "gpu: must be a string, got a table"),
        ("[deployment]", "gpu_memory_utilization = false", "gpu_memory_utilization: must be a number, got false"),
        ("[sweep]", "qps = [1, true]", "qps: must be a non-empty list of numbers, got [1, true]"),
        ("[sweep]", "qps = [1, {a = 2}]", "qps: must be a non-empty list of numbers, got [1, a table]"),
        ("[speculation]", "k = [0, true]", "k: must be a non-empty list of integers in 0..16, got [0, true]"),
    ],
)  # fmt: skip
def test_simulate_shows_a_value_as_toml_writes_it(tmp_path: Path, table: str, line: str, said: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(_set(SIMULATE, table, line))
    with pytest.raises(SpecwiseError) as err:
        load_scenario_spec(path)
    assert str(err.value) == f"{path}: {table}.{said}"


@pytest.mark.parametrize(
    ("table", "line", "said"),
    [
        ("[advise]", "operating_qps = true", "operating_qps: must be a number > 0, got true"),
        ("[deployment]", "tp = 1979-05-27", "tp: must be a positive integer, got 1979-05-27"),
        ("[deployment]", 'gpu = { name = "H100" }', "gpu: must be a string, got a table"),
    ],
)
def test_advise_shows_a_value_as_toml_writes_it(
    tmp_path: Path, table: str, line: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.toml"
    path.write_text(_set(ADVISE, table, line))
    with pytest.raises(SpecwiseError) as err:
        load_inputs(path)
    assert str(err.value) == f"{path}: {table}.{said}"
    assert main(["advise", "--scenario", str(path)]) == 2
    assert capsys.readouterr().err == f"specwise advise: error: {path}: {table}.{said}\n"
