"""Review E: a specwise bench result given where a calibration is read said only "predictor: missing: not a specwise
calibration" (advise --calibration) or "not a vllm bench serve --save-result file" (calibrate): neither said what
makes one. Both now name the commands that do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "advise" / "summarize-low-qps.toml"
BENCH = {"schema": "specwise.bench/1", "run_id": "r1", "configs": []}
OLD_BENCH = {"levels": [], "url": "http://127.0.0.1:8000"}  # written before the schema key
OUTPUT_ROWS = {"format": "specwise bench --output/1 (vllm bench serve field names and units)", "rows": []}


@pytest.mark.parametrize("doc", [BENCH, OLD_BENCH, OUTPUT_ROWS])
def test_advise_says_how_to_make_a_calibration(
    tmp_path: Path, doc: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc))
    assert main(["advise", "--scenario", str(EXAMPLE), "--calibration", str(path), "--processes", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "is a specwise bench result, not a calibration" in err
    assert "specwise bench --calibrate-run RUN_ID" in err and "specwise calibrate" in err


def test_calibrate_says_what_it_reads_and_what_calibrates_a_bench_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps(BENCH))
    assert main(["calibrate", str(path), "--out", str(tmp_path / "cal.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "is a specwise bench result; specwise calibrate reads vllm bench serve result files" in err
    assert "specwise bench --calibrate-run RUN_ID" in err
    assert not (tmp_path / "cal.json").exists()
