"""Alert rules over window stats, each a pure check with evidence; hysteresis lives in :class:`AlertState`.

Defaults follow common practitioner advice (a rule of thumb, not a measured threshold): acceptance below 0.5
suggests speculation adds latency; AL near 1 means drafts are wasted work (:data:`MIN_ACCEPTANCE_LENGTH`, shared with
the exported Prometheus alert). A rule fires only with enough drafts in the window (``min_drafts``) and clears only
after it has been fine for ``clear_after`` evaluations; a window it cannot judge (too few drafts) neither fires nor
clears it (:func:`held_rules`). A page with no drafts counter (vLLM V1 before 0.8.5): there the gate counts draft tokens
(:attr:`WindowStats.judged_count`) and only the acceptance-rate rules can fire (AL and per-position are unknown).

:data:`RULES` names every alert the monitor can raise on a window (``class_drag:<model_name>`` besides, one per
served model): the ``specwise_alert_active`` series (:mod:`specwise.monitor.sinks`) are made from it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Literal

from specwise.monitor.window import WindowStats

Severity = Literal["warning", "critical"]

LOW_ACCEPTANCE_RATE = "low_acceptance_rate"
LOW_ACCEPTANCE_LENGTH = "low_acceptance_length"
POSITION_COLLAPSE = "position_collapse"
PREDICTED_NET_SLOWDOWN = "predicted_net_slowdown"  # raised by :mod:`specwise.monitor.predicted` (with --scenario)
CLASS_DRAG = "class_drag:"  # + the model_name that drags the server's acceptance down
RULES = (LOW_ACCEPTANCE_RATE, LOW_ACCEPTANCE_LENGTH, POSITION_COLLAPSE, PREDICTED_NET_SLOWDOWN)

# The AL-collapse threshold of ``monitor`` and of the exported ``SpecDecodeAcceptanceLengthCollapse`` alert. At
# batch 1, the most favourable case (verifying k+1 tokens costs about one step), speculation's walltime gain is
# AL / (k c + 1) (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding", Theorem 3.8;
# c: draft/target step-cost ratio), so it loses below AL = 1 + k c. 1.5 is that break-even for a draft costing a
# tenth of a target step at k=5, and at k=1 it is exactly acceptance 0.5 (the low-acceptance threshold); larger
# batches only raise the break-even. The exported rule's old 1.2 caught only drafts nearly free to run.
MIN_ACCEPTANCE_LENGTH = 1.5


# Rules that need the drafts count (AL, per-position rates; the slowdown check prices AL): a page with no drafts
# counter cannot judge them.
_NEED_DRAFTS = frozenset({LOW_ACCEPTANCE_LENGTH, POSITION_COLLAPSE, PREDICTED_NET_SLOWDOWN})


@dataclass(frozen=True)
class Thresholds:
    min_acceptance_rate: float = 0.5
    min_mean_acceptance_length: float = MIN_ACCEPTANCE_LENGTH
    position_collapse: float = 0.05  # a per-position rate under this while position 1 is healthy
    min_drafts: float = 50.0
    class_drag_gap: float = 0.15  # a labelled class this far under the overall rate drags it down


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    message: str


def _judged(stats: WindowStats, t: Thresholds) -> tuple[float, str] | None:
    """The window's sample size and its unit when it is large enough for the rules, else None."""
    count = stats.judged_count
    return count if count is not None and count[0] >= t.min_drafts else None


def check(stats: WindowStats, t: Thresholds) -> list[Finding]:
    out: list[Finding] = []
    judged = _judged(stats, t)
    if judged is None:
        return out
    if stats.acceptance_rate is not None and stats.acceptance_rate < t.min_acceptance_rate:
        out.append(
            Finding(
                LOW_ACCEPTANCE_RATE,
                "warning",
                f"acceptance rate {stats.acceptance_rate:.2f} < {t.min_acceptance_rate} over "
                f"{judged[0]:.0f} {judged[1]}: speculation may be adding latency; lower k or check the "
                "traffic mix/temperature",
            )
        )
    if stats.mean_acceptance_length is not None and stats.mean_acceptance_length < t.min_mean_acceptance_length:
        out.append(
            Finding(
                LOW_ACCEPTANCE_LENGTH,
                "critical",
                f"mean acceptance length {stats.mean_acceptance_length:.2f} < "
                f"{t.min_mean_acceptance_length}: most drafts are rejected; consider k=0",
            )
        )
    overall = stats.acceptance_rate
    for model, g in sorted(stats.by_model.items()):
        rate, (drafts, unit) = g.get("acceptance_rate"), _model_count(g)
        if overall is None or rate is None or drafts < t.min_drafts:
            continue
        if rate < t.min_acceptance_rate and overall - rate >= t.class_drag_gap:
            out.append(
                Finding(
                    CLASS_DRAG + model,
                    "warning",
                    f"traffic for model_name={model!r} accepts {rate:.2f} vs {overall:.2f} overall over {drafts:.0f} "
                    f"{unit}: it drags acceptance down; serve it without speculation (or a lower k) or split traffic",
                )
            )
    pp = stats.per_position_acceptance
    if len(pp) >= 2 and pp[0] >= t.min_acceptance_rate:
        collapsed = [i + 1 for i, r in enumerate(pp) if r < t.position_collapse]
        if collapsed:
            out.append(
                Finding(
                    POSITION_COLLAPSE,
                    "warning",
                    f"positions {collapsed} accept under {t.position_collapse:.0%} while position 1 "
                    f"accepts {pp[0]:.0%}: k is larger than useful; set k={collapsed[0] - 1}",
                )
            )
    return out


def _model_count(g: dict[str, float | None]) -> tuple[float, str]:
    """A served model's sample size (``by_model``): its drafts, or its draft tokens on a page with no drafts counter."""
    if g.get("drafts") is None and g.get("draft_tokens") is not None:
        return g["draft_tokens"] or 0.0, "draft tokens"
    return g.get("drafts") or 0.0, "drafts"


def unjudged_note(stats: WindowStats, t: Thresholds) -> str | None:
    """Why the acceptance rules did not judge this window (too few drafts), or None when they did or there is
    nothing to judge (no spec-decode counters, or counts that could not be used)."""
    count = stats.judged_count
    if count is None or count[0] >= t.min_drafts:
        return None
    return (
        f"acceptance rules not evaluated: the window had {count[0]:.0f} {count[1]}, fewer than the minimum "
        f"{t.min_drafts:g} (--min-drafts)"
    )


def held_rules(stats: WindowStats, t: Thresholds, active: Iterable[str]) -> frozenset[str]:
    """The open alerts this window cannot judge, which keep their state (neither fire nor clear): every one when the
    window had fewer than ``min_drafts`` drafts (or no usable counts: idle, no spec-decode counters, impossible
    counts); a ``class_drag`` alert whose model drafted too little; the predicted slowdown with no running batch
    (:meth:`specwise.monitor.predicted.SlowdownModel.check` does not price it then); on a page with draft tokens but
    no drafts counter (vLLM V1 before 0.8.5) the rules that need the drafts count."""
    active = frozenset(active)
    if _judged(stats, t) is None:
        return active
    held = set()
    for rule in active:
        if rule.startswith(CLASS_DRAG):
            g = stats.by_model.get(rule.removeprefix(CLASS_DRAG))
            if g is None or _model_count(g)[0] < t.min_drafts:
                held.add(rule)
        elif rule == PREDICTED_NET_SLOWDOWN and (stats.batch is None or not stats.batch >= 1):
            held.add(rule)
        if rule in _NEED_DRAFTS and stats.drafts is None:  # no drafts counter: AL and per-position are unknown
            held.add(rule)
    return frozenset(held)


@dataclass
class AlertState:
    """Hysteresis: an alert opens when its rule fires and closes after ``clear_after`` clean evaluations; each
    transition is reported once."""

    clear_after: int = 3
    active: dict[str, Finding] = field(default_factory=dict)
    clean_runs: dict[str, int] = field(default_factory=dict)

    def update(self, findings: list[Finding], held: Collection[str] = ()) -> tuple[list[Finding], list[str]]:
        """Returns (newly opened alerts, names of alerts that cleared). An open alert in ``held`` (its rule could
        not judge this evaluation, :func:`held_rules`) that did not fire keeps its state and clean-run count."""
        fired = {f.rule: f for f in findings}
        opened = [f for rule, f in fired.items() if rule not in self.active]
        for rule, f in fired.items():
            self.active[rule] = f
            self.clean_runs[rule] = 0
        cleared = []
        for rule in list(self.active):
            if rule in fired or rule in held:
                continue
            self.clean_runs[rule] = self.clean_runs.get(rule, 0) + 1
            if self.clean_runs[rule] >= self.clear_after:
                cleared.append(rule)
                del self.active[rule]
                del self.clean_runs[rule]
        return opened, cleared
