"""Terminal tables and the acceptance-vs-temperature plot of a profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from rich.table import Table

from specwise.report.console import console


def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def render_profile(doc: dict[str, Any]) -> None:
    out = console()
    who = doc["draft"] or doc["method"]
    for r in doc["results"]:
        quant = ",".join(f"{k}={v}" for k, v in r["quantization"].items()) or "none"
        cls = r["class"] or "all"
        table = Table(
            title=f"{who} -> {doc['target']}: T={r['temperature']:g}, {r['drafting']} drafting, quant {quant}, "
            f"class {cls} ({r['prompts']} prompts); alpha {_f(r['alpha_mean'])}",
            title_justify="left",
        )
        for col in ("k", "acceptance rate", "95% CI", "AL", "per-position acceptance"):
            table.add_column(col, justify="right" if col != "per-position acceptance" else "left")
        for row in r["by_k"]:
            lo, hi = row["ci95"]
            table.add_row(
                str(row["k"]),
                _f(row["acceptance_rate"]),
                f"{_f(lo)}-{_f(hi)}",
                _f(row["mean_acceptance_length"], 2),
                " ".join(_f(x, 2) for x in row["per_position_acceptance"]),
            )
        out.print(table)
    if doc.get("verification"):
        table = Table(title="speculative sampling loop vs prediction", title_justify="left")
        cols = (
            "T",
            "drafting",
            "k",
            "paths",
            "measured",
            "95% CI",
            "paired pred",
            "diff",
            "agrees",
            "profile pred",
            "CPU speedup",
        )
        for col in cols:
            table.add_column(col, justify="right")
        for v in doc["verification"]:
            lo, hi = v["measured_ci95"]
            table.add_row(
                f"{v['temperature']:g}",
                v["drafting"],
                str(v["k"]),
                str(v.get("paths_per_prompt", 1)),
                _f(v["measured_acceptance_rate"]),
                f"{_f(lo)}-{_f(hi)}",
                _f(v["paired_predicted_acceptance_rate"]),
                _f(v["paired_difference"]),
                "yes" if v["agrees"] else "NO",
                _f(v["predicted_acceptance_rate"]),
                _f(v["measured_speedup"], 2),
            )
        out.print(table)
        out.print(
            "paired pred: the profiler's estimator on the loop's own output paths (the method check); "
            "profile pred: the profile's number from its own sampled continuations (at T > 0 it also carries "
            "path-sampling noise, heavy-tailed: use --verify-paths N at T > 0); paths: loop runs per prompt"
        )
    timing = doc.get("timing_s", {})
    if timing:
        out.print("time (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timing.items()))


def plot_acceptance_vs_temperature(doc: dict[str, Any], path: Path, k: int | None = None) -> Path:
    """Acceptance rate at ``k`` (default: the largest profiled) vs temperature, one line per drafting mode and
    quantisation; all prompts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [r for r in doc["results"] if r["class"] is None]
    k = k or max(row["k"] for r in rows for row in r["by_k"])
    series: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        quant = ",".join(f"{a}={b}" for a, b in r["quantization"].items())
        name = r["drafting"] + (f" ({quant})" if quant else "")
        for row in r["by_k"]:
            if row["k"] == k and row["acceptance_rate"] is not None:
                series.setdefault(name, []).append((r["temperature"], row["acceptance_rate"]))
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xlabel("temperature")
    ax.set_ylabel(f"acceptance rate (k={k})")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{doc['draft'] or doc['method']} -> {doc['target']}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
