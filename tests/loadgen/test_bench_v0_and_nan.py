"""``bench`` against /metrics pages it must not misread (review 17-B findings 4 and 5, review s47a F1): a page with
draft and accepted token counters but no drafts counter (vLLM V1 before 0.8.5) gives the acceptance rate, no made-up
AL, and a note; a vLLM V0 page (whose counters add lifetime totals) gives no acceptance and says why; a NaN spec-decode
sample is a ``non_finite_sample`` in ``scrape_errors`` and the table, and no NaN reaches ``--output`` (JSON has
none). Real vLLM pages (tests/fixtures/vllm_metrics), some edited, served in order on loopback next to the mock
OpenAI server; every run is a few short requests."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.contracts.bench_table import FIELDS, Cell, render
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.loadgen.runner import level_spec_decode
from specwise.loadgen.store import ResultStore
from specwise.metrics.spec_decode import NO_DRAFTS_NOTE, V0_NOTE
from tests.monitor.pages import Pages, serve_pages, v0_page

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_metrics"
BEFORE = (FIXTURES / "ngram_before.txt").read_text()
AFTER = (FIXTURES / "ngram_after.txt").read_text()  # 34 drafts, 136 draft tokens, 103 accepted since BEFORE
ACCEPTED = 'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="smollm2"}'
NAN_AFTER = "".join(
    f"{ACCEPTED} NaN\n" if line.startswith(ACCEPTED + " ") else line for line in AFTER.splitlines(keepends=True)
)
V0_BEFORE = v0_page(BEFORE, 4000.0, 2000.0, 3000.0, v0=False)  # no drafts counter: vLLM V1 before 0.8.5
V0_AFTER = v0_page(BEFORE, 5200.0, 2500.0, 3800.0, v0=False)
REAL_V0_BEFORE = v0_page(BEFORE, 4000.0, 2000.0, 3000.0, rate=0.5)
REAL_V0_AFTER = v0_page(BEFORE, 5200.0, 2500.0, 3800.0, rate=0.48)


def _strict(text: str) -> Any:
    """JSON as RFC 8259 has it: a bare NaN or Infinity is an error, not a number."""

    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture()
def serve() -> Iterator[Any]:
    yield from serve_pages(Pages)


@pytest.fixture(scope="module")
def openai() -> Iterator[str]:
    with MockServer(MockBehaviour(ttft_s=0.001, chunk_interval_s=0.001)) as server:
        yield server.url


def _bench(
    openai: str, metrics_url: str, tmp_path: Path, output: str, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, Any], Path]:
    out = tmp_path / output
    argv = ["bench", "--url", openai, "--metrics-url", metrics_url, "--model", "mock", "--rates", "50"]
    argv += ["--requests-per-level", "2", "--max-tokens", "4", "--db", str(tmp_path / "b.sqlite")]
    assert main([*argv, "--request-timeout", "20", "--json", "--output", str(out)]) == 0
    doc: dict[str, Any] = _strict(capsys.readouterr().out)
    return doc, out


def _level(store_dir: Path, before: str, after: str) -> tuple[Any, list[str]]:
    store = ResultStore(store_dir / "r.sqlite")
    store.create_run("r", 0.0, {})
    store.save_scrape("r", 0, "before", before)
    store.save_scrape("r", 0, "after", after)
    errors: list[str] = []
    reading, _reset = level_spec_decode(store, "r", 0, errors)
    store.close()
    return reading, errors


# finding 4: vLLM V0 pages


def test_a_v0_level_reads_the_acceptance_rate_and_says_why_there_is_no_al(tmp_path: Path) -> None:
    reading, errors = _level(tmp_path, V0_BEFORE, V0_AFTER)
    assert reading is not None and reading.counts is None and reading.engine == "vllm"
    assert reading.acceptance_rate == pytest.approx(500 / 1200) and reading.acceptance_length is None
    assert (reading.draft_tokens, reading.accepted_tokens) == (1200.0, 500.0)
    assert errors == [NO_DRAFTS_NOTE]


def test_a_real_v0_level_reads_no_acceptance_and_says_why(tmp_path: Path) -> None:
    """vLLM V0's counters add lifetime totals at every log interval: before, 500 / 1200 = 0.42 was read from their
    deltas (review s47a F1)."""
    reading, errors = _level(tmp_path, REAL_V0_BEFORE, REAL_V0_AFTER)
    since = "; its acceptance rate since the server started (vllm:spec_decode_draft_acceptance_rate): 0.480"
    assert reading is None and errors == [V0_NOTE + since]


def test_bench_against_a_v0_server_shows_its_rate_and_writes_no_al(
    serve: Any, openai: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = serve("v0", V0_BEFORE, V0_BEFORE, V0_AFTER)  # before, the probe a moment later, after
    doc, out = _bench(openai, url, tmp_path, "v0.json", capsys)
    (level,) = doc["levels"]
    sd = level["spec_decode"]
    assert sd["spec_decode_acceptance_rate"] == pytest.approx(500 / 1200)
    assert sd["spec_decode_acceptance_length"] is None and "spec_decode_num_drafts" not in sd
    assert level["scrape_errors"] == [NO_DRAFTS_NOTE]
    (row,) = _strict(out.read_text())["rows"]
    assert row["spec_decode_acceptance_rate"] == pytest.approx(100 * 500 / 1200)
    assert row["spec_decode_num_drafts"] is None and row["spec_decode_acceptance_length"] is None


# finding 5: a NaN spec-decode sample


def test_a_nan_spec_decode_sample_is_a_fault_not_a_nan_rate(tmp_path: Path) -> None:
    reading, errors = _level(tmp_path, BEFORE, NAN_AFTER)
    assert reading is None
    assert errors == [
        f"non_finite_sample: {ACCEPTED} = nan in the after scrape: acceptance not computed for this level"
    ]


def test_bench_with_a_nan_sample_flags_it_and_writes_null(
    serve: Any, openai: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = serve("nan", BEFORE, BEFORE, NAN_AFTER)
    doc, out = _bench(openai, url, tmp_path, "nan.json", capsys)
    (level,) = doc["levels"]
    assert level["spec_decode"] is None
    assert len(level["scrape_errors"]) == 1 and level["scrape_errors"][0].startswith("non_finite_sample: ")
    (row,) = _strict(out.read_text())["rows"]
    assert all(row[k] is None for k in FIELDS if k.startswith("spec_decode_"))
    # the table shows no rate and says why
    url = serve("nan-text", BEFORE, BEFORE, NAN_AFTER)
    argv = ["bench", "--url", openai, "--metrics-url", url, "--model", "mock", "--rates", "50"]
    argv += ["--requests-per-level", "2", "--max-tokens", "4", "--db", str(tmp_path / "t.sqlite"), "--wide"]
    assert main(argv) == 0
    table, _, note = capsys.readouterr().out.partition("level 0: ")
    assert "nan" not in table.lower() and note.startswith("non_finite_sample: ")


def test_result_files_never_carry_nan_or_infinity() -> None:
    """Whatever a row holds, ``--output`` writes null (JSON, JSONL) or an empty cell (CSV), never NaN/Infinity."""
    nan, inf = float("nan"), float("inf")
    row: dict[str, Cell] = dict.fromkeys(FIELDS)
    row |= {"level": 0, "request_goodput": inf, "spec_decode_accepted_tokens": nan}
    row |= {"spec_decode_acceptance_rate": nan, "spec_decode_per_position_acceptance_rates": [0.5, nan]}
    (written,) = _strict(render([row], ".json"))["rows"]
    assert written["spec_decode_accepted_tokens"] is None and written["request_goodput"] is None
    assert written["spec_decode_acceptance_rate"] is None
    assert written["spec_decode_per_position_acceptance_rates"] == [0.5, None]
    assert _strict(render([row], ".jsonl"))["spec_decode_accepted_tokens"] is None
    text = render([row], ".csv")
    (cells,) = list(csv.DictReader(io.StringIO(text)))
    assert cells["spec_decode_accepted_tokens"] == "" and cells["spec_decode_per_position_acceptance_rates"] == "0.5;"
    assert "nan" not in text.lower() and "inf" not in text.lower().replace("info", "")


def test_a_fleet_level_pooled_without_its_v0_replica_says_so(tmp_path: Path) -> None:
    """Review s47c F8: a V0 replica gives no reading, so the level's acceptance pools the others; that is said,
    naming the replica, never passed off as the fleet's."""
    from specwise.loadgen.runner import level_reading

    store = ResultStore(tmp_path / "r.sqlite")
    store.create_run("r", 0.0, {})
    for replica, (before, after) in enumerate(((BEFORE, AFTER), (REAL_V0_BEFORE, REAL_V0_AFTER))):
        store.save_scrape("r", 0, "before", before, replica)
        store.save_scrape("r", 0, "after", after, replica)
    errors: list[str] = []
    urls = ("http://127.0.0.1:9/metrics", "http://127.0.0.1:10/metrics")
    reading = level_reading(store, "r", 0, urls, errors)
    store.close()
    assert reading.spec_decode is not None and reading.spec_decode.counts is not None
    assert reading.spec_decode.counts.drafts == 34  # replica 0's own (the V1 fixture's window)
    assert errors[-1] == (
        "acceptance pooled over 1 of 2 replicas: replica 1 (http://127.0.0.1:10/metrics) gave no reading (said above)"
    )
    assert any(e.startswith(V0_NOTE) for e in errors[:-1])
