"""Plots for the validation report, as PNG bytes: every predicted speedup against its published one, and each
series' published and predicted speedup against its load -- where the curves cross 1 is what the advice turns on."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specwise.evidence.records import EvidenceRecord
from specwise.report.plotstyle import BASELINE_COLOUR, close, log_y_axis, plt, png_bytes, qps_axis, styled
from specwise.validate.predict import Prediction

FIT_COLOUR = "#9e9e9e"
HELD_COLOUR = "#d62728"
PUBLISHED_COLOUR = "#1f77b4"
PREDICTED_COLOUR = "#222222"
_COLUMNS = 5  # small multiples per row
_TITLE_CHARS = 30  # a title line's longest name (a dataset's description is cut)


def _png(fig: Any) -> bytes:
    data = png_bytes(fig, dpi=100)
    close(fig)
    return data


def _scored(p: Prediction) -> bool:
    s, pub = p.predicted_speedup, p.record.speedup
    return p.status == "predicted" and s is not None and pub is not None and s > 0 and pub > 0 and math.isfinite(s)


@styled
def predicted_vs_published(preds: Sequence[Prediction], fit_families: Sequence[str]) -> bytes:
    """Each predicted speculative record, predicted against published speedup (log-log): fit records grey, held-back
    red; on the diagonal a prediction is exact, between the dashed lines within +-25%; the lower-right square holds
    the published slowdowns predicted as speedups."""
    fig, ax = plt.subplots(figsize=(6.4, 6.0))
    done = [p for p in preds if _scored(p)]
    for role, colour, size in (("fit", FIT_COLOUR, 12), ("held-back", HELD_COLOUR, 22)):
        chosen = [p for p in done if (p.record.family in fit_families) == (role == "fit")]
        if chosen:
            xs = [p.record.speedup or 0.0 for p in chosen]
            ys = [p.predicted_speedup or 0.0 for p in chosen]
            ax.scatter(xs, ys, s=size, color=colour, alpha=0.7, label=f"{role} ({len(chosen)})", zorder=3)
    values = [0.9, 1.1, *(v for p in done for v in (p.record.speedup or 1.0, p.predicted_speedup or 1.0))]
    lo, hi = min(values) / 1.1, max(values) * 1.1
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label="predicted = published")
    for f, label in ((1.25, "within +-25%"), (0.75, None)):
        ax.plot([lo, hi], [lo * f, hi * f], color="black", linewidth=0.8, linestyle="--", label=label)
    ax.axhline(1.0, color=BASELINE_COLOUR, linewidth=0.8)
    ax.axvline(1.0, color=BASELINE_COLOUR, linewidth=0.8)
    ax.fill_between(
        [lo, 1.0], 1.0, hi, color=HELD_COLOUR, alpha=0.06, linewidth=0, label="published slowdown, predicted >= 1"
    )
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    qps_axis(ax, (), "published speedup (x)")
    log_y_axis(ax)
    ax.set_ylabel("predicted speedup (x)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return _png(fig)


@dataclass(frozen=True)
class Series:
    """One experiment at several loads: its records' published and predicted speedups, load ascending."""

    title: str
    load_kind: str
    members: tuple[Prediction, ...]


def series_of(preds: Sequence[Prediction], min_loads: int = 3) -> list[Series]:
    """The speculative series with a published speedup at ``min_loads`` loads or more (predicted or anchored), in
    the order their first record comes."""
    groups: dict[tuple[Any, ...], list[Prediction]] = {}
    for p in preds:
        if p.status in ("predicted", "anchor") and p.record.speedup is not None and p.predicted_speedup is not None:
            groups.setdefault(p.record.series, []).append(p)
    out = []
    for members in groups.values():
        if len({m.record.load.value for m in members}) >= min_loads:
            members.sort(key=lambda m: m.record.load.value)
            out.append(Series(_title(members[0].record), members[0].record.load.kind, tuple(members)))
    return out


def _thinned(loads: Sequence[float], apart: float = 1.3) -> list[float]:
    """Tick loads at least ``apart`` times the previous one (on a small log axis, 48, 56 and 64 would overlap)."""
    ticks: list[float] = []
    for x in sorted(set(loads)):
        if x > 0 and (not ticks or x >= ticks[-1] * apart):
            ticks.append(x)
    return ticks


def _title(r: EvidenceRecord) -> str:
    k = f" k={r.k}" if r.k is not None else ""
    dataset = r.dataset if len(r.dataset) <= _TITLE_CHARS else r.dataset[: _TITLE_CHARS - 3] + "..."
    served = f"\n{r.served_as}" if r.served_as else ""  # two series apart only by their weights read apart
    return f"{r.target.rsplit('/', 1)[-1][:_TITLE_CHARS]}\n{r.method}{k}, {dataset}\n{r.engine} {r.tp}x{r.gpu}{served}"


@styled
def series_grid(series: Sequence[Series]) -> bytes:
    """Small multiples, one per series: published speedup (blue dots; an anchor, whose acceptance was set from it,
    hollow) and predicted (black line) against the load, with no speculation at 1 (dotted)."""
    rows = max(1, math.ceil(len(series) / _COLUMNS))
    cols = min(_COLUMNS, max(1, len(series)))
    fig, axes = plt.subplots(rows, cols, figsize=(2.8 * cols, 2.5 * rows), squeeze=False)
    for ax in axes.flat[len(series) :]:
        ax.set_visible(False)
    for i, (ax, s) in enumerate(zip(axes.flat, series, strict=False)):
        loads = [m.record.load.value for m in s.members]
        predicted = [m.predicted_speedup for m in s.members]
        ax.plot(loads, predicted, color=PREDICTED_COLOUR, linewidth=1.2, label="predicted")
        for anchor in (False, True):
            chosen = [m for m in s.members if (m.status == "anchor") == anchor]
            if chosen:
                ax.plot(
                    [m.record.load.value for m in chosen],
                    [m.record.speedup for m in chosen],
                    linestyle="none",
                    marker="o",
                    markersize=4,
                    markerfacecolor="none" if anchor else PUBLISHED_COLOUR,
                    markeredgecolor=PUBLISHED_COLOUR,
                    label="published (anchor)" if anchor else "published",
                )
        ax.axhline(1.0, color=BASELINE_COLOUR, linewidth=0.8, linestyle=":")
        qps_axis(ax, _thinned(loads), s.load_kind)
        ax.tick_params(labelsize=6)
        ax.xaxis.label.set_size(7)
        if i % _COLUMNS == 0:
            ax.set_ylabel("speedup (x)", fontsize=7)
        if i == 0:
            ax.legend(fontsize=6, loc="best")
        ax.set_title(s.title, fontsize=7)
        ax.grid(alpha=0.3)
    return _png(fig)
