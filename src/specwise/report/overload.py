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


def speculation_only_rows(doc: SweepResult, qps: float) -> tuple[SweepRow, ...]:
    """The speculative rows (each k's, the schedule's) that keep up with ``qps`` where plain decoding does not --
    "only speculation keeps up", the rule of advise's measure_first verdict at the operating load
    (:func:`specwise.advisor.decision._overload_verdict`: the baseline overloaded, that k's row not). Their cells
    keep the mark (the speedup is against a growing queue); the words say the row itself keeps up."""
    if qps not in doc.overloaded_qps:
        return ()
    rows = [r for r in doc.results if r.qps == qps and r.k and not r.overloaded]
    return (*rows, *(r for r in doc.schedule_results if r.qps == qps and not r.overloaded))


def speculation_only_loads(doc: SweepResult) -> dict[float, str]:
    """Each load that only speculation keeps up with, and which k do, in words (``k >= 5``, ``k=2, 5``, ``every k``,
    ``the k schedule``)."""
    out = {}
    for q in doc.overloaded_qps:
        if rows := speculation_only_rows(doc, q):
            out[q] = _which(doc, q, rows)
    return out


def _which(doc: SweepResult, qps: float, rows: tuple[SweepRow, ...]) -> str:
    ks = sorted(int(r.k) for r in rows if r.k)
    simulated = sorted(int(r.k) for r in doc.results if r.qps == qps and r.k)
    if not ks:
        words = ""
    elif ks == simulated and len(ks) > 1:
        words = "every k"
    elif len(ks) > 1 and ks == [k for k in simulated if k >= ks[0]]:
        words = f"k >= {ks[0]}"
    else:
        words = f"k={', '.join(map(str, ks))}"
    schedule = any(r.k is None for r in rows)
    return " and ".join(w for w in (words, "the k schedule" if schedule else "") if w)


def overload_footnote(doc: SweepResult) -> str | None:
    """The footnote under a table with marked cells, in words (None when no cell is marked). A load only
    speculation keeps up with is said apart: its marked speedups are against plain decoding's growing queue, not
    the speculative row's."""
    marked = overloaded_loads(doc)
    if not marked:
        return None
    only = speculation_only_loads(doc)
    base = [q for q in marked if q in doc.overloaded_qps and q not in only]
    some_k = [q for q in marked if q not in doc.overloaded_qps]
    where = " and ".join(
        part
        for part in (
            f"at {', '.join(f'{q:g}' for q in base)} QPS" if base else "",
            f"for some k at {', '.join(f'{q:g}' for q in some_k)} QPS" if some_k else "",
        )
        if part
    )
    if not only:
        return (
            f"{OVERLOAD_MARK} overloaded {where}: requests arrive faster than they are served and the queue grows "
            "without bound; those latencies and speedups depend on num_requests (not a steady state)"
        )
    if len(only) == 1:
        ((q, ks),) = only.items()
        spec = f"at {q:g} QPS plain decoding cannot keep up but {ks} can"
    else:
        loads = " and ".join(f"{q:g} QPS ({ks})" for q, ks in only.items())
        spec = f"at {loads} plain decoding cannot keep up but those k can"
    if not where:
        return (
            f"{OVERLOAD_MARK} {spec}: requests arrive faster than plain decoding serves them and its queue grows "
            "without bound, so a speedup there is against a growing queue and depends on num_requests (not a steady "
            "state)"
        )
    return (
        f"{OVERLOAD_MARK} overloaded {where}: requests arrive faster than they are served and the queue grows without "
        f"bound; those latencies and speedups depend on num_requests (not a steady state); {spec}: a speedup there is "
        "against plain decoding's growing queue"
    )


def best_overloaded(doc: SweepResult, qps: float) -> bool:
    """The best speedup at ``qps`` (``best_speedup_by_qps``: the top k's, paying or not) is overloaded."""
    k = doc.top_k(qps)
    return speedup_overloaded(doc, qps, doc.row(qps, k) if k else None)
