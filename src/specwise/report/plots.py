"""Plots of a simulation sweep (``simulate --plot DIR``): speedup vs QPS per k, and latency percentiles vs QPS
(no speculation vs the best k), each as PNG and SVG. All four files are rendered in memory first and written
all-or-nothing, so a full disk or a bad destination never leaves half a set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specwise.contracts.sweep import SweepResult
from specwise.fileio import write_files_atomic
from specwise.report.plotstyle import (
    BASELINE_COLOUR,
    close,
    k_colour,
    log_y_axis,
    mark_load,
    plt,
    png_bytes,
    qps_axis,
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
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k in doc.k_values:
        pts = [(r.qps, s) for r in doc.results if r.k == k and (s := r.speedup(metric)) is not None]
        if pts and k != 0:
            ax.plot(*zip(*pts, strict=True), marker="o", color=k_colour(k), label=f"k={k}")
    sched = [(r.qps, s) for r in doc.schedule_results if (s := r.speedup(metric))]
    if sched:
        ax.plot(*zip(*sched, strict=True), marker="s", linestyle="--", color="black", label="k schedule")
    ax.axhline(1.0, color="grey", linewidth=1, label="no speculation")
    if doc.crossover_qps:
        ax.axvline(doc.crossover_qps, color="red", linestyle=":", label=f"crossover {doc.crossover_qps:.2f} QPS")
    mark_load(ax, operating_qps)
    qps_axis(ax, doc.qps)
    ax.set_ylabel(f"{metric} p50 speedup vs no speculation (x)")
    ax.set_title(_title(doc), fontsize=9)
    ax.legend(fontsize=7, ncol=2, title="draft tokens per step", title_fontsize=7)
    ax.grid(True, alpha=0.3)
    return fig


def _latency(doc: SweepResult) -> Any:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.2))
    for label, best in (("no speculation", False), ("best k", True)):
        sel = [r for r in doc.results if r.k == (doc.best_k_by_qps.get(r.qps, 0) if best else 0)]
        colour = k_colour(max((r.k or 0 for r in sel), default=1) or 1) if best else BASELINE_COLOUR
        qs = [r.qps for r in sel]
        for pct, line in (("p50", "-"), ("p90", "--"), ("p99", ":")):
            ms = [getattr(r, f"tpot_{pct}_s") * 1e3 for r in sel]
            ax1.plot(qs, ms, line, marker=".", color=colour, label=f"{label} {pct}")
        ax2.plot(qs, [r.ttft_p50_s * 1e3 for r in sel], "-", marker="o", color=colour, label=f"{label} p50")
        ax2.plot(qs, [r.ttft_p99_s * 1e3 for r in sel], ":", marker="x", color=colour, label=f"{label} p99")
    ax1.set_ylabel("time per output token, TPOT (ms)")
    ax2.set_ylabel("time to first token, TTFT (ms)")
    log_y_axis(ax2)
    for ax in (ax1, ax2):
        qps_axis(ax, doc.qps)
        ax.legend(fontsize=6)
        ax.grid(True, alpha=0.3)
    fig.suptitle(_title(doc), fontsize=9)
    return fig
