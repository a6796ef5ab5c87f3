"""Which k a scenario models is said in one place (specwise.monitor.predicted): export prometheus-rules refuses a
--k outside it (check_modelled_k, exit 2); monitor's slowdown model records the same values and prices such a k
with a warning (tests/monitor/test_predictor_shown.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.monitor.predicted import check_modelled_k, modelled_k_values, slowdown_model
from specwise.scenario import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama70b-4xh100.toml"


def test_modelled_k_values_drop_the_baseline_and_sort() -> None:
    assert modelled_k_values([0, 8, 2, 2]) == (2, 8)


def test_check_modelled_k_refuses_a_k_outside_the_scenario() -> None:
    check_modelled_k(None, [0, 2, 8])
    check_modelled_k(8, [0, 2, 8])
    with pytest.raises(SpecwiseError, match=r"^--k 5: the scenario models k = 2, 8 \(\[speculation\]\.k\)$"):
        check_modelled_k(5, [0, 2, 8])
    with pytest.raises(SpecwiseError, match="models k = none"):
        check_modelled_k(1, [0])


def test_monitor_and_export_read_the_same_modelled_k(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = load_scenario(EXAMPLE)
    model = slowdown_model(scenario, 13)
    assert model.modelled_k == modelled_k_values(scenario.sweep.k_values)
    assert model.unmodelled(13) is not None and any(w.startswith("--k 13 is not one of") for w in model.warnings())
    code = main(["export", "prometheus-rules", "--scenario", str(EXAMPLE), "--k", "13"])
    ks = ", ".join(map(str, model.modelled_k))
    assert code == 2 and f"--k 13: the scenario models k = {ks} ([speculation].k)" in capsys.readouterr().err
