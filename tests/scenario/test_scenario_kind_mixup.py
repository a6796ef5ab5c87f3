"""A simulate scenario given to advise (and the reverse) says which kind of file it is and where the right kind
lives; a GPU typo names the file, the field and the closest catalog names. Exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_simulate_scenario_given_to_advise(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "examples" / "llama70b-ngram.toml"
    assert main(["advise", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err
    assert "looks like a `specwise simulate` scenario ([speculation])" in err
    assert "advise takes [[candidate]] tables" in err and "examples/advise/" in err


def test_advise_scenario_given_to_simulate(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "examples" / "advise" / "summarize-low-qps.toml"
    assert main(["simulate", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err
    assert "looks like a `specwise advise` scenario" in err and "simulate takes one [speculation] table" in err


@pytest.mark.parametrize("command", ["simulate", "advise"])
def test_gpu_typo_names_file_field_and_suggestion(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = ROOT / "examples" / ("llama70b-ngram.toml" if command == "simulate" else "advise/summarize-low-qps.toml")
    bad = tmp_path / "typo.toml"
    bad.write_text(example.read_text().replace('gpu = "H100-SXM-80GB"', 'gpu = "H100-SMX-80GB"'))
    assert (
        main([command, "--scenario", str(bad), "--num-requests" if command == "simulate" else "--processes", "1"]) == 2
    )
    err = capsys.readouterr().err
    assert f"{bad}: [deployment].gpu: unknown GPU 'H100-SMX-80GB'" in err
    assert "did you mean H100-SXM-80GB" in err and "Traceback" not in err
