"""The acceptance-vs-temperature plot of a profile (``profile --plot``; matplotlib: ``specwise[report]``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specwise.contracts.profile import ProfileDoc
from specwise.fileio import write_files_atomic
from specwise.report.plotstyle import close, plt, png_bytes, styled, svg_bytes
from specwise.report.profile import quant_label


@dataclass(frozen=True)
class AcceptancePoint:
    temperature: float
    rate: float
    ci95: tuple[float | None, float | None]


def acceptance_series(doc: ProfileDoc, k: int | None = None) -> tuple[int, dict[str, list[AcceptancePoint]]]:
    """(k, the points per drafting mode and quantisation at that k over all prompts, sorted by temperature). ``k``
    defaults to the largest profiled. A result where nothing was drafted at k has no point; no series at all: the
    profile drafted nothing at k (no n-gram match, say)."""
    rows = [r for r in doc.results if r.workload_class is None]
    k = k or max(row.k for r in rows for row in r.by_k)
    series: dict[str, list[AcceptancePoint]] = {}
    for r in rows:
        quant = quant_label(r)
        name = r.drafting + (f" ({quant})" if quant else "")
        for row in r.by_k:
            if row.k == k and row.acceptance_rate is not None:
                series.setdefault(name, []).append(AcceptancePoint(r.temperature, row.acceptance_rate, row.ci95))
    return k, {name: sorted(pts, key=lambda p: p.temperature) for name, pts in sorted(series.items())}


def _error_bars(pts: list[AcceptancePoint]) -> list[list[float]]:
    """Below/above each rate to its 95% interval (0 where the interval is unknown: one prompt)."""
    lo = [p.rate - p.ci95[0] if p.ci95[0] is not None else 0.0 for p in pts]
    hi = [p.ci95[1] - p.rate if p.ci95[1] is not None else 0.0 for p in pts]
    return [[max(0.0, x) for x in lo], [max(0.0, x) for x in hi]]


@styled
def plot_acceptance_vs_temperature(doc: ProfileDoc, path: Path, k: int | None = None) -> Path:
    """Acceptance rate at ``k`` (default: the largest profiled) vs temperature, with its 95% interval over prompts,
    one line per drafting mode and quantisation; all prompts. A profile that drafted nothing at k is drawn as a
    plot that says so (there is no rate to show)."""
    k, series = acceptance_series(doc, k)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, pts in series.items():
        xs, ys = [p.temperature for p in pts], [p.rate for p in pts]
        ax.errorbar(xs, ys, yerr=_error_bars(pts), marker="o", capsize=3, label=name)
    if not series:
        ax.text(0.5, 0.5, f"nothing was drafted at k={k}: no acceptance rate to plot", ha="center", va="center",
                transform=ax.transAxes)  # fmt: skip
    # Temperatures are >= 0: the axis starts at 0 and spans at least 0..1, so one temperature is not a sliver
    # around itself (a small margin keeps a point at 0 whole).
    top = max([1.0, *(r.temperature for r in doc.results)])
    ax.set_xlim(-0.03 * top, 1.03 * top)
    ax.set_xlabel("temperature")
    ax.set_ylabel(f"acceptance rate (k={k})")
    ax.set_ylim(0, 1.02)
    bars = "\nbars: 95% interval over prompts" if series else ""
    ax.set_title(f"{doc.draft or doc.method} -> {doc.target}{bars}", fontsize=9)
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=8)
    data = svg_bytes(fig) if path.suffix.lower() == ".svg" else png_bytes(fig)
    close(fig)
    write_files_atomic({path: data})
    return path
