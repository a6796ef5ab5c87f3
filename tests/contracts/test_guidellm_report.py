"""A guidellm report (the real file guidellm 0.8.1 wrote against specwise's mock server, recorded in
tests/fixtures/guidellm with its command) is recognised, read with its units (ms vs s) into bench levels, and
refused by ``advise --bench`` in one line naming the tool, its version and why: no acceptance counters."""

from __future__ import annotations

import copy
import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.contracts.bench_formats import read_bench, read_guidellm
from specwise.contracts.document import DocumentError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "guidellm" / "benchmarks-on-mock.json.gz"
MOCK_OUTPUT_TOKENS = 60  # the run's --data output_tokens=60; the mock streams exactly max_tokens


def recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    return data


@pytest.fixture
def report_file(tmp_path: Path) -> Path:
    path = tmp_path / "benchmarks.json"
    path.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    return path


def test_recorded_report_reads_one_level_per_load_in_seconds(report_file: Path) -> None:
    raw = recorded()["benchmarks"]
    report = read_guidellm(report_file)
    assert report.guidellm_version == "0.8.1"
    doc = report.doc
    assert doc.model == "meta-llama/Llama-3.1-8B-Instruct" and doc.url is not None and doc.url.startswith("http://")
    assert [lv.summary.target_rate_per_s for lv in doc.levels] == [5.0, 10.0]
    for lv, b in zip(doc.levels, raw, strict=True):
        s, m = lv.summary, b["metrics"]
        assert lv.spec_decode is None and lv.concurrency is None
        assert s.requests == 30 and s.failed == 0 and s.duration_s == pytest.approx(b["duration"])
        # ms -> s for the *_ms fields, request_latency already in seconds
        assert s.ttft_s.mean == pytest.approx(m["time_to_first_token_ms"]["successful"]["mean"] / 1000)
        assert s.ttft_s.p99 == pytest.approx(m["time_to_first_token_ms"]["successful"]["percentiles"]["p99"] / 1000)
        assert s.e2e_s.p50 == pytest.approx(m["request_latency"]["successful"]["median"])
        # specwise's TPOT is guidellm's ITL (first token excluded), not guidellm's TPOT (first token included)
        assert s.tpot_s.mean == pytest.approx(m["inter_token_latency_ms"]["successful"]["mean"] / 1000)
        assert s.tpot_s.mean < m["time_per_output_token_ms"]["successful"]["mean"] / 1000
        assert s.itl_s.mean == s.tpot_s.mean and math.isnan(s.itl_s.p50)  # no per-gap series in the report
        # what guidellm printed (its console reads throughput from 'total')
        assert s.output_tokens_per_s == pytest.approx(m["output_tokens_per_second"]["total"]["mean"])
        # the mock's physics, in the units specwise uses: 5 ms TTFT, then 3 tokens every 2 ms
        assert 0.005 <= s.ttft_s.mean < 0.05
        assert 0.002 / 3 <= s.tpot_s.mean < 0.002
        assert s.e2e_s.mean == pytest.approx(s.ttft_s.mean + (MOCK_OUTPUT_TOKENS - 1) * s.tpot_s.mean, rel=0.15)
        assert s.output_tokens_per_s == pytest.approx(MOCK_OUTPUT_TOKENS * s.request_rate_per_s, rel=0.1)
        assert s.request_rate_per_s == pytest.approx(s.target_rate_per_s, rel=0.1)


def test_advise_refuses_a_guidellm_report_naming_the_tool_and_why(
    report_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["advise", "--scenario", "example:advise/summarize-low-qps", "--bench", str(report_file)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") <= 1
    assert f"{report_file}: a guidellm 0.8.1 report (5 req/s, 10 req/s)" in err
    assert "records no speculative-decoding counters" in err and "vllm bench serve --save-result" in err


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        (("metrics", "time_to_first_token_ms"), None, "benchmarks[1].metrics.time_to_first_token_ms: missing"),
        (("metrics", "inter_token_latency_ms", "successful", "mean"), "x", "mean: expected a finite number"),
        (("config", "strategy", "rate"), None, "benchmarks[1].config.strategy.rate: missing"),
    ],
)
def test_a_broken_guidellm_report_is_refused_in_one_line(
    tmp_path: Path, path: tuple[str, ...], value: object, fragment: str
) -> None:
    data = copy.deepcopy(recorded())
    node = data["benchmarks"][1]
    for key in path[:-1]:
        node = node[key]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data))
    for read in (read_bench, read_guidellm):
        with pytest.raises(DocumentError) as exc:
            read(broken)
        assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_other_files_are_not_guidellm_reports(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"model_id": "m", "completed": 1}')
    with pytest.raises(DocumentError, match="not a guidellm report"):
        read_guidellm(path)
    path.write_text('{"benchmarks": []}')
    with pytest.raises(DocumentError, match="a guidellm \\(version not recorded\\) report with no benchmarks"):
        read_guidellm(path)
