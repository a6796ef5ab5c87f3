"""The fit's declared pieces, on formulas only (no replay): priors, the finite-difference Jacobian, identifiability."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specwise.validate import fit
from specwise.validate.fit_diagnostics import FD_STEP_LN, fd_jacobian, identifiability


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
    assert len(with_prior) == len(fit.prior_residuals(x)) == 2
    i = with_prior[0]
    sigma = fit.PARAMS[i].prior.sigma_ln  # type: ignore[union-attr]
    x[i] += 2 * sigma
    assert fit.prior_residuals(x)[0] == pytest.approx(2 * fit.PRIOR_WEIGHT)


def test_priors_name_their_sources_and_sit_inside_the_bounds() -> None:
    for p in fit.PARAMS:
        if p.prior:
            assert p.low < p.prior.median < p.high
            assert "https://" in p.prior.source
            assert p.prior.sigma_ln > 0


def test_the_jacobian_steps_each_coordinate_by_the_same_log_step_away_from_its_bound() -> None:
    a = np.array([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]])

    def f(x: np.ndarray) -> np.ndarray:
        return a @ x + 0.5 * (x**2)[:2]

    x = np.array([0.0, 0.0, 0.98])
    low, high = np.full(3, -1.0), np.full(3, 1.0)
    jac = fd_jacobian(f, x, f(x), low, high)
    # forward differences of a quadratic: slope + 0.5 * (2x + h), with h = +step, or -step at the upper bound
    h = np.array([FD_STEP_LN, FD_STEP_LN, -FD_STEP_LN])
    expected = a.copy()
    for j in range(3):
        expected[:, j] += np.eye(3)[:2, j] * 0.5 * (2 * x[j] + h[j])
    assert np.allclose(jac, expected)


def test_the_jacobian_refuses_a_box_narrower_than_its_step() -> None:
    with pytest.raises(ValueError, match="narrower"):
        fd_jacobian(lambda x: x, np.array([0.0]), np.array([0.0]), np.array([-0.01]), np.array([0.01]))


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
    assert got.log_sd["a"] > 100 * got.log_sd["c"]
    assert got.to_json()["condition"] == pytest.approx(got.condition, rel=1e-3)


def test_identifiability_checks_its_names() -> None:
    with pytest.raises(ValueError, match="names"):
        identifiability(np.eye(3), 1.0, ["a", "b"])
