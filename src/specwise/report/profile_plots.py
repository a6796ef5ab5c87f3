"""The acceptance-vs-temperature plot of a profile (``profile --plot``; matplotlib: ``specwise[report]``)."""

from __future__ import annotations

from pathlib import Path

from specwise.contracts.profile import ProfileDoc
from specwise.fileio import write_files_atomic
from specwise.report.plotstyle import close, plt, png_bytes, styled, svg_bytes
from specwise.report.profile import quant_label


@styled
def plot_acceptance_vs_temperature(doc: ProfileDoc, path: Path, k: int | None = None) -> Path:
    """Acceptance rate at ``k`` (default: the largest profiled) vs temperature, one line per drafting mode and
    quantisation; all prompts."""
    rows = [r for r in doc.results if r.workload_class is None]
    k = k or max(row.k for r in rows for row in r.by_k)
    series: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        quant = quant_label(r)
        name = r.drafting + (f" ({quant})" if quant else "")
        for row in r.by_k:
            if row.k == k and row.acceptance_rate is not None:
                series.setdefault(name, []).append((r.temperature, row.acceptance_rate))
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xlabel("temperature")
    ax.set_ylabel(f"acceptance rate (k={k})")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{doc.draft or doc.method} -> {doc.target}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    data = svg_bytes(fig) if path.suffix.lower() == ".svg" else png_bytes(fig)
    close(fig)
    write_files_atomic({path: data})
    return path
