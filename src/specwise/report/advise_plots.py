"""Plots for the advise report, returned as PNG bytes (embedded in the HTML: nothing to fetch at view time)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from specwise.contracts.advice import CandidateAdvice, TemperaturePoint


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def speedup_vs_qps(cand: CandidateAdvice) -> bytes:
    sim = cand.sim
    assert sim is not None
    metric = sim.decision_metric
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for k in [k for k in sim.k_values if k != 0]:
        pts = [(r.qps, s) for r in sim.results if r.k == k and (s := r.speedup(metric)) is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"k={k}")
    sched = [(r.qps, r.speedup_e2e) for r in cand.schedule_results if r.speedup_e2e]
    if sched:
        ax.plot([p[0] for p in sched], [p[1] for p in sched], "k--s", label="k schedule")
    ax.axhline(1.0, color="grey", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("QPS")
    ax.set_ylabel(f"{metric} p50 speedup")
    ax.set_title(cand.candidate, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return _png(fig)


def latency_percentiles(cand: CandidateAdvice) -> bytes:
    sim = cand.sim
    assert sim is not None
    k = cand.k or max(sim.best_k_by_qps.values(), default=0)
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
    for ax, metric in zip(axes, ("tpot", "e2e"), strict=True):
        rows = [r for r in sim.results if r.k == k]
        for pct, style in (("p50", "-"), ("p99", ":")):
            col = f"{metric}_{pct}_s"
            bq = [r.qps for r in rows]
            ax.plot(bq, [getattr(r, col, None) for r in rows], style + "o", color="C1", label=f"k={k} {pct}")
            key = f"{metric}_p50_s"
            if pct == "p50":
                ax.plot(
                    [b.qps for b in sim.baseline],
                    [getattr(b, key) for b in sim.baseline],
                    "-o",
                    color="C0",
                    label="no spec p50",
                )
        ax.set_xscale("log")
        ax.set_xlabel("QPS")
        ax.set_ylabel(f"{metric.upper()} (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _png(fig)


def per_position(candidates: Sequence[CandidateAdvice]) -> bytes:
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for c in candidates:
        for e in c.evidence:
            ax.plot(
                range(1, len(e.per_position) + 1),
                e.per_position,
                marker="o",
                label=f"{c.candidate} / {e.workload} ({e.kind})",
            )
    ax.set_xlabel("draft position")
    ax.set_ylabel("acceptance (vLLM per-position rate)")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)
    return _png(fig)


def acceptance_vs_temperature(points: Sequence[TemperaturePoint]) -> bytes:
    """First-position acceptance vs temperature: from profiles when given, else from the priors used."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    series: dict[str, list[tuple[float, float]]] = {}
    for p in points:
        series.setdefault(p.series, []).append((p.temperature, p.acceptance))
    for name, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xlabel("temperature")
    ax.set_ylabel("first-position acceptance")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)
    return _png(fig)


def memory_bars(candidates: Sequence[CandidateAdvice]) -> bytes:
    fig, ax = plt.subplots(figsize=(6.4, 0.6 + 0.55 * len(candidates)))
    gib = 2**30
    for i, c in enumerate(candidates):
        g = c.memory["per_gpu"]
        parts = [
            ("target weights", g["target_weight_bytes"]),
            ("draft weights", g["draft_weight_bytes"]),
            ("reserve", g["reserve_bytes"]),
            ("KV cache", max(0, g["kv_budget_bytes"])),
        ]
        left = 0.0
        for j, (label, b) in enumerate(parts):
            ax.barh(i, b / gib, left=left, color=f"C{j}", label=label if i == 0 else None)
            left += b / gib
        ax.plot([g["budget_bytes"] / gib] * 2, [i - 0.4, i + 0.4], color="red", linewidth=2)
    ax.set_yticks(range(len(candidates)), [c.candidate for c in candidates], fontsize=7)
    ax.set_xlabel("GiB per GPU (red: budget)")
    ax.legend(fontsize=7, loc="lower right")
    return _png(fig)
