"""The --output rows' ITL is vLLM bench serve's under its names -- one sample per streamed chunk -- and the
token-normalised one is its own column; a vLLM result file's ITL is kept as per chunk, never read as per token
(review s45a: the mock's 3-token chunks 10 ms apart wrote mean_itl_ms 3.4, where vLLM writes ~10)."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.contracts.bench_formats import level_from_result
from specwise.loadgen.mock_server import MockBehaviour, MockServer

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_bench_serve" / "eagle3-on-mock.json"


def test_output_rows_carry_vllms_itl_and_the_per_token_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rows.csv"
    with MockServer(MockBehaviour(ttft_s=0.01, chunk_interval_s=0.02, tokens_per_chunk=4)) as server:
        argv = ["bench", "--url", server.url, "--model", "m", "--rates", "20", "--requests-per-level", "4"]
        argv += ["--max-tokens", "17", "--db", str(tmp_path / "r.sqlite"), "--output", str(out), "--api-key-env", ""]
        assert main(argv) == 0
    capsys.readouterr()
    (row,) = list(csv.DictReader(io.StringIO(out.read_text())))
    per_chunk, per_token = float(row["median_itl_ms"]), float(row["median_itl_per_token_ms"])
    assert 20.0 <= per_chunk < 40.0  # a chunk every 20 ms (plus the server's own time)
    assert per_token == pytest.approx(per_chunk / 4, rel=0.15)  # 4 tokens a chunk


def test_a_vllm_result_files_itl_stays_per_chunk() -> None:
    data = json.loads(FIXTURE.read_text().splitlines()[0])
    level = level_from_result(data, str(FIXTURE), 0)
    assert level.summary.itl_per_chunk_s.mean == pytest.approx(data["mean_itl_ms"] / 1e3)
    assert math.isnan(level.summary.itl_s.mean)  # vLLM gives no token-normalised ITL: unknown, not its per-chunk one
