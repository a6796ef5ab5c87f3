"""Review E: an advise scenario with two ``[[workload]]`` tables of one name ran (exit 0), its rule checks naming
"class 'chat'" twice; a simulate scenario with the same mistake is refused. Both are refused now, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "advise" / "summarize-low-qps.toml"


def test_two_workloads_of_one_name_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = EXAMPLE.read_text()
    start = text.index("[[workload]]")
    end = text.index("\n[", start + 1)
    path = tmp_path / "dup.toml"
    path.write_text(text[:end] + "\n" + text[start:end] + text[end:])
    assert main(["advise", "--scenario", str(path), "--processes", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("[[workload]]: name 'summarize' is used twice; results are reported per name")
    assert len(err.splitlines()) == 1
