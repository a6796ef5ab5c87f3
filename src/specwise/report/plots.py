"""Plots of a simulation sweep (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from specwise.contracts.sweep import SweepResult


def plot_sweep(doc: SweepResult, out_dir: Path) -> list[Path]:
    """Speedup vs QPS per k, and latency percentiles vs QPS (baseline vs best k); PNG and SVG."""
    out_dir.mkdir(parents=True, exist_ok=True)
    metric = doc.decision_metric
    written: list[Path] = []

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k in doc.k_values:
        pts = [(r.qps, r.speedup(metric)) for r in doc.results if r.k == k and r.speedup(metric) is not None]
        if pts and k != 0:
            ax.plot(*zip(*pts, strict=True), marker="o", label=f"k={k}")
    sched = [(r.qps, r.speedup(metric)) for r in doc.schedule_results if r.speedup(metric)]
    if sched:
        ax.plot(*zip(*sched, strict=True), marker="s", linestyle="--", color="black", label="k schedule")
    ax.axhline(1.0, color="grey", linewidth=1)
    if doc.crossover_qps:
        ax.axvline(doc.crossover_qps, color="red", linestyle=":", label=f"crossover {doc.crossover_qps:.2f} QPS")
    ax.set_xscale("log")
    ax.set_xlabel("request rate (QPS)")
    ax.set_ylabel(f"{metric} speedup vs no speculation")
    ax.set_title(f"{doc.target} + {doc.draft or doc.method}", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, alpha=0.3)
    written += _save(fig, out_dir / "speedup_vs_qps")

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.2))
    for label, best in (("no speculation", False), ("best k", True)):
        sel = [r for r in doc.results if r.k == (doc.best_k_by_qps.get(r.qps, 0) if best else 0)]
        qs = [r.qps for r in sel]
        for pct, style in (("p50", "-"), ("p90", "--"), ("p99", ":")):
            ax1.plot(
                qs, [getattr(r, f"tpot_{pct}_s") * 1e3 for r in sel], style, marker=".", label=f"{label} TPOT {pct}"
            )
        ax2.plot(qs, [r.ttft_p50_s for r in sel], marker="o", label=f"{label} TTFT p50")
        ax2.plot(qs, [r.ttft_p99_s for r in sel], marker="x", linestyle="--", label=f"{label} TTFT p99")
    ax1.set_xscale("log")
    ax1.set_xlabel("QPS")
    ax1.set_ylabel("TPOT (ms)")
    ax1.legend(fontsize=6)
    ax1.grid(True, alpha=0.3)
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("QPS")
    ax2.set_ylabel("TTFT (s)")
    ax2.legend(fontsize=6)
    ax2.grid(True, alpha=0.3)
    fig.tight_layout()
    written += _save(fig, out_dir / "latency_vs_qps")
    return written


def _save(fig: Any, stem: Path) -> list[Path]:
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    for p in paths:
        fig.savefig(p, dpi=120)
    plt.close(fig)
    return paths
