"""``simulate --json`` says what ``best_speedup_by_qps`` holds (review 14: a reader saw ``best_k_by_qps`` 0 beside a
best speedup of 0.99 and could not tell whose speedup that is): the top speculative k's, paying or not."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.contracts.sweep import METRIC_KEYS, SweepResult, speculative_choices

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "examples" / "simulate-llama70b-4xh100.json"


def test_the_json_says_the_best_speedup_is_the_top_speculative_ks() -> None:
    doc = SweepResult.from_json(json.loads(GOLDEN.read_text()))
    out = doc.to_json()
    assert out["best_speedup_is"] == "top_speculative_k_paying_or_not"
    # as it says: where plain decoding is best (k 0), the speedup is the top speculative k's, below 1
    plain = [q for q, k in doc.best_k_by_qps.items() if k == 0]
    assert plain
    for q in plain:
        top = doc.row(q, doc.top_k(q))
        assert top is not None and doc.best_speedup_by_qps[q] == top.speedup(doc.decision_metric) < 1.0
    assert SweepResult.from_json(json.loads(json.dumps(out))).to_json() == out  # the key is derived, not read


def test_a_document_written_before_the_field_still_loads() -> None:
    raw = json.loads(GOLDEN.read_text())
    raw.pop("best_speedup_is")
    assert SweepResult.from_json(raw).to_json()["best_speedup_is"] == "top_speculative_k_paying_or_not"


def test_the_top_k_is_among_those_that_keep_up() -> None:
    """Review 15: ``top_k`` (the k advise names beside ``best_speedup_by_qps``) chose among every k, the best speedup
    among those that keep up with the load. A k above its capacity, however fast its finite run looked, is not it."""
    doc = SweepResult.from_json(json.loads(GOLDEN.read_text()))
    q = next(q for q in doc.qps if q not in doc.overloaded_qps and doc.best_k_by_qps[q])
    best = doc.best_k_by_qps[q]
    other = next(r for r in doc.results if r.qps == q and r.k and r.k != best)
    metric = doc.decision_metric
    faster = replace(other, overloaded=True, **{METRIC_KEYS[metric]: 10.0})
    edited = replace(doc, results=tuple(faster if r is other else r for r in doc.results))
    assert edited.top_k(q) == best  # the overloaded k's 10x is no choice
    # where no k keeps up, the top of all of them is still named
    every = tuple(replace(r, overloaded=True) if r.qps == q and r.k else r for r in edited.results)
    assert replace(edited, results=every).top_k(q) == other.k


def test_top_k_and_decide_choose_from_the_same_rows() -> None:
    """``SweepResult.top_k`` and ``study.decide`` share :func:`speculative_choices`: where the best k pays, it is the
    top k; an overloaded k is a choice only where plain decoding is overloaded too."""
    doc = SweepResult.from_json(json.loads(GOLDEN.read_text()))
    for q, k in doc.best_k_by_qps.items():
        if k:
            assert doc.top_k(q) == k
    q = doc.qps[0]
    row = next(r for r in doc.results if r.qps == q and r.k)
    rows = (replace(row, overloaded=True),)
    assert speculative_choices(rows, q, doc.decision_metric, base_overloaded=False) == (list(rows), [])
    assert speculative_choices(rows, q, doc.decision_metric, base_overloaded=True) == (list(rows), list(rows))
    assert speculative_choices(rows, q + 1.0, doc.decision_metric, base_overloaded=True) == ([], [])


def test_where_plain_decoding_is_overloaded_a_k_that_keeps_up_wins_over_one_that_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review E: where plain decoding and some k are overloaded and other k keep up, best k was the overloaded one
    (2.13x in a finite run whose queue grows), not a k an operator can run there. examples/llama70b-ngram.toml at 9
    QPS (8 QPS until the multi-start refit of 2026-12-06 raised the capacities, 8.6 until the anchor-grid refit the
    same day): plain decoding, k = 1 and k = 4..8 are overloaded, k = 2 and 3 keep up."""
    example = Path(__file__).resolve().parents[2] / "examples" / "llama70b-ngram.toml"
    text = example.read_text().replace("qps = [0.5, 1, 2, 4, 8, 16]", "qps = [9.0]")
    scenario = tmp_path / "ngram-9.toml"
    scenario.write_text(text.replace("k_schedule = [[1, 32, 4], [33, 96, 2], [97, 1024, 0]]\n", ""))
    assert main(["simulate", "--scenario", str(scenario), "--json", "--processes", "1"]) == 0
    doc = SweepResult.from_json(json.loads(capsys.readouterr().out))
    q = 9.0
    assert q in doc.overloaded_qps  # plain decoding does not keep up there
    at = [r for r in doc.results if r.qps == q and r.k]
    keep = {r.k for r in at if not r.overloaded}
    assert keep and keep != {r.k for r in at}
    assert doc.best_k_by_qps[q] in keep and doc.top_k(q) == doc.best_k_by_qps[q]
    faster_overloaded = max((r for r in at if r.overloaded), key=lambda r: r.speedup(doc.decision_metric) or 0.0)
    assert (faster_overloaded.speedup(doc.decision_metric) or 0.0) > doc.best_speedup_by_qps[q]  # the trap it avoids
    rows, choices = speculative_choices(doc.results, q, doc.decision_metric, base_overloaded=True)
    assert {r.k for r in choices} == keep and len(rows) == len(at)
