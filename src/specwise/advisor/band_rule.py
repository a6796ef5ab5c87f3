"""advise's rule at one load, apart from everything else a verdict weighs: a predicted speedup and its error band
against ``min_speedup``. ``advisor/decision.py`` decides with :func:`band_verdict` and ``specwise validate`` scores it
on the published measurements (``validate/decisions.py``), so the rule scored is the rule that decides. The direction
guard is shared in substance, not in code: validate applies :func:`direction_guarded` to one load's verdict, advise
``advisor/decision._direction_unreliable`` to a whole verdict (an enable below a load too), with the same test
(``perfmodel.factory.direction_poor``)."""

from __future__ import annotations

from typing import Literal

BandVerdict = Literal["enable", "measure_first", "disable"]
BAND_VERDICTS: tuple[BandVerdict, ...] = ("enable", "measure_first", "disable")
DEFAULT_MIN_SPEEDUP = 1.05  # [advise].min_speedup when the scenario does not set it


def band_verdict(speedup: float, band: float, minimum: float) -> BandVerdict:
    """enable when even the low end of the band, ``speedup * (1 - band)``, clears ``minimum``; measure_first when
    the band straddles it (the point estimate on either side); disable when even its high end misses it."""
    return interval_verdict(speedup, speedup, band, minimum)


def interval_verdict(low: float, high: float, band: float, minimum: float) -> BandVerdict:
    """:func:`band_verdict` for a speedup known only to lie in [``low``, ``high``] (the simulation's own sampling
    noise, :class:`~specwise.contracts.advice.SamplingNoise`): enable when even ``low * (1 - band)`` clears
    ``minimum``, disable when even ``high * (1 + band)`` misses it, else measure_first. The two errors add: the
    band is the predictor's error against measurements, the interval where its simulation of this workload lies."""
    if low * (1.0 - band) >= minimum:
        return "enable"
    if high * (1.0 + band) >= minimum:
        return "measure_first"
    return "disable"


def direction_guarded(verdict: BandVerdict, direction_caveat: bool) -> BandVerdict:
    """An enable from a predictor whose held-back record often puts a speedup on the wrong side of 1 is at most
    measure_first (``perfmodel.factory.direction_poor`` says when): a band of relative error clearing the minimum
    says nothing when the predictor cannot tell a slowdown from a speedup there. ``validate`` scores with this;
    ``advisor/decision._direction_unreliable`` applies the same test to a whole verdict (an enable below a load
    too)."""
    return "measure_first" if verdict == "enable" and direction_caveat else verdict
