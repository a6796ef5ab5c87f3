"""``profile --plot``: acceptance vs temperature with the 95% intervals the JSON carries as error bars, an axis
from 0 that is not a sliver around one temperature, a legend only when something was drawn, and a profile that
drafted nothing drawn as a plot that says so -- never a matplotlib warning."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specwise.profiler.analysis import counts_by_k
from specwise.profiler.document import build_document
from specwise.profiler.result import Observation, summarise
from specwise.profiler.settings import ProfileSettings
from specwise.report import profile_plots

K = (1, 3)


def _doc(temperatures: tuple[float, ...], drafted: bool) -> Any:
    rng = np.random.default_rng(3)
    obs = []
    for temp in temperatures:
        for _ in range(6):
            accept = rng.uniform(0.2, 0.9, size=20) if drafted else np.zeros(20)
            proposals = [accept[t : t + max(K)] if drafted else np.zeros(0) for t in range(16)]
            obs.append(Observation((), temp, "greedy", None, counts_by_k(proposals, K), 0.0, 0))
    settings = ProfileSettings(method="ngram", temperatures=temperatures, k_values=K, max_new_tokens=16)
    return build_document("t", None, settings, "builtin:test", 6, summarise(obs, K, 0, 100), {})


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The figures the plot draws, kept open for the test to read."""
    kept: list[Any] = []
    monkeypatch.setattr(profile_plots, "close", kept.append)
    yield kept
    for fig in kept:
        profile_plots.plt.close(fig)


def _draw(doc: Any, path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # before: "No artists with labels found to put in legend" on stderr
        profile_plots.plot_acceptance_vs_temperature(doc, path)
    assert path.stat().st_size > 0


def test_one_temperature_has_a_0_to_1_axis_and_error_bars(tmp_path: Path, figures: list[Any]) -> None:
    doc = _doc((0.0,), drafted=True)
    _draw(doc, tmp_path / "p.png")
    (ax,) = figures[0].axes
    lo, hi = ax.get_xlim()
    assert -0.05 <= lo < 0 and hi >= 1  # before: -0.04 .. 0.04 around the one temperature
    (bars,) = ax.containers  # the errorbar: its interval is the JSON's at the largest k
    (segments,) = bars.lines[2]
    (row,) = [r for r in doc.results if r.workload_class is None]
    ci = row.by_k[-1].ci95
    assert np.allclose(segments.get_segments()[0][:, 1], ci) and ci[0] < row.by_k[-1].acceptance_rate < ci[1]
    assert ax.get_legend() is not None


def test_nothing_drafted_draws_a_plot_that_says_so(tmp_path: Path, figures: list[Any]) -> None:
    doc = _doc((0.0, 1.0), drafted=False)
    _draw(doc, tmp_path / "p.svg")
    assert profile_plots.acceptance_series(doc) == (3, {})  # what --plot's note reads
    (ax,) = figures[0].axes
    assert ax.get_legend() is None
    assert [t.get_text() for t in ax.texts] == ["nothing was drafted at k=3: no acceptance rate to plot"]
    assert "nothing was drafted" in (tmp_path / "p.svg").read_text()
