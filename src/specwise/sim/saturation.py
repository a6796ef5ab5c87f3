"""The request rate a deployment sustains, and whether a simulated load is above it.

An open arrival process faster than the engine serves is an unstable queue (Kleinrock, *Queueing Systems* Vol. 1,
1975, ch. 2: a queue is stable only for utilisation rho = lambda / mu < 1): the waiting line, and with it every
request's TTFT and E2E, grows with the number of requests simulated. Latency percentiles of such a run are not a
steady state -- they depend on ``num_requests`` -- so they must not be quoted as a speedup.

The capacity mu is measured, not guessed, by a saturated run of the same engine on the same mix of requests: a
closed loop that keeps ``users`` requests (vLLM's ``max_num_seqs``) in flight, each finished request replaced at
once by the next, so the scheduler always has work -- the batch is as large as ``max_num_seqs`` and the KV cache
allow, as in an overloaded server. mu is the completion rate between the first cohort's turnover and the drain
(the first and last ``users`` completions are left out: the start is one burst of prefills, the end a batch
emptying with nothing left to send).

A finite open-loop run at a rate above mu does not always show its queue: a burst shorter than the batch can hold
is absorbed whole (the review's 200-request run at 16 QPS, where mu ~6 req/s, looked stable), so the load is
judged against mu, not against what one short run happened to show.
"""

from __future__ import annotations

import numpy as np

from specwise.traffic import FloatArray

MIN_CAPACITY_REQUESTS = 400
USER_COHORTS = 4  # requests in the saturated run: this many times users (the middle half is measured)


def capacity_requests(users: int) -> int:
    """How many requests the saturated run simulates for ``users`` in flight."""
    return max(USER_COHORTS * users, MIN_CAPACITY_REQUESTS)


def capacity_per_s(finish_s: FloatArray, users: int) -> float:
    """Completions per second of a saturated closed loop of ``users``, between the ``users``-th completion and
    the ``users``-th from last (the whole run when it is too short to leave both out)."""
    done = np.sort(finish_s[np.isfinite(finish_s)])
    n = int(done.size)
    skip = users if n > 2 * users + 1 else 0
    first, last = done[skip], done[n - 1 - skip]
    if last <= first:
        return float("inf")
    return float((n - 1 - 2 * skip) / (last - first))


def overloaded(qps: float, capacity: float | None) -> bool:
    """Arrivals faster than the deployment serves once saturated: the queue grows without bound."""
    return capacity is not None and qps > capacity
