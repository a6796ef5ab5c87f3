"""Which cells of a sweep are overloaded, and how every view says so: the terminal table, the HTML report and the
plots read the same fields of the sweep document (``overloaded`` on each baseline point and row: the load is above
that configuration's capacity, :mod:`specwise.sim.saturation`) -- nothing is recomputed here.

A speedup cell is overloaded when either side of the ratio is: the baseline at that load or the row itself (a
speedup then compares a growing queue, not a steady state). A latency is overloaded when its own row is.
"""

from __future__ import annotations

from specwise.contracts.sweep import SweepResult, SweepRow

OVERLOAD_MARK = "*"
# The plots' legend entry for the overloaded region and the hollow markers in it.
OVERLOAD_LABEL = "overloaded: queue grows without bound"


def mark(overloaded: bool) -> str:
    """The mark appended to an overloaded cell (nothing for one the deployment keeps up with)."""
    return OVERLOAD_MARK if overloaded else ""


def speedup_overloaded(doc: SweepResult, qps: float, row: SweepRow | None = None) -> bool:
    """A speedup at ``qps`` (of ``row``, when given) compares at least one growing queue."""
    base = doc.baseline_at(qps)
    return (base is not None and base.overloaded) or (row is not None and row.overloaded)


def overloaded_loads(doc: SweepResult) -> tuple[float, ...]:
    """The loads the footnote names: every load with a marked cell -- those the baseline cannot keep up with and
    those where some k cannot."""
    rows = {r.qps for r in (*doc.results, *doc.schedule_results) if r.overloaded}
    return tuple(sorted(set(doc.overloaded_qps) | rows))


def first_overloaded_load(doc: SweepResult) -> float | None:
    """The lowest load without speculation above the deployment's capacity (None: it keeps up with every one)."""
    return min(doc.overloaded_qps, default=None)


def overload_footnote(doc: SweepResult) -> str | None:
    """The footnote under a table with marked cells, in words (None when no cell is marked)."""
    marked = overloaded_loads(doc)
    if not marked:
        return None
    base = [q for q in marked if q in doc.overloaded_qps]
    some_k = [q for q in marked if q not in doc.overloaded_qps]
    where = " and ".join(
        part
        for part in (
            f"at {', '.join(f'{q:g}' for q in base)} QPS" if base else "",
            f"for some k at {', '.join(f'{q:g}' for q in some_k)} QPS" if some_k else "",
        )
        if part
    )
    return (
        f"{OVERLOAD_MARK} overloaded {where}: requests arrive faster than they are served and the queue grows without "
        "bound; those latencies and speedups depend on num_requests (not a steady state)"
    )


def best_overloaded(doc: SweepResult, qps: float) -> bool:
    """The best speedup at ``qps`` (``best_speedup_by_qps``: the top k's, paying or not) is overloaded."""
    k = doc.top_k(qps)
    return speedup_overloaded(doc, qps, doc.row(qps, k) if k else None)
