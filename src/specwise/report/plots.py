"""Plots of a simulation sweep (``simulate --plot DIR``): speedup vs QPS per k, and latency percentiles vs QPS
(no speculation vs the best k), each as PNG and SVG. All four files are rendered in memory first and written
all-or-nothing, so a full disk or a bad destination never leaves half a set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specwise.contracts.sweep import SweepResult, SweepRow
from specwise.fileio import write_files_atomic
from specwise.report.overload import first_overloaded_load, speedup_overloaded
from specwise.report.plotstyle import (
    BASELINE_COLOUR,
    close,
    k_colour,
    legend_outside,
    log_y_axis,
    mark_load,
    mark_overload,
    plot_series,
    plt,
    png_bytes,
    predictor_words,
    qps_axis,
    speedup_band,
    style,
    svg_bytes,
)


def plot_sweep(doc: SweepResult, out_dir: Path, operating_qps: float | None = None) -> list[Path]:
    """Write ``speedup_vs_qps`` and ``latency_vs_qps`` (.png and .svg) into ``out_dir``; the paths written."""
    files: dict[Path, bytes] = {}
    with style():
        for stem, fig in (("speedup_vs_qps", _speedup(doc, operating_qps)), ("latency_vs_qps", _latency(doc))):
            files[out_dir / f"{stem}.png"] = png_bytes(fig)
            files[out_dir / f"{stem}.svg"] = svg_bytes(fig)
            close(fig)
    write_files_atomic(files)
    return list(files)


def _title(doc: SweepResult) -> str:
    return f"{doc.target} + {doc.draft or doc.method}"


def _speedup(doc: SweepResult, operating_qps: float | None) -> Any:
    metric = doc.decision_metric
    fig, ax = plt.subplots(figsize=(8.4, 4.2))
    hollow = False
    for k in doc.k_values:
        rows = [r for r in doc.results if r.k == k and r.speedup(metric) is not None]
        if rows and k != 0:
            hollow |= _speedups(ax, doc, rows, marker="o", color=k_colour(k), label=f"k={k}")
    sched = [r for r in doc.schedule_results if r.speedup(metric)]
    if sched:
        hollow |= _speedups(ax, doc, sched, marker="s", linestyle="--", color="black", label="k schedule")
    ax.axhline(1.0, color="grey", linewidth=1, label="no speculation")
    speedup_band(ax, doc)
    if doc.crossover_qps:
        ax.axvline(doc.crossover_qps, color="red", linestyle=":", label=f"crossover {doc.crossover_qps:.2f} QPS")
    mark_load(ax, operating_qps)
    qps_axis(ax, doc.qps)
    mark_overload(ax, first_overloaded_load(doc), hollow)
    ax.set_ylabel(f"{metric} p50 speedup vs no speculation (x)")
    ax.set_title(f"{_title(doc)}\n{predictor_words(doc)}", fontsize=9)
    legend_outside(ax, title="draft tokens per step", title_fontsize=8)
    ax.grid(True, alpha=0.3)
    return fig


def _speedups(ax: Any, doc: SweepResult, rows: list[SweepRow], **kw: Any) -> bool:
    """One speedup series, its overloaded points hollow (the baseline's or the row's own queue grows)."""
    xs = [r.qps for r in rows]
    ys = [r.speedup(doc.decision_metric) for r in rows]
    return plot_series(ax, xs, ys, [speedup_overloaded(doc, r.qps, r) for r in rows], **kw)


def _latency(doc: SweepResult) -> Any:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.2))
    hollow = False
    for label, best in (("no speculation", False), ("best k", True)):
        sel = [r for r in doc.results if r.k == (doc.best_k_by_qps.get(r.qps, 0) if best else 0)]
        colour = k_colour(max((r.k or 0 for r in sel), default=1) or 1) if best else BASELINE_COLOUR
        qs, over = [r.qps for r in sel], [r.overloaded for r in sel]  # a latency is overloaded when its own row is
        for pct, line in (("p50", "-"), ("p90", "--"), ("p99", ":")):
            ms = [getattr(r, f"tpot_{pct}_s") * 1e3 for r in sel]
            hollow |= plot_series(ax1, qs, ms, over, line, marker=".", color=colour, label=f"{label} {pct}")
        for pct, line, marker in (("p50", "-", "o"), ("p99", ":", "x")):
            ms = [getattr(r, f"ttft_{pct}_s") * 1e3 for r in sel]
            hollow |= plot_series(ax2, qs, ms, over, line, marker=marker, color=colour, label=f"{label} {pct}")
    ax1.set_ylabel("time per output token, TPOT (ms)")
    ax2.set_ylabel("time to first token, TTFT (ms)")
    log_y_axis(ax2)
    for ax in (ax1, ax2):
        qps_axis(ax, doc.qps)
        mark_overload(ax, first_overloaded_load(doc), hollow)
        ax.legend(fontsize=6)
        ax.grid(True, alpha=0.3)
    fig.suptitle(_title(doc), fontsize=9)
    return fig
