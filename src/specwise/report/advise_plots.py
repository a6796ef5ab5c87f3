"""Plots for the advise report, returned as PNG bytes (embedded in the HTML: nothing to fetch at view time)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specwise.contracts.advice import CandidateAdvice, TemperaturePoint
from specwise.report.overload import first_overloaded_load, speedup_overloaded
from specwise.report.plotstyle import (
    BASELINE_COLOUR,
    close,
    k_colour,
    legend_outside,
    mark_load,
    mark_overload,
    plot_series,
    plt,
    png_bytes,
    predictor_words,
    qps_axis,
    series_colour,
    speedup_band,
    styled,
)


def _png(fig: Any) -> bytes:
    data = png_bytes(fig, dpi=110)
    close(fig)
    return data


@styled
def speedup_vs_qps(cand: CandidateAdvice, operating_qps: float | None = None) -> bytes:
    sim = cand.sim
    assert sim is not None
    metric = sim.decision_metric
    fig, ax = plt.subplots(figsize=(8.4, 3.8))
    hollow = False
    for k in [k for k in sim.k_values if k != 0]:
        rows = [r for r in sim.results if r.k == k and r.speedup(metric) is not None]
        if rows:
            qs, ys = [r.qps for r in rows], [r.speedup(metric) for r in rows]
            over = [speedup_overloaded(sim, r.qps, r) for r in rows]
            hollow |= plot_series(ax, qs, ys, over, marker="o", color=k_colour(k), label=f"k={k}")
    sched = [r for r in cand.schedule_results if r.speedup_e2e]
    if sched:  # overloaded where the baseline is, or where the schedule's own capacity is below the load (a bound)
        qs, ys = [r.qps for r in sched], [r.speedup_e2e for r in sched]
        over = [speedup_overloaded(sim, r.qps) or r.overloaded for r in sched]
        hollow |= plot_series(ax, qs, ys, over, "k--s", label="k schedule")
    ax.axhline(1.0, color="grey", linewidth=1, label="no speculation")
    speedup_band(ax, sim)
    mark_load(ax, operating_qps)
    qps_axis(ax, sim.qps)
    mark_overload(ax, first_overloaded_load(sim), hollow)
    ax.set_ylabel(f"{metric} p50 speedup vs no speculation (x)")
    ax.set_title(f"{cand.candidate}\n{predictor_words(sim)}", fontsize=9)
    ax.grid(alpha=0.3)
    legend_outside(ax, title="draft tokens per step", title_fontsize=8)
    return _png(fig)


@styled
def latency_percentiles(cand: CandidateAdvice, operating_qps: float | None = None) -> bytes:
    sim = cand.sim
    assert sim is not None
    k = cand.k or max(sim.best_k_by_qps.values(), default=0)
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.6))
    fig.suptitle(f"{cand.candidate}, k={k} vs no speculation", fontsize=9)
    rows = [r for r in sim.results if r.k == k]
    bq, over = [r.qps for r in rows], [r.overloaded for r in rows]  # a latency is overloaded when its own row is
    for ax, metric in zip(axes, ("tpot", "e2e"), strict=True):
        hollow = False
        for pct, style in (("p50", "-"), ("p99", ":")):
            col = f"{metric}_{pct}_s"
            ms = [v * 1e3 if (v := getattr(r, col, None)) is not None else None for r in rows]
            hollow |= plot_series(ax, bq, ms, over, style + "o", color=k_colour(k), label=f"k={k} {pct}")
            key = f"{metric}_p50_s"
            if pct == "p50":
                hollow |= plot_series(
                    ax,
                    [b.qps for b in sim.baseline],
                    [getattr(b, key) * 1e3 for b in sim.baseline],
                    [b.overloaded for b in sim.baseline],
                    "-o",
                    color=BASELINE_COLOUR,
                    label="no spec p50",
                )
        mark_load(ax, operating_qps)
        qps_axis(ax, sim.qps)
        mark_overload(ax, first_overloaded_load(sim), hollow)
        ax.set_ylabel(f"{metric.upper()} (ms)")
        ax.set_title("time per output token" if metric == "tpot" else "request latency (end to end)", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    return _png(fig)


@styled
def per_position(candidates: Sequence[CandidateAdvice]) -> bytes:
    fig, ax = plt.subplots(figsize=(8.4, 3.6))
    lines = ("-", "--", ":", "-.")
    for i, c in enumerate(candidates):
        for j, e in enumerate(c.evidence):
            ax.plot(
                range(1, len(e.per_position) + 1),
                e.per_position,
                lines[j % len(lines)],
                marker="o",
                color=series_colour(i),
                label=f"{c.candidate} / {e.workload} ({e.kind})",
            )
    ax.set_title("acceptance per draft position (vLLM's per-position rate)", fontsize=10)
    ax.set_xlabel("draft position")
    ax.set_ylabel("acceptance (vLLM per-position rate)")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    legend_outside(ax)
    return _png(fig)


@styled
def acceptance_vs_temperature(points: Sequence[TemperaturePoint], candidates: Sequence[str] = ()) -> bytes:
    """First-position acceptance vs temperature: from profiles when given, else from the priors used. A series
    of a candidate (named ``"<candidate> / ..."``) takes that candidate's colour (its rank in ``candidates``), as
    in every other plot of the report; profiled series take the colours after them."""
    fig, ax = plt.subplots(figsize=(8.4, 3.6))
    series: dict[str, list[tuple[float, float]]] = {}
    for p in points:
        series.setdefault(p.series, []).append((p.temperature, p.acceptance))
    extra = len(candidates)
    for name, pts in sorted(series.items()):
        pts.sort()
        rank = next((i for i, c in enumerate(candidates) if name.startswith(c + " / ")), None)
        if rank is None:
            rank, extra = extra, extra + 1
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=series_colour(rank), label=name)
    ax.set_title("first-position acceptance vs temperature", fontsize=10)
    ax.set_xlabel("temperature")
    ax.set_ylabel("first-position acceptance")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    legend_outside(ax)
    return _png(fig)


@styled
def memory_bars(candidates: Sequence[CandidateAdvice]) -> bytes:
    fig, ax = plt.subplots(figsize=(8.4, 0.9 + 0.55 * len(candidates)))
    gib = 2**30
    palette = ("#4c72b0", "#8172b3", "#c4c4c4", "#55a868")  # target, draft, reserve, KV: no red (red = budget)
    for i, c in enumerate(candidates):
        g = c.memory.per_gpu
        parts = [
            ("target weights", g.target_weight_bytes),
            ("draft weights", g.draft_weight_bytes),
            ("reserve", g.reserve_bytes),
            ("KV cache", max(0, g.kv_budget_bytes)),
        ]
        left = 0.0
        for colour, (label, b) in zip(palette, parts, strict=True):
            ax.barh(i, b / gib, left=left, color=colour, label=label if i == 0 else None)
            left += b / gib
        budget = "usable budget" if i == 0 else None
        ax.plot([g.budget_bytes / gib] * 2, [i - 0.45, i + 0.45], color="red", linewidth=2.5, label=budget)
    ax.set_yticks(range(len(candidates)), [c.candidate for c in candidates], fontsize=8)
    ax.set_xlabel("GiB per GPU")
    legend_outside(ax)
    return _png(fig)
