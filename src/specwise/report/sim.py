"""Terminal views of a simulation sweep and of the analytic speedup."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from specwise.report.console import console


def render_sweep(doc: dict[str, Any]) -> None:
    out = console()
    ks = sorted({r["k"] for r in doc["results"]})
    title = f"{doc['target']} on {doc['tp']} x {doc['gpu']}, speculation: {doc['draft'] or doc['method']}"
    metric = doc["decision_metric"]
    label = {"e2e": "E2E latency (p50)", "tpot": "TPOT (p50)", "throughput": "output tokens/s", "goodput": "goodput"}
    table = Table(title=f"{title}\nspeedup of {label[metric]} vs no speculation", title_justify="left")
    key = f"speedup_{metric}"
    table.add_column("QPS", justify="right")
    table.add_column("k=0 TPOT ms", justify="right")
    for k in ks:
        if k != 0:
            table.add_column(f"k={k}", justify="right")
    if doc.get("schedule_results"):
        table.add_column("sched", justify="right")
    table.add_column("best", justify="right")
    base = {b["qps"]: b for b in doc["baseline"]["by_qps"]}
    for q, b in sorted(base.items()):
        cells = [f"{q:g}", f"{b['tpot_p50_s'] * 1e3:.1f}"]
        best = doc["best_k_by_qps"][f"{q:g}"]
        for k in ks:
            if k == 0:
                continue
            row = next(r for r in doc["results"] if r["qps"] == q and r["k"] == k)
            s = row[key]
            text = "-" if s is None else f"{s:.2f}"
            style = "green" if s and s > 1.0 else "red"
            cells.append(f"[bold {style}]{text}[/]" if k == best else f"[{style}]{text}[/]")
        for r in doc.get("schedule_results", []):
            if r["qps"] == q:
                cells.append(f"{r[key]:.2f}" if r[key] else "-")
        cells.append(str(best))
        table.add_row(*cells)
    out.print(table)
    cross = doc["crossover_qps"]
    if doc["never_pays"]:
        out.print("[red]speculation does not pay at any simulated rate[/red]")
    elif cross is None:
        out.print(f"speculation pays at every simulated rate up to {max(base):g} QPS")
    else:
        out.print(f"speculation pays below [bold]{cross:.2f} QPS[/bold] (crossover); above it, set k=0")
    for w in doc.get("warnings", []):
        out.print(f"[yellow]warning[/yellow]: {w}")


def render_speedup(doc: dict[str, Any]) -> None:
    console().print(
        f"alpha={doc['alpha']}, k={doc['k']}, c={doc['cost_ratio']}: expected tokens/step "
        f"{doc['expected_tokens_per_step']:.3f}, speedup {doc['speedup']:.3f}x at batch 1 (Leviathan et al. 2023)"
    )
