"""Review 12 #13 in advise: a table or a number as the scenario's or a candidate's ``name`` was printed as its
Python repr; it is refused, exit 2, in one line naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "advise" / "summarize-low-qps.toml"


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ('name = "summarize-low-qps"', "name = { a = 1 }", "name: must be a non-empty string, got a table"),
        (
            '[[candidate]]\nmethod = "ngram"',
            '[[candidate]]\nname = 3\nmethod = "ngram"',
            "name: must be a string, got 3",
        ),
    ],
)
def test_advise_names_must_be_strings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, said: str
) -> None:
    text = EXAMPLE.read_text()
    assert old in text
    scenario = tmp_path / "s.toml"
    scenario.write_text(text.replace(old, new, 1))
    assert main(["advise", "--scenario", str(scenario), "--processes", "1"]) == 2
    err = capsys.readouterr().err
    assert said in err and str(scenario) in err and len(err.strip().splitlines()) == 1
