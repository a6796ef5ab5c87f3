"""What a step costs when an engine overlaps its CPU work with the GPU's passes: the expected longer of the two.

Two overlapped parts of a step -- the GPU's passes (``a`` seconds on average) and the engine's CPU work (``b``) --
finish the step when the later of them finishes. Both vary from step to step, so the step's mean is the mean of the
maximum, not the maximum of the means: it is longer than ``max(a, b)``, most of all where the two are about equal
(whichever is late this time holds the step). With each part normal, independent, and its standard deviation a fixed
share ``jitter`` of its mean, the first moment of the maximum is Clark's (C. E. Clark, "The greatest of a finite set
of random variables", Operations Research 9(2):145-162, 1961: the first moment of the greater of two normal
variables, with correlation 0)::

    E[max(A, B)] = a Phi(alpha) + b Phi(-alpha) + theta phi(alpha),
    alpha = (a - b) / theta,   theta = jitter * sqrt(a^2 + b^2)

``jitter`` = 0 is the hard ``max(a, b)``. The function is smooth in ``a``, ``b`` and ``jitter`` > 0 (a hard maximum
has a kink where the parts cross, which a least-squares fit of the coefficients cannot step across), never below
``max(a, b)`` but by rounding (a last-place unit), and at ``a = b`` it is ``a (1 + jitter / sqrt(pi))``.
"""

from __future__ import annotations

import math
import sys

FAR_APART = 9.0
"""Parts this many spreads (theta) apart cost the longer one, to the last bit: Phi(9) rounds to 1 in double precision
(1 - Phi(9) ~ 1e-19) and theta phi(9) is below 2e-18 of the longer part for any jitter <= 1, far under its last bit,
so the shortcut (the simulator prices most overlapped steps here) changes no result."""
_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def expected_max_s(a_s: float, b_s: float, jitter: float) -> float:
    """The mean of the longer of two overlapped durations with means ``a_s`` and ``b_s`` (seconds, >= 0), each with a
    standard deviation of ``jitter`` times its mean (module docstring; 0: the hard maximum)."""
    theta = jitter * math.hypot(a_s, b_s)
    # theta below the smallest normal double (parts of ~1e-308 s, never a real step): Clark's terms underflow to 0
    if theta < sys.float_info.min or abs(a_s - b_s) >= FAR_APART * theta:
        return max(a_s, b_s)
    alpha = (a_s - b_s) / theta
    cdf = 0.5 * (1.0 + math.erf(alpha / _SQRT2))
    return a_s * cdf + b_s * (1.0 - cdf) + theta * _INV_SQRT_2PI * math.exp(-0.5 * alpha * alpha)
