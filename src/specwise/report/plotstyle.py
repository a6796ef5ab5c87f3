"""One look for every plot specwise draws: names shown as typed (no mathtext, so a ``$`` in a model or candidate
name is text, not a formula), request rates as plain numbers on a log axis, milliseconds for per-token latency,
one colour per k across all plots, and the operating load marked where there is one."""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from specwise.contracts.sweep import SweepResult
from specwise.extras import missing_extra
from specwise.report.overload import OVERLOAD_LABEL

try:
    import matplotlib
except ImportError:  # an optional extra: one line naming it, never a traceback
    raise missing_extra("matplotlib", "plotting") from None

matplotlib.use("Agg")
import matplotlib.pyplot as _pyplot
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

# The plot modules reach matplotlib only through here, after the check above.
plt: Any = _pyplot
P = ParamSpec("P")
R = TypeVar("R")

RC: dict[str, Any] = {"text.parse_math": False, "svg.hashsalt": "specwise", "svg.fonttype": "none"}
BASELINE_COLOUR = "#4d4d4d"
_K_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


@contextmanager
def style() -> Iterator[None]:
    """Every figure is drawn inside this (mathtext off; SVG output reproducible)."""
    with plt.rc_context(RC):
        yield


def styled(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator: draw the whole figure inside :func:`style` (text objects read the settings when created)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with style():
            return fn(*args, **kwargs)

    return wrapper


def k_colour(k: int) -> str:
    """The same k has the same colour in every plot (k=0, no speculation, is grey)."""
    return BASELINE_COLOUR if k == 0 else _K_COLOURS[(k - 1) % len(_K_COLOURS)]


_SERIES_COLOURS = ("#1b9e77", "#7570b3", "#d95f02", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#1f78b4")


def series_colour(index: int) -> str:
    """Colour of the i-th candidate (by rank) -- the same candidate keeps it in every plot of a report."""
    return _SERIES_COLOURS[index % len(_SERIES_COLOURS)]


def legend_outside(ax: Any, **kw: Any) -> None:
    """A legend outside the axes, legible (8 pt) and never over the data: to the right, or below when its labels
    are long (candidate names) so the plot keeps its width."""
    _, labels = ax.get_legend_handles_labels()
    if max((len(label) for label in labels), default=0) > len(OVERLOAD_LABEL) + 2:  # candidate names, not ours
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.2), borderaxespad=0.0, **kw)
    else:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kw)


def _plain(x: float, _pos: int | None = None) -> str:
    return f"{x:g}"


def qps_axis(ax: Any, values: Iterable[float] = (), label: str = "request rate (QPS)") -> None:
    """Log-scaled request-rate axis with ticks written 0.5, 1, 2, 4 -- never 10^0: at the simulated rates when
    there are few of them, else at 1-2-5 steps."""
    ax.set_xscale("log")
    ticks = sorted({float(v) for v in values if v > 0})
    if 0 < len(ticks) <= 12:
        ax.xaxis.set_major_locator(FixedLocator(ticks))
    else:
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(_plain))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(label)


def log_y_axis(ax: Any) -> None:
    """Log-scaled y axis with plain tick labels (mathtext is off, so the default 10^n labels would not render)."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(_plain))
    ax.yaxis.set_minor_formatter(NullFormatter())


def mark_load(ax: Any, qps: float | None, label: str = "operating load") -> None:
    if qps is not None and qps > 0:
        ax.axvline(qps, color="black", linestyle="-.", linewidth=1, alpha=0.7, label=f"{label} {qps:g} QPS")


OVERLOAD_GID = "overloaded"  # the gid of every artist that marks overloaded points (the span, the hollow markers)
OVERLOAD_SHADE = "#f4b400"


def plot_series(
    ax: Any, xs: Sequence[float], ys: Sequence[float | None], overloaded: Sequence[bool], *args: Any, **kw: Any
) -> bool:
    """``ax.plot(xs, ys, *args, **kw)`` with the markers of the ``overloaded`` points drawn hollow, in the series'
    colour (a ring where the series' marker has no face: ``.``, ``x``); the line still runs through them. True when
    any point was overloaded."""
    filled = [i for i, o in enumerate(overloaded) if not o]
    (line,) = ax.plot(xs, ys, *args, markevery=filled, **kw)
    hollow = [i for i, o in enumerate(overloaded) if o]
    if hollow:
        marker = line.get_marker() if line.get_marker() in Line2D.filled_markers else "o"
        ax.plot(
            [xs[i] for i in hollow],
            [ys[i] for i in hollow],
            linestyle="none",
            marker=marker,
            markersize=max(float(line.get_markersize()), 6.0),
            markerfacecolor="none",
            markeredgecolor=line.get_color(),
            label="_" + OVERLOAD_GID,
            gid=OVERLOAD_GID,
        )
    return bool(hollow)


def mark_overload(ax: Any, first_qps: float | None, any_hollow: bool) -> None:
    """Shade the loads from ``first_qps`` (the first one the deployment without speculation cannot keep up with)
    to the right edge, labelled for the legend; with no such load but some hollow point, a legend entry for the
    hollow markers alone. Call after the data and the axis scale are set, before the legend."""
    if first_qps is None:
        if any_hollow:
            ax.plot([], [], linestyle="none", marker="o", markerfacecolor="none", color="grey", label=OVERLOAD_LABEL)
        return
    lo, hi = ax.get_xlim()
    ax.axvspan(
        first_qps,
        max(hi, first_qps),
        color=OVERLOAD_SHADE,
        alpha=0.15,
        zorder=0,
        label=OVERLOAD_LABEL,
        gid=OVERLOAD_GID,
    )
    ax.set_xlim(lo, hi)


def png_bytes(fig: Any, dpi: int = 120) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def svg_bytes(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    return buf.getvalue()


def close(fig: Any) -> None:
    plt.close(fig)


def speedup_band(ax: Any, sim: SweepResult) -> None:
    """The best speedup's error band (the predictor's 80th-percentile error) shaded over the loads the deployment
    keeps up with, labelled with the predictor: a plot shows the uncertainty the tables print."""
    qs = [q for q in sorted(sim.best_speedup_by_qps) if q not in sim.overloaded_qps]
    if not sim.band or not qs:
        return
    best = [sim.best_speedup_by_qps[q] for q in qs]
    lo, hi = [b * (1 - sim.band) for b in best], [b * (1 + sim.band) for b in best]
    ax.fill_between(qs, lo, hi, color="tab:blue", alpha=0.12, linewidth=0, label=f"best k ±{sim.band:.0%}")


def predictor_words(sim: SweepResult) -> str:
    """The line under a speedup plot's title: which step-time model made the curves, and its band."""
    return f"predictor: {sim.predictor}" + (f", speedups ±{sim.band:.0%} (80th-percentile error)" if sim.band else "")
