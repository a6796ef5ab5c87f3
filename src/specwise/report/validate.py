"""Terminal view of ``specwise validate``: per source family (fit and held-back apart), the crossover loads, the
acceptance criteria, and the records that missed."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from specwise.report.console import console
from specwise.report.tables import print_table
from specwise.report.validate_decisions import render_decisions
from specwise.units import fmt_pct, fmt_sig3
from specwise.validate.nearest import FULL_SCORE, Nearest, Neighbour, setup_words
from specwise.validate.run import Crossover, Validation, not_replayed
from specwise.validate.stats import ErrorSummary


def _row(name: str, role: str, s: ErrorSummary, extra: str = "") -> list[str]:
    return [
        name,
        role,
        str(s.records),
        fmt_pct(s.median_abs_rel_error),
        fmt_pct(s.p80_abs_rel_error),
        fmt_pct(s.within_25pct),
        f"{s.slowdowns_predicted}/{s.slowdowns}",
        fmt_pct(s.sign_agreement),
        extra,
    ]


def bands_sentence(v: Validation) -> str | None:
    """The error band each engine and GPU segment's predictions carry: the 80th percentile of the held-back speedup
    errors (perfmodel/profiles.py; a segment with fewer than MIN_SEGMENT_RECORDS takes its engine's)."""
    from specwise.perfmodel.profiles import MIN_SEGMENT_RECORDS

    parts = []
    for engine, by_segment in v.held_back_by_engine_and_segment.items():
        for segment, s in by_segment.items():
            if s.speedup_p80_abs_rel_error is None:
                continue
            own = "" if s.speedup_records >= MIN_SEGMENT_RECORDS else f"; under {MIN_SEGMENT_RECORDS}, not used alone"
            parts.append(
                f"{engine} on {segment} GPUs +-{s.speedup_p80_abs_rel_error:.0%} ({s.speedup_records} speedups{own})"
            )
    if not parts:
        return None
    return "error bands (80th percentile of the held-back speedup errors, by engine and GPU segment): " + ", ".join(
        parts
    )


FAMILY_COLUMNS = ("family", "role", "n", "median err", "p80 err", "within 25%", "slowdowns <1", "sign ok")


def family_rows(v: Validation) -> list[list[str]]:
    """The family table's rows (:data:`FAMILY_COLUMNS`, then anchors/unreplayable): each family, the fit and
    held-back totals, and the held-back records by engine and by engine and GPU segment."""
    rows = [_row(f.family, f.role, f.summary, f"{f.anchors}/{f.unreplayable}") for f in v.families]
    rows += [_row("all fit families", "fit", v.fit), _row("all held-back families", "held-back", v.held_back)]
    for engine, summary in v.held_back_by_engine.items():
        rows.append(_row(f"held-back, {engine} only", "held-back", summary))
        for segment, by_segment in v.held_back_by_engine_and_segment.get(engine, {}).items():
            rows.append(_row(f"held-back, {engine}, {segment}", "held-back", by_segment))
    return rows


def render_validation(v: Validation, show_all: bool = False, out: Console | None = None, wide: bool = False) -> None:
    out = console(out)
    t = Table(title=f"specwise validate: predictor {v.predictor} (ratios on speedups; plain decoding on values)")
    for col in (*FAMILY_COLUMNS, "anchors/unrepl"):
        # no column folds: a family name is an id, kept whole (the table folds instead: report/tables.py)
        t.add_column(col, justify="left" if col in ("family", "role") else "right")
    for row in family_rows(v):
        t.add_row(*row)
    print_table(out, t, wide=wide)
    out.print(LEGEND)
    bands = bands_sentence(v)
    if bands:
        out.print(bands)
    out.print(
        f"ties (published speedup within 1% of 1): {v.fit.ties} in the fit families, {v.held_back.ties} held back"
    )
    _not_replayed(v, out)
    if v.crossovers:
        c = Table(title="crossover: load where speculation stops paying")
        for col in ("series", "load", "published", "predicted", "within 2x"):
            c.add_column(col, justify="left" if col in ("series", "load") else "right")
        for x in v.crossovers:
            c.add_row(
                x.series,
                x.load_kind,
                fmt_sig3(x.published),
                predicted_crossing(x),
                "yes" if x.within_2x else "[red]no[/]",
            )
        print_table(out, c, wide=wide)
        if any(x.searched_to is not None for x in v.crossovers):
            out.print(
                "* beyond the loads the source measured: the prediction followed past them in x1.25 steps, as far as "
                "twice (or half) the published crossover; '> N' ('< N'): it does not cross up to (down to) load N"
            )
    if v.decisions is not None:
        render_decisions(v.decisions, out, wide, v.family_selected)
    base = "-" if v.baseline_within_20pct is None else f"{v.baseline_within_20pct:.0%}"
    out.print(
        f"plain-decoding records within +-20%: {base}; Leviathan Table 4 max |diff| {v.leviathan_max_abs_diff:.3f}"
    )
    _baselines_in_runs(v, out, wide)
    pad = max((len(CRITERION_WORDS[ok][1]) for ok in v.criteria.values()), default=0)
    for name, ok in v.criteria.items():
        style, word = CRITERION_WORDS[ok]
        out.print(f"  [{style}]{word}[/]{' ' * (pad - len(word))}  {name}")
    _records(v, show_all, out, wide)


def _baselines_in_runs(v: Validation, out: Console, wide: bool) -> None:
    """The no-speculation arm published beside each speedup against the replay's plain decoding of the same run, per
    family: where it is far off, so are the replay's inputs, and its speedup errors say less about speculation."""
    if not v.baselines_in_runs:
        return
    t = Table(
        title="plain decoding inside the speculative runs: the replay's speed / the published no-speculation arm's "
        "(> 1: the replay is faster; each arm once, however many records share it)"
    )
    for col in ("family", "role", "arms", "records", "median", "range", "within 20%"):
        t.add_column(col, justify="left" if col in ("family", "role") else "right")
    for b in v.baselines_in_runs:
        role = "fit" if b.family in v.fit_families else "held-back"
        spread = f"{b.min_ratio:.2f}-{b.max_ratio:.2f}"
        t.add_row(b.family, role, str(b.arms), str(b.records), f"{b.median_ratio:.2f}", spread, fmt_pct(b.within_20pct))
    print_table(out, t, wide=wide)


# a criterion's verdict: met, not met, or none (no record of the selection can judge it; --check passes it)
CRITERION_WORDS = {True: ("green", "met"), False: ("red", "not met"), None: ("dim", "n/a (no records)")}
LEGEND = (
    "n: records predicted; err: |predicted / published - 1|; slowdowns <1: published slowdowns (speedup <= 0.99) also "
    "predicted < 1; sign ok: share of speculative records predicted on the same side of 1 as published (faster or "
    "slower than plain decoding); a published speedup within 1% of 1 is a tie, in neither (counted below); anchors: "
    "records (not in n) whose unpublished acceptance was set to reproduce their published speedup, the rest of "
    "their series predicted from it; unrepl: records that cannot be replayed (below)"
)
# hints in a reason meant for someone typing a name (the catalog's lists, near names), not for an evidence record;
# --json keeps the whole reason
_HINTS = (" (known: ", "; did you mean ", "; run 'specwise models'")


def _brief(reason: str) -> str:
    cut = min((i for i in (reason.find(h) for h in _HINTS) if i >= 0), default=len(reason))
    return reason[:cut]


def _not_replayed(v: Validation, out: Console) -> None:
    """How many records were left out of the table's n, and why, with the families they are from."""
    groups = not_replayed(v.predictions)
    if not groups:
        return
    skipped = sum(g.records for g in groups if g.status == "skipped")
    unrepl = sum(g.records for g in groups if g.status == "unreplayable")
    out.print(f"not replayed: {skipped} skipped, {unrepl} unreplayable (--json: records[].status and reason)")
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column("records", justify="right")
    t.add_column("status")
    t.add_column("reason", overflow="fold")
    for g in groups:
        where = ", ".join(f"{family} {n}" for family, n in g.by_family)
        t.add_row(str(g.records), g.status, Text(f"{_brief(g.reason)}\n", end="").append(where, style="dim"))
    print_table(out, t)


def predicted_crossing(x: Crossover) -> str:
    if x.predicted is None:
        if x.searched_to is None:
            return "never"
        return f"{'>' if x.searched_to > x.published else '<'} {fmt_sig3(x.searched_to)}"
    return fmt_sig3(x.predicted) + ("*" if x.searched_to is not None else "")


# what a plain-decoding record's value is, shown in display units (seconds and tokens/s inside)
_UNITS = {"tpot_s": ("TPOT ms", 1e3), "e2e_latency_s": ("E2E s", 1.0), "output_tokens_per_s": ("tok/s", 1.0)}


def _records(v: Validation, show_all: bool, out: Console, wide: bool) -> None:
    rows = [
        p
        for p in v.predictions
        if p.status == "predicted"
        and (show_all or p.record.is_slowdown or (p.ratio is not None and abs(p.ratio - 1) > 0.25))
    ]
    if not rows:
        return
    t = Table(title="records" if show_all else "published slowdowns and misses beyond +-25% (--all: every record)")
    for col in ("record", "load", "of", "published", "predicted", "ratio"):
        t.add_column(col, justify="left" if col in ("record", "of") else "right")
    for p in rows:
        r = p.record
        pub = r.speedup if r.speculative else r.value
        pred = p.predicted_speedup if r.speculative else p.predicted_value
        unit, scale = ("speedup", 1.0) if r.speculative else _UNITS.get(r.metric, (r.metric, 1.0))
        style = "red" if r.is_slowdown and (pred or 0) >= 1.0 else ""
        t.add_row(
            f"[{style}]{r.id}[/]" if style else r.id,
            f"{r.load.kind} {r.load.value:g}",
            unit,
            fmt_sig3(pub * scale) if pub is not None else "-",
            fmt_sig3(pred * scale) if pred is not None else "-",
            f"{p.ratio:.2f}" if p.ratio is not None else "-",
        )
    print_table(out, t, wide=wide)


def _summary_line(label: str, s: ErrorSummary, empty: str) -> str:
    if not s.records:
        return f"{label}: {empty}"
    return (
        f"{label}: {s.records} records, median error {fmt_pct(s.median_abs_rel_error)}, 80th percentile "
        f"{fmt_pct(s.p80_abs_rel_error)}, within +-25% {fmt_pct(s.within_25pct)}, published slowdowns predicted < 1: "
        f"{s.slowdowns_predicted} of {s.slowdowns}"
    )


def _nearest_table(title: str, neighbours: Sequence[Neighbour]) -> Table:
    """One role's listed records: setup as run, load, published and predicted speedup, nearness and what differs."""
    t = Table(title=title)
    for col in ("record", "setup", "load", "published", "predicted", "ratio", "near", "differs"):
        t.add_column(col, justify="left" if col in ("record", "setup", "load", "differs") else "right")
    for nb in neighbours:
        p, r = nb.prediction, nb.prediction.record
        pred = p.predicted_speedup
        style = "red" if r.is_slowdown and (pred or 0.0) >= 1.0 else ""
        t.add_row(
            f"[{style}]{r.id}[/]" if style else r.id,
            f"{r.engine} {r.tp}x{r.gpu} {r.target.rsplit('/', 1)[-1]} {setup_words(nb)}",
            f"{r.load.kind} {r.load.value:g}",
            fmt_sig3(r.speedup) if r.speedup is not None else "-",
            fmt_sig3(pred) if pred is not None else "-",
            f"{p.ratio:.2f}" if p.ratio is not None else "-",
            f"{nb.score:.0f}",
            ", ".join(nb.differs) or "-",
        )
    return t


def render_nearest(
    n: Nearest, predictor: str, out: Console | None = None, wide: bool = False, family_selected: bool = False
) -> None:
    """``validate --like``: the published measurements nearest a deployment, published vs predicted speedups --
    the held-back ones, whose error says how the predictor did there, and apart the published fit's training
    records (fitted on, for the published fit)."""
    out = console(out)
    among = " among the --family selection" if family_selected else ""
    out.print(f"published measurements nearest {n.query.describe()}{among}; predictor {predictor}")
    none = f"none on this engine and kind of GPU{among}"
    if n.held_back_neighbours:
        print_table(out, _nearest_table("held back (never fitted on)", n.held_back_neighbours), wide=wide)
    out.print(_summary_line("held back", n.held_back, none))
    fit_label = "the published fit's training families (fitted on: not an estimate of the error)"
    if n.fit_neighbours:
        print_table(out, _nearest_table(fit_label, n.fit_neighbours), wide=wide)
    out.print(_summary_line(fit_label, n.fit, none))
    out.print(
        f"near: of {FULL_SCORE:.0f} -- same engine 8, GPU segment 4 (same card +2), target 6 (or up to 3 within 10x of "
        f"its active parameters), a method considered 4 (or 2 for the same kind of proposer), same TP 1; another "
        "engine or kind of GPU is not listed; the load is not compared (validate/nearest.py)"
    )
