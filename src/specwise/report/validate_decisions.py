"""Terminal view of ``specwise validate``'s decision score: what advise's verdict rule would have said at each
published measurement's load, against what was measured (``validate/decisions.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from specwise.advisor.band_rule import BAND_VERDICTS
from specwise.report.tables import print_table
from specwise.validate.decisions import OUTCOMES, ROLES, Decision, DecisionScore

_MAX_LISTED = 5  # enables on a slowdown (or disables on a gain) named one by one; --json lists them all


def outcome_words(outcome: str, minimum: float) -> str:
    # a published speedup within 1% of 1 is a tie (EvidenceRecord.is_tie), not a slowdown
    return {"slowdown": "below 0.99", "short": f"0.99 to {minimum:g}", "pays": f"{minimum:g} or more"}[outcome]


def _listed(ds: Sequence[Decision]) -> str:
    named = [
        f"{d.record_id}: published {d.published:.2f}x, predicted {d.predicted:.2f}x, band +-{d.band:.0%} from "
        f"{d.band_from}"
        for d in ds[:_MAX_LISTED]
    ]
    more = f"; {len(ds) - _MAX_LISTED} more in --json" if len(ds) > _MAX_LISTED else ""
    return f" ({'; '.join(named)}{more})" if named else ""


def render_decisions(score: DecisionScore, out: Console, wide: bool = False, family_selected: bool = False) -> None:
    """The verdicts by published outcome and role, then the enables on a slowdown and the disables on a gain, named.
    ``family_selected``: the bands come from the ``--family`` selection's other held-back families only (said)."""
    m = score.min_speedup
    roles = [r for r in ROLES if score.count(r)]
    if not roles:
        return
    t = Table(
        title=f"advise's verdict at each record's load (min_speedup {m:g}), against the published speedup; a held-back "
        "record's band and direction check are set without its own source family"
        + (" (from the other --family selected ones only)" if family_selected else "")
    )
    for col in ("role", "published", "enable", "measure first", "disable"):
        t.add_column(col, justify="left" if col in ("role", "published") else "right")
    for role in roles:
        for i, outcome in enumerate(OUTCOMES):
            cells = [str(score.count(role, outcome, v)) for v in BAND_VERDICTS]
            t.add_row(role if i == 0 else "", outcome_words(outcome, m), *cells)
    print_table(out, t, wide=wide)
    for line in decision_sentences(score):
        out.print(line)


def decision_sentences(score: DecisionScore) -> list[str]:
    """The enables on a published slowdown and the disables on a published gain, per role, the first few named;
    then what the score is not."""
    m, roles = score.min_speedup, [r for r in ROLES if score.count(r)]
    harmful = "; ".join(
        f"{len(score.harmful(r))} of {score.count(r, 'slowdown')} {r}{_listed(score.harmful(r))}" for r in roles
    )
    missed = "; ".join(
        f"{len(score.missed(r))} of {score.count(r, 'pays')} {r}{_listed(score.missed(r))}" for r in roles
    )
    return [
        f"enable on a published slowdown: {harmful}",
        f"disable where the published speedup is {m:g}x or more: {missed}",
        "the verdict rule at one load (the band, and no enable where the predictor often gets the side of 1 wrong), "
        "not a whole advise: no capacity check, schedule or veto rule (validate/decisions.py)",
    ]
