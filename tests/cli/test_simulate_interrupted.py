"""Ctrl-C or SIGTERM during ``simulate`` keeps the cells that finished (review C, finding 5): they are printed,
marked partial (``specwise.sweep-partial/1`` with ``--json``), each equal to the same cell of a whole sweep; stderr
says how many of how many had finished; the exit code is still the interrupt's (130). The pool's side, a finished
prefix kept when the main process is interrupted, is tested on the executor itself."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.cli.common import EXIT_INTERRUPTED
from specwise.contracts.document import DocumentError
from specwise.contracts.sweep import SweepResult
from specwise.executors.local import LocalExecutor
from specwise.scenario import load_scenario
from specwise.study import sweep as sweep_module
from specwise.study.decide import decide
from specwise.study.sweep import run_sweep, sweep_jobs

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "examples" / "llama70b-ngram.toml"
REQUESTS = "40"


def _interrupt_after(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The (n+1)-th cell is interrupted as Ctrl-C interrupts it (in process: --processes 1)."""
    real = sweep_module.run_cell
    calls = [0]

    def cell(*args: object) -> sweep_module.Cell:
        calls[0] += 1
        if calls[0] > n:
            raise KeyboardInterrupt
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(sweep_module, "run_cell", cell)


def _argv(*extra: str) -> list[str]:
    return ["simulate", "--scenario", str(SCENARIO), "--num-requests", REQUESTS, "--processes", "1", *extra]


def test_json_keeps_the_finished_cells_equal_to_a_whole_sweep(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_argv("--json")) == 0
    whole = json.loads(capsys.readouterr().out)
    _interrupt_after(5, monkeypatch)
    assert main(_argv("--json")) == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    total = len(sweep_jobs(load_scenario(SCENARIO)))
    assert doc["schema"] == "specwise.sweep-partial/1" and doc["partial"] is True
    assert (doc["cells_done"], doc["cells_total"]) == (5, total)
    first_qps = whole["baseline"]["by_qps"][0]["qps"]
    expected = [r for r in whole["results"] if r["qps"] == first_qps][:5]
    assert [(r["qps"], r["k"]) for r in doc["results"]] == [(r["qps"], r["k"]) for r in expected]
    for got, want in zip(doc["results"], expected, strict=True):
        for key in ("tpot_p50_s", "e2e_p50_s", "output_tokens_per_s", "speedup_e2e", "acceptance_rate"):
            assert got[key] == want[key], key
        assert "overloaded" not in got  # unknown before the capacity runs
    err = captured.err.strip().splitlines()
    # one line, not followed by a bare "interrupted" (review s59)
    assert err[-1] == f"specwise simulate: interrupted: 5 of {total} simulations had finished; they are on " + (
        "standard output, marked partial"
    )
    assert "Traceback" not in captured.err
    with pytest.raises(DocumentError, match=r"sweep-partial document, expected specwise\.sweep"):
        SweepResult.from_json(doc)  # never mistaken for a finished sweep


def test_text_marks_the_table_partial(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _interrupt_after(3, monkeypatch)
    assert main(_argv()) == EXIT_INTERRUPTED
    out = capsys.readouterr().out
    assert "PARTIAL, interrupted after 3 of" in out and "no best k, crossover or capacity" in out
    assert "best" not in out.split("no best k")[0]  # no decision column


def test_nothing_finished_prints_nothing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _interrupt_after(0, monkeypatch)
    assert main(_argv("--json")) == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    assert captured.out == ""
    total = len(sweep_jobs(load_scenario(SCENARIO)))
    assert captured.err == f"specwise simulate: interrupted: 0 of {total} simulations had finished\n"


def _slow_after_two(x: int) -> int:
    if x >= 2:
        time.sleep(60)  # never reached by a passing test: the pool is stopped first
    return x * 10


def test_pool_keeps_the_finished_prefix_when_the_main_process_is_interrupted() -> None:
    """Ctrl-C arrives in the main process while it waits on the pool (here: in the progress callback, after the
    second result): the two results are in ``into``, the interrupt goes on, and the map returns within seconds."""
    kept: list[int] = []

    def progress(done: int, total: int) -> None:
        if done == 2:
            raise KeyboardInterrupt

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        LocalExecutor(2).map(_slow_after_two, [0, 1, 2, 3, 4], progress, into=kept)
    assert kept == [0, 10]
    assert time.monotonic() - start < 30  # the sleeping workers were killed, not waited for


def test_sweep_order_runs_each_baseline_before_its_speculative_cells() -> None:
    """partial_sweep relies on it: any finished prefix holds k = 0 of every speculative cell's QPS."""
    jobs = sweep_jobs(load_scenario(SCENARIO))
    seen_base: set[float] = set()
    for _, qps, k in jobs:
        if k == 0:
            seen_base.add(qps)
        else:
            assert qps in seen_base, (qps, k)


def test_into_gets_every_cell_of_a_whole_sweep() -> None:
    sc = load_scenario(SCENARIO)
    sc = replace(sc, sweep=replace(sc.sweep, num_requests=20, qps=sc.sweep.qps[:1]))
    kept: list[sweep_module.Cell] = []
    cells = run_sweep(sc, LocalExecutor(1), into=kept)
    assert kept is cells and len(cells) == len(sweep_jobs(sc))
    decide(sc, kept)  # a whole prefix is a whole sweep
