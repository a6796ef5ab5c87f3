"""The fit's declared pieces, on formulas only (no replay): priors, the finite-difference Jacobian, identifiability."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specwise.validate import fit
from specwise.validate.anchor_grid import FGM_CELLS
from specwise.validate.fit_diagnostics import FD_STEP_LN, fd_jacobian, identifiability, soft_l1_cost

ROOT = Path(__file__).resolve().parents[2]


def _at_medians() -> np.ndarray:
    x = fit.initial().copy()
    for i, p in enumerate(fit.PARAMS):
        if p.prior:
            x[i] = math.log(p.prior.median)
    return x


def test_priors_are_zero_at_their_medians_and_one_weight_per_sigma() -> None:
    x = _at_medians()
    assert np.allclose(fit.prior_residuals(x), 0.0)
    with_prior = [i for i, p in enumerate(fit.PARAMS) if p.prior]
    assert len(with_prior) == len(fit.prior_residuals(x)) == 8
    i = with_prior[0]
    sigma = fit.PARAMS[i].prior.sigma_ln  # type: ignore[union-attr]
    x[i] += 2 * sigma
    assert fit.prior_residuals(x)[0] == pytest.approx(2 * fit.PRIOR_WEIGHT)


def test_priors_name_their_sources_and_sit_inside_the_bounds() -> None:
    for p in fit.PARAMS:
        if p.prior:
            assert p.low < p.prior.median < p.high
            assert "https://" in p.prior.source or p.prior.source == fit.REGULARISER
            assert p.prior.sigma_ln > 0


def test_regularisers_sit_on_the_declared_initial_values_and_only_on_the_undetermined_engine_terms() -> None:
    """A regulariser is not a measurement: it is centred where the coefficient was declared, a factor 10 wide, and
    only on the five engine terms the 2026-12-06 fit could not determine and the overlap jitter added on 2026-12-07
    (declared with it, no measurement behind it); the GPU's coefficients have none."""
    weak = {p.name: p for p in fit.PARAMS if p.prior and p.prior.source == fit.REGULARISER}
    assert set(weak) == {
        "vllm.per_seq_s",
        "vllm.per_draft_token_s",
        "sglang.base_s",
        "sglang.per_seq_s",
        "sglang.per_draft_token_s",
        "engine.overlap_jitter",
    }
    for p in weak.values():
        assert p.prior is not None and p.prior.median == p.initial
        assert p.prior.sigma_ln == pytest.approx(math.log(10.0))


def test_the_jacobian_steps_each_coordinate_by_the_same_log_step_and_never_past_a_bound() -> None:
    a = np.array([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0], [0.5, 0.0, 1.0]])
    low, high = np.full(3, -1.0), np.full(3, 1.0)

    def f(x: np.ndarray) -> np.ndarray:
        assert np.all(low <= x) and np.all(x <= high), "stepped past a bound"
        return a @ x + 0.5 * x**2

    x = np.array([0.0, -0.5, 1.0 - FD_STEP_LN / 2])  # the last one is within a step of its upper bound: it steps down
    jac = fd_jacobian(f, x, f(x), low, high)
    # forward differences of a quadratic: slope + 0.5 * (2x + h), with h = +step, or -step at the upper bound
    h = np.array([FD_STEP_LN, FD_STEP_LN, -FD_STEP_LN])
    assert np.allclose(jac, a + np.diag(0.5 * (2 * x + h)))
    assert jac[2, 2] == pytest.approx(1.0 + 0.5 * (2 * x[2] - FD_STEP_LN))


def test_the_jacobian_refuses_a_box_narrower_than_its_step() -> None:
    with pytest.raises(ValueError, match="narrower"):
        narrow = FD_STEP_LN / 5  # a box 0.4 steps wide: no step fits either way
        fd_jacobian(lambda x: x, np.array([0.0]), np.array([0.0]), np.array([-narrow]), np.array([narrow]))


def test_a_gridded_coordinate_steps_away_from_a_node_its_forward_step_would_cross() -> None:
    """A residual piecewise linear in x[0] with a kink at the node 0.3: from just below it, the forward step would
    give a secant across the kink; with the node declared the column is the slope of the piece x is on (-10), and a
    coordinate whose forward step crosses no node is stepped as before."""
    low, high = np.full(2, -5.0), np.full(2, 5.0)

    def f(x: np.ndarray) -> np.ndarray:
        return np.array([10.0 * abs(x[0] - 0.3) + x[1], x[0]])

    below = np.array([0.3 - FD_STEP_LN / 2, 1.0])
    secant = fd_jacobian(f, below, f(below), low, high)
    assert secant[0, 0] == pytest.approx(0.0, abs=1e-9)  # half a step down, half up: the kink averaged away
    aware = fd_jacobian(f, below, f(below), low, high, nodes={0: (0.3,)})
    assert (
        aware[0, 0] == pytest.approx(-10.0) and aware[1, 0] == pytest.approx(1.0) and aware[0, 1] == pytest.approx(1.0)
    )
    away = np.array([0.2, 1.0])  # no node within a step above: forward, as without nodes
    assert np.array_equal(
        fd_jacobian(f, away, f(away), low, high, nodes={0: (0.3,)}), fd_jacobian(f, away, f(away), low, high)
    )
    on = np.array([0.3, 1.0])  # on the node: the forward step stays on the upper piece
    assert fd_jacobian(f, on, f(on), low, high, nodes={0: (0.3,)})[0, 0] == pytest.approx(10.0)


def test_the_grid_nodes_are_the_lookup_constants_replay_grid_in_the_fits_coordinates() -> None:
    origin = fit.initial()
    nodes = fit.grid_nodes_ln(origin)
    i = [p.name for p in fit.PARAMS].index("lookup.first_given_match")
    assert list(nodes) == [i]
    assert len(nodes[i]) == FGM_CELLS - 1
    assert nodes[i][FGM_CELLS * 3 // 4 - 1] == pytest.approx(math.log(0.75) - origin[i])  # the node 24/32


def test_identifiability_gives_the_linear_least_squares_standard_deviations() -> None:
    """For a linear model and a linear loss the numbers are the textbook ones: sd_j = sqrt(((J^T J)^-1)_jj) * s,
    s^2 = |r|^2 / (m - n), with cost = |r|^2 / 2."""
    rng = np.random.default_rng(1)
    jac = rng.normal(size=(40, 3))
    r = rng.normal(scale=0.05, size=40)
    cost = 0.5 * float(r @ r)
    got = identifiability(jac, cost, ["a", "b", "c"])
    expected = np.sqrt(np.diag(np.linalg.inv(jac.T @ jac)) * (r @ r) / (40 - 3))
    assert [got.log_sd[k] for k in "abc"] == pytest.approx(list(expected), rel=1e-9)
    assert got.condition == pytest.approx(got.singular_values[0] / got.singular_values[-1])


def test_identifiability_finds_the_direction_the_data_cannot_see() -> None:
    # two columns that only ever appear as their sum: the sloppiest direction is (1, -1)/sqrt(2)
    rng = np.random.default_rng(0)
    s = rng.normal(size=(50, 1))
    jac = np.hstack([s, s + 1e-6 * rng.normal(size=(50, 1)), rng.normal(size=(50, 1))])
    got = identifiability(jac, cost=0.5, names=["a", "b", "c"], directions=1)
    assert got.condition > 1e4
    (d,) = got.sloppiest
    assert set(d) == {"a", "b"}
    assert d["a"] == pytest.approx(-d["b"], rel=1e-3)
    sd_a, sd_c = got.log_sd["a"], got.log_sd["c"]
    assert sd_a is not None and sd_c is not None and sd_a > 100 * sd_c
    assert got.to_json()["condition"] == pytest.approx(got.condition, rel=1e-3)


def test_a_coefficient_the_jacobian_cannot_see_has_no_standard_deviation() -> None:
    """Exactly collinear columns: a pseudo-inverse would give them a small sd; they get none (review s51a #2)."""
    rng = np.random.default_rng(2)
    s = rng.normal(size=(30, 1))
    got = identifiability(np.hstack([s, s, rng.normal(size=(30, 1))]), cost=0.5, names=["a", "b", "c"])
    assert got.log_sd["a"] is None and got.log_sd["b"] is None and got.log_sd["c"] is not None
    assert got.to_json()["log_sd"]["a"] is None


def test_soft_l1_cost_is_scipys() -> None:
    optimize = pytest.importorskip("scipy.optimize")
    t = np.linspace(0, 1, 20)
    y = 2.0 * t + 0.3 + np.where(t > 0.8, 0.5, 0.0)  # a few outliers, so the loss is not quadratic there
    res = optimize.least_squares(lambda p: p[0] * t + p[1] - y, [1.0, 0.0], loss="soft_l1", f_scale=fit.F_SCALE)
    assert soft_l1_cost(res.fun, fit.F_SCALE) == pytest.approx(res.cost, rel=1e-12)
    assert soft_l1_cost(np.array([1e-4]), 0.1) == pytest.approx(0.5 * 1e-8, rel=1e-6)  # quadratic near 0


def test_identifiability_checks_its_names() -> None:
    with pytest.raises(ValueError, match="names"):
        identifiability(np.eye(3), 1.0, ["a", "b"])


def _shipped_fit() -> dict[str, Any]:
    return json.loads((ROOT / "src" / "specwise" / "perfmodel" / "data" / "published_fit.json").read_text())["fit"]


def test_the_shipped_fit_records_its_priors_and_the_start_it_kept() -> None:
    f = _shipped_fit()
    assert f["priors"] == {
        p.name: {
            "median": p.prior.median,
            "sigma_ln": p.prior.sigma_ln,
            "weight": fit.PRIOR_WEIGHT,
            "source": p.prior.source,
        }
        for p in fit.PARAMS
        if p.prior
    }
    lowest = min(s["cost"] for s in f["starts"])
    tied = [s for s in f["starts"] if s["cost"] == lowest]  # costs are written rounded: starts that converged tie
    assert f["optimizer"]["from"] in [s["from"] for s in tied] and f["optimizer"]["cost"] == lowest
    best = next(s for s in tied if s["from"] == f["optimizer"]["from"])
    assert f["parameters"] == pytest.approx(best["parameters"], rel=1e-12)
    assert f["optimizer"]["fd_step_ln"] == FD_STEP_LN
    for p in fit.PARAMS:
        values = [s["parameters"][p.name] for s in f["starts"]]
        assert f["spread"]["min_max"][p.name] == pytest.approx([min(values), max(values)], rel=1e-12)


def _script() -> Any:
    pytest.importorskip("scipy")
    spec = importlib.util.spec_from_file_location("fit_published", ROOT / "scripts" / "fit_published.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_shipped_starts_are_the_declared_ones() -> None:
    """The initial values and the seeded perturbation the script declares are the starts the shipped fit records
    (the previous fit's coefficients are the parent commit's; ``--starts-from`` reruns all three)."""
    script = _script()
    f = _shipped_fit()
    declared = script.starts(f["starts"][1]["start"], len(f["starts"]))
    assert [label for label, _ in declared] == [s["from"] for s in f["starts"]]
    for (_, x), s in zip(declared, f["starts"], strict=True):
        assert list(np.exp(x)) == pytest.approx([s["start"][p.name] for p in fit.PARAMS], rel=1e-9)
    assert [label for label, _ in script.recorded_starts({"fit": f})] == [s["from"] for s in f["starts"]]


def test_a_bad_starts_file_is_said_as_bad_input(tmp_path: Path) -> None:
    script = _script()
    (tmp_path / "not.json").write_text("{ nope")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "nostarts.json").write_text('{"fit": {"starts": [{"from": "x", "start": {"gpu.kv": 1.0}}]}}')
    for name, said in [
        ("missing.json", "cannot read it"),
        ("not.json", "not a JSON file"),
        ("list.json", "not a fit file"),
        ("nostarts.json", "records no start vectors"),
    ]:
        with pytest.raises(script.BadInput, match=said):
            script.read_starts(tmp_path / name)
    assert len(script.read_starts(ROOT / "src/specwise/perfmodel/data/published_fit.json")) == 3


def test_the_script_exits_2_on_a_bad_starts_file(tmp_path: Path) -> None:
    pytest.importorskip("scipy")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/fit_published.py"), "--starts-from", str(tmp_path / "missing.json")],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "cannot read it" in done.stderr and "Traceback" not in done.stderr
