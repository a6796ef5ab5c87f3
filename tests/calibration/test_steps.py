"""Step reconstruction from streamed chunks (calibration/steps) and the fit's stalls (calibration/fit): reads joined
back to back, fast steps kept, engine stalls left out wherever they fall, long-context steps kept."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from tests.calibration.test_calibration import A, B, C, toy_engine

from specwise.calibration.fit import STALL_FACTOR, ConfigRun, LevelRun, fit
from specwise.calibration.steps import SAME_STEP_S, decode_steps, step_intervals
from specwise.cli import main
from specwise.contracts.calibration import CalibrationDoc, StepLaw, StepPoint
from specwise.contracts.document import DocumentError
from specwise.errors import SpecwiseError
from specwise.loadgen.records import RequestRecord
from specwise.loadgen.store import ResultStore
from specwise.report.bench import render_calibration


def _law(kv: float, batched: float) -> float:
    return A * kv + B * batched + C


def test_chunks_read_back_to_back_join_the_gap_before_them() -> None:
    chunks = [(0.0, 1), (0.1, 1), (0.4, 1), (0.4005, 1), (0.401, 1), (0.5, 1)]
    assert step_intervals(chunks, 1) == [(0.0, 0.1, 1), (0.1, 0.401, 3), (0.401, 0.5, 1)]
    # a chunk of two steps' tokens is no step and ends the interval; a back-to-back read after it is dropped once the
    # next step shows it was one
    chunks = [(0.0, 1), (0.1, 1), (0.3, 2), (0.3001, 1), (0.4, 1)]
    assert step_intervals(chunks, 1) == [(0.0, 0.1, 1), (0.3001, 0.4, 1)]
    assert step_intervals(chunks, 2) == [(0.0, 0.1, 1), (0.1, 0.3001, 2), (0.3001, 0.4, 1)]
    # the first two tokens read back to back: not a step
    assert step_intervals([(0.0, 1), (0.0002, 1), (0.1, 1)], 1) == [(0.0002, 0.1, 1)]


def test_steps_faster_than_the_read_tolerance_are_steps() -> None:
    """A fast engine (1.5 ms steps, under SAME_STEP_S) is measured, not read as back-to-back chunks (review 13 #3)."""
    steady = [(i * 0.0015, 1) for i in range(40)]
    assert len(step_intervals(steady, 1)) == 39 and SAME_STEP_S > 0.0015
    records = [
        RequestRecord("r", 0, f"q{j}", None, 0.0, 0.0, steady[-1][0], 0.0, 40, 100, tuple(steady)) for j in range(4)
    ]
    points = decode_steps(records, "b", 0, 1.0, 1)
    assert sum(p.samples for p in points) == 4 * 39
    assert all(p.time_s == pytest.approx(0.0015) for p in points)


def _level(rate: float, seed: int, stall: tuple[int, float] | None = None) -> LevelRun:
    recs, *_ = toy_engine(rate, 30, 0, 0.0, 0.0, seed=seed, stall=stall)
    return LevelRun(seed, rate, tuple(recs), None, None, (), None)


@pytest.mark.parametrize("stall_s", [0.9, 3.0])
def test_a_stall_anywhere_is_left_out(stall_s: float) -> None:
    """An engine stall at every fourth step of the busiest level: before a prefill of the requests that arrived
    during it, at a batch size no other step has, or in the steady stretch (review 13 #1: the first version left
    out only the last kind, and the others fitted with errors of 18-220%)."""
    steps = len({t for r in _level(6.0, 2).records for t, _ in r.chunks})
    for at in range(1, steps, 4):
        levels = (_level(0.5, 0), _level(2.0, 1), _level(6.0, 2, (at, stall_s)))
        cal = fit([ConfigRun("baseline", None, 0, levels)])
        assert cal.relative_rms_error() < 0.01, at
        assert cal.outlier_steps > 0, at
        assert cal.target.per_batched_token_s == pytest.approx(B, rel=0.02), at


def test_a_clean_run_leaves_nothing_out() -> None:
    cal = fit([ConfigRun("baseline", None, 0, (_level(0.5, 0), _level(2.0, 1), _level(6.0, 2)))])
    assert cal.outlier_steps == 0 and cal.relative_rms_error() < 1e-6


def test_long_context_steps_are_kept() -> None:
    """Decode steps over 120k-token contexts take 4x those over 100 tokens at the same batch size: they are what
    fits the per-KV-token cost, not stalls (review 13 #2)."""

    def phase(prompt: int, n: int, steps: int, start: float) -> tuple[list[RequestRecord], float]:
        chunks: list[list[tuple[float, int]]] = [[(start, 1)] for _ in range(n)]
        now = start
        for s in range(steps):
            now += _law(n * (prompt + s + 2), n)
            for ch in chunks:
                ch.append((now, 1))
        t0 = start - 0.1
        recs = [
            RequestRecord("r", 0, f"{prompt}-{i}", None, t0, t0, ch[-1][0], start, steps + 1, prompt, tuple(ch))
            for i, ch in enumerate(chunks)
        ]
        return recs, now

    short, end = phase(100, 4, 40, 0.0)
    middle, end = phase(8_000, 2, 20, end + 1.0)
    long_, _ = phase(120_000, 4, 10, end + 1.0)
    assert _law(4 * 120_001, 4) > STALL_FACTOR * _law(4 * 101, 4)
    level = LevelRun(0, None, tuple(short + middle + long_), None, None, (), None)
    cal = fit([ConfigRun("baseline", None, 0, (level,))])
    assert cal.outlier_steps == 0
    assert cal.target.per_kv_token_s == pytest.approx(A, rel=0.05)


def _stalled(records: list[RequestRecord], at_s: float, stall_s: float) -> list[RequestRecord]:
    """Nothing is seen for ``stall_s`` at ``at_s``: every later chunk (and first token) comes that much later."""

    def later(t: float) -> float:
        return t + stall_s if t > at_s else t

    return [
        replace(
            r,
            chunks=tuple((later(t), n) for t, n in r.chunks),
            first_token_s=later(r.first_token_s or 0.0),
            end_s=later(r.end_s),
        )
        for r in records
    ]


def test_a_client_reading_late_keeps_the_steps_time() -> None:
    """A client that reads five steps' chunks at once: the long gap is five steps, each its share, not a stall."""
    clean, *_ = toy_engine(2.0, 20, 0, 0.0, 0.0, seed=1)
    r = max(clean, key=lambda r: len(r.chunks))
    i = len(r.chunks) // 2
    late = r.chunks[i + 4][0]
    read = {j: late + SAME_STEP_S / 8 * (j - i) for j in range(i, i + 5)}  # back to back, within SAME_STEP_S
    chunks = tuple((read.get(j, t), n) for j, (t, n) in enumerate(r.chunks))
    recs = [replace(x, chunks=chunks) if x is r else x for x in clean]
    run = ConfigRun("baseline", None, 0, (LevelRun(0, 2.0, tuple(recs), None, None, (), None),))
    cal = fit([run])
    assert cal.outlier_steps == 0
    before = fit([ConfigRun("baseline", None, 0, (LevelRun(0, 2.0, tuple(clean), None, None, (), None),))])
    assert sum(p.samples for p in cal.points) == sum(p.samples for p in before.points)  # every step counted once
    total_s = sum(p.time_s * p.samples for p in cal.points)
    assert total_s == pytest.approx(sum(p.time_s * p.samples for p in before.points), rel=1e-3)  # and its time
    assert cal.relative_rms_error() < 0.05


def test_the_calibration_says_how_many_steps_were_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = ResultStore(tmp_path / "b.sqlite")
    launch = {"name": "baseline", "speculative_config": None, "server_args": [], "model": "toy/model"}
    config = {"rates": [2.0, 6.0], "launch": launch}
    store.create_run("base-baseline", 0.0, config)
    for level, rate in enumerate((2.0, 6.0)):
        recs, *_ = toy_engine(rate, 30, 0, 0.0, 0.0, seed=level)
        times = sorted(t for r in recs for t, _ in r.chunks)
        for r in _stalled(recs, times[len(times) // 2], 30 * C):
            store.add(replace(r, run_id="base-baseline", level=level, request_id=f"{level}-{r.request_id}"))
    store.close()
    assert main(["bench", "--calibrate-run", "base", "--db", str(tmp_path / "b.sqlite"), "--json"]) == 0
    cal = json.loads(capsys.readouterr().out)["calibration"]
    left_out = cal["predictor"]["outlier_steps"]
    assert left_out > 0 and left_out >= sum(p["outliers"] for p in cal["points"])
    assert cal["predictor"]["fit_relative_rms_error"] < 0.01
    assert main(["bench", "--calibrate-run", "base", "--db", str(tmp_path / "b.sqlite")]) == 0
    total = left_out + sum(p["samples"] for p in cal["points"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"{left_out} of {total} step timings (one per running request per step) left out of the fit" in text
    assert "busy machine" not in text  # one stall per level: a few percent of the steps


def _doc(outliers: int, left_out: int | None = None) -> CalibrationDoc:
    point = StepPoint("baseline", 0, 4, 0.0, 400.0, 4.0, 0.1, 95, outliers)
    law = StepLaw(0.0, 0.0, 0.1)
    left_out = outliers if left_out is None else left_out
    return CalibrationDoc("r", law, 1, 0.01, {}, points=(point,), outlier_steps=left_out, target="toy/model")


def test_many_stalls_say_the_machine_was_busy() -> None:
    def text(outliers: int) -> str:
        out = Console(record=True, width=200)
        render_calibration(_doc(outliers), out=out)
        return " ".join(out.export_text().split())  # the console wraps long lines

    assert "5 of 100 step timings" in text(5) and "busy machine" not in text(5)
    assert "6 of 101 step timings" in text(6) and "busy machine: re-run on a quiet one" in text(6)
    assert "left out" not in text(0)


def test_the_counts_read_back_and_a_negative_one_is_refused() -> None:
    doc = _doc(3, left_out=7).to_json()
    assert doc["predictor"]["outlier_steps"] == 7 and doc["points"][0]["outliers"] == 3
    assert CalibrationDoc.from_json(doc).outlier_steps == 7
    old = json.loads(json.dumps(doc))  # a file written before the counts: none left out
    del old["predictor"]["outlier_steps"], old["points"][0]["outliers"]
    read = CalibrationDoc.from_json(old)
    assert read.outlier_steps == 0 and read.points[0].outliers == 0
    for where, key in (("point", "outliers"), ("predictor", "outlier_steps"), ("point", "samples")):
        bad = json.loads(json.dumps(doc))
        (bad["points"][0] if where == "point" else bad["predictor"])[key] = -3
        with pytest.raises(DocumentError, match=f"{key}.*-3: must be at least"):
            CalibrationDoc.from_json(bad)


def test_a_baseline_of_one_request_at_a_time_says_why_and_what_to_run() -> None:
    """Review s47d F1: every baseline step at batch 1 (--max-concurrency 1) failed with "need at least 3 step-time
    points, got 1", naming no cause and no fix."""
    steady = tuple((i * 0.01, 1) for i in range(40))
    records = [RequestRecord("r", 0, "q0", None, 0.0, 0.0, steady[-1][0], 0.0, 40, 100, steady)]
    level = LevelRun(0, 1.0, tuple(records), None, None, (), None)
    with pytest.raises(SpecwiseError) as err:
        fit([ConfigRun("baseline", None, 0, (level,))])
    said = str(err.value)
    assert "the steps of baseline ran" in said and "batch sizes 1;" in said
    assert "run the baseline at loads where requests overlap" in said and "\n" not in said
