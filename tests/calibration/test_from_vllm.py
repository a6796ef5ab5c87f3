"""Calibration from a real ``vllm bench serve --save-result --save-detailed`` file (recorded against the mock
server, see tests/fixtures/vllm_bench_serve/README.md): request timelines rebuilt from start + ttft + itls, the
fit and replay on them, and one-line refusals of files that cannot be calibrated from."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from specwise.calibration.from_vllm import (
    VllmCalibrationInput,
    calibrate_vllm,
    replay_warnings,
    request_record,
    spread_tokens,
)
from specwise.cli import main
from specwise.contracts.vllm_detailed import detailed_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_bench_serve"
DETAILED = FIXTURES / "baseline-and-ngram-on-mock-detailed.json"
SUMMARY_ONLY = FIXTURES / "eagle3-on-mock.json"


def _runs() -> list[dict[str, object]]:
    return [json.loads(line) for line in DETAILED.read_text().splitlines() if line.strip()]


def test_spread_tokens() -> None:
    assert spread_tokens(16, 16) == (1,) * 16
    assert spread_tokens(16, 6) == (1, 3, 3, 3, 3, 3)
    assert spread_tokens(10, 4) == (1, 3, 3, 3)
    assert spread_tokens(11, 4) == (1, 4, 3, 3) and sum(spread_tokens(11, 4)) == 11
    assert spread_tokens(1, 1) == (1,) and spread_tokens(5, 0) == ()


def test_request_timelines_from_start_ttft_and_itls() -> None:
    runs = _runs()
    assert len(runs) == 4
    for n, run in enumerate(runs):
        records = [request_record(t, n, str(i)) for i, t in enumerate(detailed_run(run, f"run {n}").requests)]
        assert len(records) == len(run["start_times"]) == 12  # type: ignore[arg-type]
        for r, start, ttft, itls, out in zip(
            records,
            run["start_times"],
            run["ttfts"],
            run["itls"],
            run["output_lens"],
            strict=True,  # type: ignore[call-overload]
        ):
            assert r.ok and r.start_s == start and r.first_token_s == pytest.approx(start + ttft)
            times = [t for t, _ in r.chunks]
            assert len(times) == len(itls) + 1 and all(b > a for a, b in itertools.pairwise(times))
            assert times[-1] == pytest.approx(start + ttft + sum(itls))
            assert sum(k for _, k in r.chunks) == r.output_tokens == out
    speculating = request_record(detailed_run(runs[2], "run 2").requests[0], 0, "0")
    assert len(speculating.chunks) == 6 and speculating.chunks[1][1] == 3  # the mock's 3 tokens per step


def test_calibration_from_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cal.json"
    assert main(["calibrate", str(DETAILED), "--out", str(out), "--engine-version", "0.32.0", "--json"]) == 0
    cal = json.loads(capsys.readouterr().out)["calibration"]
    assert json.loads(out.read_text()) == cal
    assert cal["source"] == "vllm bench serve" and cal["source_files"] == [str(DETAILED)]
    assert cal["engine_version"] == "0.32.0" and cal["target"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert cal["assumed"]["max_num_seqs"] == 256 and cal["assumed"]["max_num_batched_tokens"] == 8192
    assert [(c["name"], c["method"], c["k"]) for c in cal["configs"]] == [("baseline", None, 0), ("ngram", "ngram", 4)]
    rows = {(r["config"], r["rate_per_s"]): r for r in cal["rows"]}
    assert set(rows) == {("baseline", 8.0), ("baseline", 32.0), ("ngram", 8.0), ("ngram", 32.0)}
    # the mock: 10 ms per token without speculation, 14 ms per 3 tokens with it
    assert rows[("baseline", 8.0)]["measured_tpot_p50_s"] == pytest.approx(0.0103, abs=0.001)
    assert rows[("ngram", 8.0)]["measured_speedup_tpot"] == pytest.approx(2.16, abs=0.1)
    assert cal["max_abs_speedup_error"] < 0.05
    law = cal["predictor"]
    assert law["constant_s"] == pytest.approx(0.010, abs=0.002)


def test_same_result_through_the_library() -> None:
    doc = calibrate_vllm(VllmCalibrationInput((DETAILED,), max_num_seqs=8, assumed=("max_num_batched_tokens",)))
    assert doc.extra["assumed"] == {
        "max_num_batched_tokens": 8192,
        "engine_version": "unknown (not in the result files)",
        "tokens_per_chunk": "1 in the first chunk, output_len - 1 spread evenly over the later chunks",
    }
    assert doc.base_config == "baseline" and doc.fit_points > 0


def _one_line_refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["calibrate", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "cal.json")
    err = _one_line_refusal(capsys, str(SUMMARY_ONLY), "--out", out)
    assert "re-run vllm bench serve with --save-result --save-detailed" in err and "start_times" in err
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    assert "not a vllm bench serve" in _one_line_refusal(capsys, str(other), "--out", out)
    twice = tmp_path / "twice.json"
    lines = DETAILED.read_text().splitlines()
    twice.write_text("\n".join([lines[0], lines[0], lines[2]]))
    assert "second run of one configuration" in _one_line_refusal(capsys, str(twice), "--out", out)
    assert not Path(out).exists()


def test_a_baseline_replayed_off_its_measured_tpot_is_said() -> None:
    """Review s47d F2: a server capped at 8 sequences replayed at vLLM's default 256 missed the baseline's TPOT by
    +63%, with no warning and a speedup error column of 0 (it compares configs with the baseline's replay)."""
    request = VllmCalibrationInput((DETAILED,))
    doc = calibrate_vllm(request)
    assert replay_warnings(doc, request) == []  # the mock's replay is within 2%
    first = next(r for r in doc.rows if r.config == "baseline")
    off = replace(
        doc,
        rows=tuple(
            replace(r, predicted_tpot_p50_s=r.measured_tpot_p50_s * 1.63) if r is first and r.measured_tpot_p50_s else r
            for r in doc.rows
        ),
    )
    [said] = replay_warnings(off, request)
    assert said.startswith("the replay misses the baseline's measured TPOT p50 at 1 of 2 levels (worst +63% at level")
    assert "--max-num-seqs 256 (vLLM's default)" in said
