"""What ``profile`` prints around its tables (review s44c): a verification at a k or temperature the profile has no
result for says why it has no 'profile pred' (it showed '-' without a word); one prompt class prints its table once
(the 'all' table and the class's were the same numbers twice); torch threads are not printed as seconds."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from specwise.cli.profile import _emit
from specwise.contracts.profile import ProfileDoc
from specwise.report.profile import render_profile

GOLDEN = Path(__file__).resolve().parent / "profile_document_golden.json"


def _doc(**changes: object) -> dict[str, object]:
    data = json.loads(GOLDEN.read_text())
    data.update(changes)
    return data


def _emitted(data: dict[str, object], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    args = argparse.Namespace(json=None, plot=None, wide=True)
    assert _emit(args, ProfileDoc.from_json(data), False) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_a_verification_the_profile_cannot_predict_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    data = _doc()
    rows = data["verification"]
    assert isinstance(rows, list)
    _, err = _emitted(data, capsys)
    assert "no profile pred" not in err  # every loop row is at a profiled (T, k)
    rows[0] = {**rows[0], "k": 7, "predicted_acceptance_rate": None}
    _, err = _emitted(data, capsys)
    assert f"note: no profile pred at T={rows[0]['temperature']:g} k=7: the profile has no result there" in err


def test_one_prompt_class_prints_its_table_once_and_threads_are_not_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = _doc(timing_s={"load_s": 1.5, "threads": 2.0})
    results = data["results"]
    assert isinstance(results, list)
    data["results"] = [r for r in results if r["class"] in (None, "qa")]  # every prompt of class qa
    doc = ProfileDoc.from_json(data)
    render_profile(doc, wide=True)
    out = capsys.readouterr().out
    assert "class qa" not in out and out.count("class all") == len(doc.results) // 2
    assert "time (s): load_s 1.5; torch threads 2" in out and "threads 2.0" not in out
    data["results"] = results  # two classes: each table shown
    render_profile(ProfileDoc.from_json(data), wide=True)
    assert "class qa" in capsys.readouterr().out


def test_an_interrupted_run_leaves_a_file_already_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C wrote the partial result over --json, which may hold a complete profile (review s44c, 9e)."""
    data = _doc()
    data["settings"] = {**data["settings"], "interrupted": True, "temperatures_completed": [0.0]}  # type: ignore[dict-item]
    doc = ProfileDoc.from_json(data)
    complete = tmp_path / "profile.json"
    complete.write_text('{"complete": true}')
    assert _emit(argparse.Namespace(json=complete, plot=None, wide=True), doc, True) == 130
    partial = tmp_path / "profile.interrupted.json"
    assert complete.read_text() == '{"complete": true}' and json.loads(partial.read_text())["settings"]["interrupted"]
    assert f"wrote them to {partial} ({complete}, already there, is left as it was)" in capsys.readouterr().err
    fresh = tmp_path / "fresh.json"
    assert _emit(argparse.Namespace(json=fresh, plot=None, wide=True), doc, True) == 130
    assert fresh.is_file() and not (tmp_path / "fresh.interrupted.json").exists()
