"""One colour per candidate across every plot of the advise report (issue 17): the candidate ranked i has the
same line colour in the per-position plot and the acceptance-vs-temperature plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from matplotlib import colors

from specwise.contracts.advice import Advice
from specwise.report import advise_plots
from specwise.report.plotstyle import series_colour

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "examples"


def _lines(monkeypatch: pytest.MonkeyPatch, draw: Any) -> dict[str, str]:
    """label -> colour of every line the plot function draws."""
    import matplotlib.pyplot as plt

    seen: dict[str, str] = {}
    real = plt.subplots

    def spy(*args: Any, **kwargs: Any) -> Any:
        fig, ax = real(*args, **kwargs)
        seen["__ax__"] = ax
        return fig, ax

    monkeypatch.setattr(plt, "subplots", spy)
    draw()
    ax = seen.pop("__ax__")
    return {line.get_label(): colors.to_hex(line.get_color()) for line in ax.get_lines()}


def test_a_candidate_keeps_its_colour_across_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = Advice.from_json(json.loads((GOLDEN / "advise-summarize-low-qps.json").read_text()))
    ranked = doc.ranked
    names = [c.candidate for c in ranked]
    per_pos = _lines(monkeypatch, lambda: advise_plots.per_position(ranked))
    temps = _lines(monkeypatch, lambda: advise_plots.acceptance_vs_temperature(doc.acceptance_vs_temperature, names))
    assert len(names) == 2 and temps and per_pos
    for i, name in enumerate(names):
        want = colors.to_hex(series_colour(i))
        assert {c for label, c in per_pos.items() if label.startswith(name + " /")} == {want}
        assert {c for label, c in temps.items() if label.startswith(name + " /")} == {want}
