"""Paths and names with brackets are the user's text, not rich markup: shown as typed, never an internal error
(review 5: '[/bold]' in a directory name ended inspect, plan-memory and check-pair with exit 3; '[v2]' vanished)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specwise.cli import main

CONFIG = Path(__file__).parents[2] / "examples" / "models" / "my-finetune" / "config.json"


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # titles whole on one line


@pytest.fixture
def odd_dirs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "[/bold]x", tmp_path / "llama[v2]"
    for d in (a, b):
        d.mkdir(parents=True)
        shutil.copy(CONFIG, d / "config.json")
    return a, b


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", "{a}"],
        ["inspect", "{b}"],
        ["plan-memory", "--target", "{a}", "--gpu", "H100"],
        ["check-pair", "--target", "{a}", "--draft", "{b}"],
    ],
)
def test_bracketed_paths_print_as_typed(
    argv: list[str], odd_dirs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = odd_dirs
    args = [x.format(a=a, b=b) for x in argv]
    assert main(args) in (0, 1)
    out = capsys.readouterr().out
    for path in {x for x in args if x.startswith(str(b.parent))}:
        assert path in out


def test_a_bracketed_prompt_file_name_is_the_title(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bench[v2].jsonl"
    path.write_text(json.dumps({"prompt": "hello"}) + "\n")
    assert main(["prompts", str(path)]) == 0
    assert "bench[v2].jsonl" in capsys.readouterr().out  # the title wraps at the table's width


def test_a_long_path_in_a_title_is_whole_on_a_wide_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # rich wraps a table's title at the table's width (~80 here), which split this path mid-name at 400 columns
    d = tmp_path / ("a-long-directory-name-" * 5) / "llama[v2]"
    d.mkdir(parents=True)
    shutil.copy(CONFIG, d / "config.json")
    assert main(["inspect", str(d)]) == 0
    assert str(d) in capsys.readouterr().out
