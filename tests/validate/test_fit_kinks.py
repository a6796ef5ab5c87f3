"""scripts/fit_kinks.py's arithmetic (the script itself replays every training record; its helpers are tested here)
and scripts/fit_published.py's start from a previous fit that lacks a parameter added since."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from specwise.validate import fit
from specwise.validate.fit_diagnostics import soft_l1_cost

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_soft_l1_gradient_is_the_costs() -> None:
    """J^T (r / sqrt(1 + (r / f)^2)) against central differences of soft_l1_cost for residuals linear in x."""
    kinks = _load("fit_kinks")
    rng = np.random.default_rng(3)
    jac, r0 = rng.normal(size=(30, 4)), rng.normal(scale=0.2, size=30)
    x, h = np.zeros(4), 1e-6
    numeric = [
        (soft_l1_cost(r0 + jac @ (x + h * e), fit.F_SCALE) - soft_l1_cost(r0 + jac @ (x - h * e), fit.F_SCALE))
        / (2 * h)
        for e in np.eye(4)
    ]
    assert kinks.soft_l1_gradient(jac, r0) == pytest.approx(numeric, rel=1e-6)


def test_classify_tells_a_jump_a_kink_and_a_smooth_residual_apart() -> None:
    """Row 0 smooth (quadratic), row 1 a kink at 0 (|s|), row 2 a jump at 0 (a step of 1e-3 upward)."""
    kinks = _load("fit_kinks")
    steps = [1e-2, 1e-3, 1e-4, 1e-5]

    def rows(t: float) -> np.ndarray:
        return np.array([0.3 * t + 2.0 * t * t, 0.5 * abs(t), 1e-3 if t > 0 else 0.0])

    r0 = rows(0.0)
    found = kinks.classify(r0, [rows(s) for s in steps], [rows(-s) for s in steps], steps)
    assert found == {"jump": [2], "kink": [1]}


def test_a_previous_fit_without_a_parameter_added_since_starts_with_it_at_its_initial_value() -> None:
    script = _load("fit_published")
    initial = {p.name: p.initial for p in fit.PARAMS}
    older = {k: v * 1.1 for k, v in initial.items() if k != "engine.overlap_jitter"}
    (label, x), *_ = script.starts(older, 2)[1:]
    assert label == "previous fit, with engine.overlap_jitter at the initial value"
    got = fit.named(x)
    assert got["engine.overlap_jitter"] == pytest.approx(initial["engine.overlap_jitter"])
    assert got["gpu.kv"] == pytest.approx(initial["gpu.kv"] * 1.1)
    unrelated = {**older, "not.a.parameter": 1.0}  # not a previous fit of this model: no such start
    assert [label for label, _ in script.starts(unrelated, 2)][1].startswith("initial values perturbed")
