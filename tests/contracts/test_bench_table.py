"""The rows of ``bench --output`` for a --launch run: one per (config, level), vLLM's units."""

from __future__ import annotations

import csv
import io
import json

from specwise.contracts.bench import BenchDoc
from specwise.contracts.bench_table import FIELDS, bench_rows, render
from tests.hardening.cases import bench_doc


def _launch_doc() -> BenchDoc:
    data = bench_doc()
    for cfg in data["configs"]:
        cfg["levels"][0].update(target_rate_per_s=None, concurrency=4)
        cfg["levels"][0]["ttft_s"] = {"mean": 0.02, "p50": None, "p90": 0.03, "p99": 0.04}  # p50 missing
    return BenchDoc.from_json(data)


def test_one_row_per_config_and_level() -> None:
    rows = bench_rows(_launch_doc())
    assert [r["config"] for r in rows] == ["baseline", "ngram"]
    base, ngram = rows
    assert base["speculative_config"] is None and base["spec_decode_acceptance_rate"] is None
    spec = json.loads(str(ngram["speculative_config"]))
    assert spec["method"] == "ngram"
    assert ngram["request_rate"] == "inf" and ngram["max_concurrency"] == 4  # closed loop, as vLLM writes it
    assert ngram["mean_ttft_ms"] == 20.0 and ngram["median_ttft_ms"] is None
    rate, accepted, drafted = (ngram[k] for k in ("spec_decode_acceptance_rate", "spec_decode_accepted_tokens",
                                                  "spec_decode_draft_tokens"))  # fmt: skip
    assert isinstance(rate, float) and isinstance(accepted, int) and isinstance(drafted, int)
    assert rate == 100 * accepted / drafted


def test_csv_cells() -> None:
    text = render(bench_rows(_launch_doc()), ".CSV")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == list(FIELDS) and rows[1]["median_ttft_ms"] == "" and rows[1]["request_rate"] == "inf"
    assert ";" in rows[1]["spec_decode_per_position_acceptance_rates"]


def test_a_bench_document_names_its_schema_and_a_newer_one_is_refused() -> None:
    """Review s46d: bench JSON had no "schema" key, so a bench/2 file would have been read as bench/1."""
    import pytest

    from specwise.contracts.document import DocumentError

    data = BenchDoc.from_json(bench_doc()).to_json()
    assert next(iter(data)) == "schema" and data["schema"] == "specwise.bench/1"
    assert BenchDoc.from_json(data).to_json() == data
    with pytest.raises(DocumentError, match="bench/2"):
        BenchDoc.from_json({**data, "schema": "specwise.bench/2"})
