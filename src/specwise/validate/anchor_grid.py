"""A fixed grid for the one number a series' anchor is solved for, so that predictions move continuously with the
step-time coefficients.

A replay's speedup is a staircase in its acceptance inputs: its uniform draws are fixed (common random numbers), so
one accepted token more or less moves it by one step (0.05-1.8% on the evidence set's series), at edges that do not
move with the coefficients. A root solved on that staircase sits on an edge, and jumps from edge to edge as the
coefficients change: a least-squares fit of those coefficients then sees a discontinuous objective (its finite
differences straddle jumps). Here the speedup is evaluated at fixed grid nodes instead, each a continuous function of
the coefficients, and the anchor's value is the root of their linear interpolant; downstream records run at the two
nodes around it and blend their speedups with the same weight, so they are continuous too, and the anchor record
reproduces its published speedup exactly. Interpolation bias: at most h^2/8 * |S''| / S over a cell of width h (about
0.2% at 16 cells), mostly shared by the anchor and the records it is carried to.
"""

from __future__ import annotations

from collections.abc import Callable

ANCHOR_CELLS = 16  # cells of the i.i.d. acceptance (or a lookup's match rate) between 0 and its upper end
FGM_CELLS = 32  # cells of a lookup's per-match first-token acceptance over [0, 1]


def cell(x: float, lo: float, hi: float, cells: int) -> tuple[int, float]:
    """(i, w): ``x`` (clamped to [lo, hi]) lies in cell i of ``cells`` equal cells, a fraction w of the way in."""
    if not hi > lo or cells < 1:
        raise ValueError(f"cell: need lo < hi and cells >= 1, got [{lo}, {hi}] and {cells}")
    t = (min(max(x, lo), hi) - lo) / (hi - lo) * cells
    i = min(int(t), cells - 1)
    return i, t - i


def node(i: int, lo: float, hi: float, cells: int) -> float:
    """Grid node i of ``cells`` equal cells over [lo, hi] (exact at both ends)."""
    return hi if i == cells else lo + (hi - lo) * i / cells


def grid_root(f: Callable[[int], float], cells: int) -> tuple[int, float, str]:
    """(i, w, note): where the linear interpolant of ``f`` over nodes 0..cells crosses 0, as cell i and weight w in
    [0, 1] (the root is node i + w). ``f`` is taken as increasing and bisected over node indices (2 + log2(cells)
    evaluations); a bisection branch that flips as f(mid) passes 0 gives the same root, mid, from either side, so
    the root is continuous in f's node values (where they increase; a note names a node met out of order). Beyond
    either end: that end, with a note saying so."""
    f_lo, f_hi = f(0), f(cells)
    if f_hi < 0:
        return cells - 1, 1.0, "even the upper end predicts less than published"
    if f_lo > 0:
        return 0, 0.0, "even the lower end predicts more than published"
    lo, hi, note = 0, cells, ""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        f_mid = f(mid)
        if not f_lo <= f_mid <= f_hi:
            note = f"the nodes do not increase around node {mid}"
        if f_mid < 0:
            lo, f_lo = mid, f_mid
        else:
            hi, f_hi = mid, f_mid
    if f_hi == f_lo:  # both 0: f(lo) = 0 only at node 0, where the root is node 0
        return lo, 0.0, note
    return lo, min(1.0, max(0.0, -f_lo / (f_hi - f_lo))), note
