"""A scenario's settings replaced from outside the file: ``simulate``'s ``--num-requests`` and ``--metric``, the
API's ``num_requests`` and ``metric``."""

from __future__ import annotations

from dataclasses import replace

from specwise.errors import CLI_FLAGS, FieldNames, SpecwiseError
from specwise.scenario.build import few_requests_warning, short_trace_warning
from specwise.scenario.model import DECISION_METRICS, Scenario
from specwise.scenario.parse import MAX_NUM_REQUESTS, sets_an_slo
from specwise.values import bounded

requests_per_cell = bounded(int, f"an integer in 1..{MAX_NUM_REQUESTS:,}", low=1, high=MAX_NUM_REQUESTS)
"""``--num-requests`` (and the API's ``num_requests``): requests per (QPS, k) cell."""


def with_overrides(
    scenario: Scenario,
    source: object,
    requests: int | None,
    metric: str | None,
    names: FieldNames = CLI_FLAGS,
) -> Scenario:
    """The scenario with ``--num-requests`` / ``--metric`` applied (None: the scenario's own; a count too small to
    decide on is warned about, as a file's is), refused before the sweep: a metric that is not one of
    DECISION_METRICS, and goodput where no [[workload]] sets an SLO (no request could meet one, so every cell would
    score 0). ``names``: how the caller names them (the flags, or the API's arguments). A small overriding count is
    warned about as ``--num-requests N`` (the API's ``num_requests=N``), not as the file's ``[sweep].num_requests``
    (the API's result is the command's, warnings included)."""
    flag = names.name("metric")
    if requests:
        n, warm = scenario.sweep.num_requests, scenario.sweep.warmup_fraction
        arrivals, given = scenario.sweep.arrivals, names.setting("num_requests", requests)
        said = {
            few_requests_warning(n, warmup_fraction=warm),
            few_requests_warning(n, names.setting("num_requests", n), warm),
            short_trace_warning(arrivals, n, warm),
            short_trace_warning(arrivals, n, warm, names.setting("num_requests", n)),
        }
        warnings = [w for w in scenario.warnings if w not in said]  # the file's (or an earlier override's) count
        for now in (few_requests_warning(requests, given, warm), short_trace_warning(arrivals, requests, warm, given)):
            if now is not None:
                warnings.append(now)
        scenario = replace(scenario, sweep=replace(scenario.sweep, num_requests=requests), warnings=tuple(warnings))
    if metric is None:
        return scenario
    if metric not in DECISION_METRICS:
        raise SpecwiseError(f"{flag}: {metric!r} is not one of {', '.join(DECISION_METRICS)}")
    if metric == "goodput" and not sets_an_slo(scenario.classes):
        raise SpecwiseError(
            f"{flag} goodput: {source} sets no slo_ttft_s or slo_tpot_s on any [[workload]], so no request can meet one"
        )
    return replace(scenario, decision_metric=metric)
