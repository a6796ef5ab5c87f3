"""The anchor's fixed grid: a root that moves continuously with the node values, and replays that move continuously
with the step-time coefficients (the published fit's objective has no jumps to straddle)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from specwise.acceptance.model import AcceptanceModel
from specwise.evidence.records import all_records
from specwise.validate import fit
from specwise.validate.anchor_grid import ANCHOR_CELLS, cell, grid_root, node
from specwise.validate.predict import Acceptance, blended

ROOT = Path(__file__).resolve().parents[2]


def _root(values: list[float]) -> float:
    """The root grid_root finds over nodes 0..len-1, as a node position."""
    i, w, _ = grid_root(lambda j: values[j], len(values) - 1)
    return i + w


def test_a_linear_function_gives_its_exact_root() -> None:
    for root in (0.0, 0.3, 5.0, 7.25, 15.999, 16.0):
        assert _root([j - root for j in range(17)]) == pytest.approx(root, abs=1e-12)


def test_beyond_either_end_it_clamps_and_says_so() -> None:
    assert grid_root(lambda j: j + 1.0, 16) == (0, 0.0, "even the lower end predicts more than published")
    assert grid_root(lambda j: j - 20.0, 16) == (15, 1.0, "even the upper end predicts less than published")


def test_out_of_order_nodes_are_noted() -> None:
    values = [j - 10.5 for j in range(17)]
    values[8] = 6.0  # the first midpoint, above the upper end (5.5)
    assert "node 8" in grid_root(lambda j: values[j], 16)[2]


def test_the_root_is_continuous_in_theta_on_a_staircase() -> None:
    """S_theta(a) = floor(400 a) / 400 + 0.5 a + theta: a root solved on S itself jumps by whole steps (1/400 over a
    slope of 0.5 + the staircase's), the grid's root moves by delta / (its smallest cell slope) at most."""
    grid = [node(i, 0.0, 0.995, ANCHOR_CELLS) for i in range(ANCHOR_CELLS + 1)]

    def alpha(theta: float) -> float:
        values = [v + theta - 0.9 for v in step]
        i, w, note = grid_root(lambda j: values[j], ANCHOR_CELLS)
        assert note == ""
        return grid[i] + w * (grid[i + 1] - grid[i])

    step = [math.floor(400 * g) / 400 + 0.5 * g for g in grid]
    slopes = [(sb - sa) / (b - a) for (a, sa), (b, sb) in itertools.pairwise(zip(grid, step, strict=True))]
    rng = np.random.default_rng(1)
    for theta in rng.uniform(0.0, 0.5, 40):
        for delta in (1e-2, 1e-3, 1e-5, 1e-7):
            assert abs(alpha(theta + delta) - alpha(theta)) <= delta / min(slopes) * (1 + 1e-9)


def test_cells_and_nodes_agree() -> None:
    for x in (0.0, 0.1, 0.5, 0.755, 0.99, 1.0, 1.5, -1.0):
        i, w = cell(x, 0.0, 1.0, 32)
        assert 0 <= i < 32 and 0.0 <= w <= 1.0
        a, b = node(i, 0.0, 1.0, 32), node(i + 1, 0.0, 1.0, 32)
        assert a + w * (b - a) == pytest.approx(min(max(x, 0.0), 1.0), abs=1e-12)
    assert node(16, 0.0, 0.995, 16) == 0.995
    with pytest.raises(ValueError):
        cell(0.5, 1.0, 1.0, 4)


def test_blends_flatten_with_weights_summing_to_one() -> None:
    def acc(a: float) -> Acceptance:
        return Acceptance(AcceptanceModel.iid(a), 1.0, "")

    inner = blended(acc(0.5), [(0.25, acc(0.4)), (0.75, acc(0.6))])
    outer = blended(acc(0.55), [(0.5, inner), (0.5, acc(0.7)), (0.0, acc(0.9))])
    parts = outer.parts()
    assert [round(w, 12) for w, _ in parts] == [0.125, 0.375, 0.5]
    assert sum(w for w, _ in parts) == pytest.approx(1.0)
    assert acc(0.3).parts() == [(1.0, acc(0.3))]


def _shipped() -> np.ndarray:
    doc = json.loads((ROOT / "src/specwise/perfmodel/data/published_fit.json").read_text())
    return fit.vector(doc["fit"]["parameters"])


def _series(anchor_id: str) -> list:  # type: ignore[type-arg]
    records = all_records()
    series = next(r.series for r in records if r.id == anchor_id)
    return [r for r in records if r.series == series]


@pytest.mark.parametrize(
    ("anchor_id", "direction"),
    [("sdb-fig1-qwen3-8b-gsm8k-eagle3-bs1", "all"), ("sdb-fig1-qwen3-8b-gsm8k-ngram-bs1", "lookup.first_given_match")],
)
def test_an_anchored_series_moves_continuously_with_the_coefficients(anchor_id: str, direction: str) -> None:
    """Along one direction in ln(coefficients), every residual of the series moves by at most 3h for a step h from
    1e-5 to 1e-2 (the fit's sensitivities are under ~1 per unit of ln); a root solved on the replay's staircase
    jumped by a whole step there (0.3-1.8% in speedup, i.e. ~1e-2 against 3e-5)."""
    records = _series(anchor_id)
    x0 = _shipped()
    if direction == "all":
        d = np.random.default_rng(0).normal(size=len(x0))
    else:
        d = np.array([1.0 if p.name == direction else 0.0 for p in fit.PARAMS])
    d /= np.linalg.norm(d)
    r0 = fit.residuals(records, x0)
    assert len(r0) == len(records) - 1  # the anchor itself is not a residual
    for h in np.geomspace(1e-5, 1e-2, 10):
        dr = np.abs(fit.residuals(records, x0 + h * d) - r0)
        assert dr.max() <= 3 * h, (h, dr)


def test_every_anchor_reproduces_its_published_speedup_exactly() -> None:
    records = [r for r in all_records() if r.family == "specdecode-bench"]
    anchors = [p for p in fit.predictions(records, _shipped()) if p.status == "anchor"]
    assert len(anchors) > 20
    for p in anchors:
        assert p.predicted_speedup == pytest.approx(p.record.speedup, rel=1e-9), p.record.id
