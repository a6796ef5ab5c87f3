"""Terminal view of ``specwise validate``'s decision score: what advise's verdict rule would have said at each
published measurement's load, against what was measured (``validate/decisions.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from specwise.advisor.band_rule import BAND_VERDICTS
from specwise.evidence.records import TIE_WITHIN
from specwise.perfmodel.profiles import UNMEASURED_BAND
from specwise.report.tables import print_table
from specwise.validate.decisions import OUTCOMES, ROLES, Decision, DecisionScore

_MAX_LISTED = 5  # enables on a slowdown (or disables on a gain) named one by one; --json lists them all
# said under the table: advise decides otherwise in more than the band
NOT_ADVISE = (
    "the verdict rule at one load (the band, and no enable where the predictor often gets the side of 1 wrong) at the "
    "published k and on the source's metric (mostly throughput), not a whole advise, which picks its own k, decides "
    "on the end-to-end p50 latency and checks capacity, a schedule and veto rules (validate/decisions.py)"
)


def outcome_words(outcome: str, minimum: float) -> str:
    # a published speedup within 1% of 1 is a tie (EvidenceRecord.is_tie): neither a slowdown nor a gain that pays
    pays_from = max(minimum, 1.0 + TIE_WITHIN)
    return {"slowdown": "0.99 or less", "short": f"above 0.99, under {pays_from:g}", "pays": f"{pays_from:g} or more"}[
        outcome
    ]


def title(score: DecisionScore, family_selected: bool) -> str:
    among = " (those replayed: the --family selection)" if family_selected else ""
    return (
        f"advise's verdict at each record's load (min_speedup {score.min_speedup:g}), against the published speedup; "
        f"a held-back record's band and direction check are set by the other held-back families{among}, never its own"
    )


def rows(score: DecisionScore) -> list[list[str]]:
    """(role, published outcome, enable, measure first, disable) for each role with records."""
    return [
        [role if i == 0 else "", outcome_words(outcome, score.min_speedup)]
        + [str(score.count(role, outcome, verdict)) for verdict in BAND_VERDICTS]
        for role in ROLES
        if score.count(role)
        for i, outcome in enumerate(OUTCOMES)
    ]


def _band_words(d: Decision) -> str:
    return f"shipped band +-{d.band:.0%}" if d.band_from == "shipped" else f"band +-{d.band:.0%} from {d.band_from}"


def _listed(ds: Sequence[Decision]) -> str:
    named = [
        f"{d.record_id}: published {d.published:.2f}x, predicted {d.predicted:.2f}x, {_band_words(d)}"
        for d in ds[:_MAX_LISTED]
    ]
    more = f"; {len(ds) - _MAX_LISTED} more in --json" if len(ds) > _MAX_LISTED else ""
    return f" ({'; '.join(named)}{more})" if named else ""


def render_decisions(score: DecisionScore, out: Console, wide: bool = False, family_selected: bool = False) -> None:
    """The verdicts by published outcome and role, then the enables on a slowdown and the disables on a gain, named.
    ``family_selected``: the held-back bands come from the ``--family`` selection only (said)."""
    if not score.decisions:
        return
    t = Table(title=title(score, family_selected))
    for col in ("role", "published", "enable", "measure first", "disable"):
        t.add_column(col, justify="left" if col in ("role", "published") else "right")
    for row in rows(score):
        t.add_row(*row)
    print_table(out, t, wide=wide)
    for line in decision_sentences(score):
        out.print(line, markup=False, highlight=False)


def decision_sentences(score: DecisionScore) -> list[str]:
    """The enables on a published slowdown and the disables on a published gain, per role, the first few named; the
    held-back records whose engine had no other held-back family replayed; then what the score is not."""
    m, roles = score.min_speedup, [r for r in ROLES if score.count(r)]
    harmful = "; ".join(
        f"{len(score.harmful(r))} of {score.count(r, 'slowdown')} {r}{_listed(score.harmful(r))}" for r in roles
    )
    missed = "; ".join(
        f"{len(score.missed(r))} of {score.count(r, 'pays')} {r}{_listed(score.missed(r))}" for r in roles
    )
    lines = [
        f"enable on a published slowdown: {harmful}",
        f"disable where the published speedup is {outcome_words('pays', m)}: {missed}",
    ]
    wider = sum(1 for d in score.decisions if d.role == "held-back" and d.band_from == "every engine")
    unmeasured = sum(1 for d in score.decisions if d.role == "held-back" and d.band_from == "no held-back record")
    if wider or unmeasured:
        lines.append(
            f"{wider + unmeasured} held-back records had no other held-back family of their band's engine replayed: "
            + ", ".join(
                part
                for part in (
                    f"{wider} take every engine's band" if wider else "",
                    f"{unmeasured} an unmeasured +-{UNMEASURED_BAND:.0%} with no direction check" if unmeasured else "",
                )
                if part
            )
        )
    return [*lines, NOT_ADVISE]
