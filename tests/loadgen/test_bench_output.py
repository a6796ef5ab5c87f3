"""``bench --output FILE``: one row per level with vllm bench serve's field names and units, written atomically,
the destination checked before any request; advise --bench reads the .json / .jsonl back."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.contracts.bench_table import FIELDS
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from tests.advise.test_bench_formats_evidence import SCENARIO

TARGET = "meta-llama/Llama-3.1-8B-Instruct"  # the mock serves any name


def _bench(url: str, tmp_path: Path, *extra: str) -> int:
    argv = ["bench", "--url", url, "--model", TARGET, "--rates", "40,80", "--requests-per-level", "8"]
    return main([*argv, "--max-tokens", "16", "--db", str(tmp_path / "b.sqlite"), *extra])


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One bench run against the mock, with its --json document and all three --output formats."""
    tmp = tmp_path_factory.mktemp("out")
    with MockServer(MockBehaviour(ttft_s=0.003, chunk_interval_s=0.001)) as server:
        capture = tmp / "doc.json"
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert _bench(server.url, tmp, "--json", "--output", str(tmp / "t.json")) == 0
        capture.write_text(buf.getvalue())
        assert _bench(server.url, tmp, "--output", str(tmp / "t.csv"), "--run-id", "csv") == 0
        assert _bench(server.url, tmp, "--output", str(tmp / "t.jsonl"), "--run-id", "jsonl") == 0
    return json.loads(capture.read_text()), tmp


def test_json_rows_carry_vllm_names_and_units(run: tuple[dict[str, Any], Path]) -> None:
    doc, tmp = run
    table = json.loads((tmp / "t.json").read_text())
    assert doc["output_file"] == str(tmp / "t.json")
    assert table["format"].startswith("specwise bench --output/1") and list(table["fields"]) == list(FIELDS)
    assert "PERCENT" in table["fields"]["spec_decode_acceptance_rate"]
    rows = table["rows"]
    assert [r["level"] for r in rows] == [0, 1] and [r["request_rate"] for r in rows] == [40.0, 80.0]
    for row, level in zip(rows, doc["levels"], strict=True):
        assert list(row) == list(FIELDS) and row["model_id"] == TARGET and row["config"] == ""
        assert row["completed"] == level["requests"] - level["failed"] == 8
        assert row["mean_ttft_ms"] == pytest.approx(level["ttft_s"]["mean"] * 1e3)
        assert row["median_tpot_ms"] == pytest.approx(level["tpot_s"]["p50"] * 1e3)
        assert row["p99_e2el_ms"] == pytest.approx(level["e2e_s"]["p99"] * 1e3)
        assert row["output_throughput"] == pytest.approx(level["output_tokens_per_s"])
        sd = level["spec_decode"]
        assert row["spec_decode_acceptance_rate"] == pytest.approx(100 * sd["spec_decode_acceptance_rate"])
        assert row["spec_decode_num_drafts"] == sd["spec_decode_num_drafts"] > 0
        assert row["spec_decode_per_position_acceptance_rates"] == sd["spec_decode_per_position_acceptance_rates"]


def test_csv_has_a_header_and_one_row_per_level(run: tuple[dict[str, Any], Path]) -> None:
    _, tmp = run
    with (tmp / "t.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 and list(rows[0]) == list(FIELDS)
    # the mock accepts 2 of k = 4 on every full step: positions 1-2 near 1, 3-4 zero
    rates = [float(x) for x in rows[0]["spec_decode_per_position_acceptance_rates"].split(";")]
    assert len(rates) == 4 and rates[2:] == [0.0, 0.0] and rates[0] > 0.9
    assert 40 < float(rows[0]["spec_decode_acceptance_rate"]) <= 50  # percent
    assert rows[0]["max_concurrency"] == "" and rows[0]["request_goodput"] == ""


@pytest.mark.parametrize("name", ["t.json", "t.jsonl"])
def test_advise_reads_the_output_back(
    run: tuple[dict[str, Any], Path], name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, tmp = run
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    argv = ["advise", "--scenario", str(scenario), "--json", "--processes", "1", "--bench", str(tmp / name)]
    assert main(argv) in (0, 1)
    (ev,) = json.loads(capsys.readouterr().out)["candidates"][0]["evidence"]
    assert ev["kind"] == "measured" and "taken as eagle3" in ev["source"]


@pytest.mark.parametrize(
    ("name", "fragment"),
    [("t.txt", "the extension says the format"), ("a-dir.csv", "is a directory"), ("a-file/t.csv", "a-file")],
)
def test_bad_output_is_refused_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, fragment: str
) -> None:
    (tmp_path / "a-dir.csv").mkdir()
    (tmp_path / "a-file").write_text("x")
    with MockServer() as server:
        assert _bench(server.url, tmp_path, "--output", str(tmp_path / name)) == 2
        assert server.state.requests == 0
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1
