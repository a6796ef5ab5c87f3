"""Prometheus recording and alerting rules for speculative decoding across a fleet (``specwise export
prometheus-rules``): the monitor's rules (:mod:`specwise.monitor.rules`) as PromQL that Prometheus evaluates for
every replica, grouped ``by (model_name)`` and ``by (instance, model_name)``.

With a scenario, the monitor's predicted-net-slowdown rule (:mod:`specwise.monitor.predicted`) becomes alerts too.
Its break-even batch depends on the live acceptance length, which a static rule cannot evaluate through the perf
model, so the AL axis is cut into bands: for each band ``[lo, hi)`` the alert fires when the running batch exceeds
:meth:`~specwise.monitor.predicted.SlowdownModel.break_even_batch` at ``lo`` -- the band's lowest AL, so the alert
errs towards firing early (the break-even batch grows with AL). Bands with the same batch are merged; above the AL
where speculation pays at every batch up to ``max_num_seqs`` there is no alert.

On a replica with draft and accepted token counters but no drafts counter (vLLM V1 before 0.8.5) only the
acceptance-rate alert can judge: its guard counts draft tokens there, and the alerts built on the acceptance length
have no series to fire on -- as ``specwise monitor`` judges such a page. No alert judges a vLLM V0 replica: its token
counters add lifetime totals at every log interval, so no acceptance is recorded for it
(:func:`specwise.export.promql.not_v0`).

The YAML is written as text (PyYAML is not a dependency): every scalar is a JSON string, which is a valid YAML
double-quoted scalar, so no expression or template can break the structure.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from specwise.contracts.calibration import CalibrationDoc
from specwise.errors import SpecError
from specwise.export import promql
from specwise.export.promql import BY_INSTANCE, BY_MODEL, record_name
from specwise.monitor.predicted import SlowdownModel
from specwise.monitor.rules import MIN_ACCEPTANCE_LENGTH
from specwise.perfmodel.factory import ServingModels, band_text

FOR = "10m"
MIN_AL = MIN_ACCEPTANCE_LENGTH  # the AL-collapse alert: monitor's threshold (why 1.5: specwise.monitor.rules)
AL_STEP = 0.25  # width of the slowdown alert's AL bands


@dataclass(frozen=True)
class RecordingRule:
    record: str
    expr: str


@dataclass(frozen=True)
class AlertRule:
    alert: str
    expr: str
    severity: str
    summary: str
    description: str
    for_: str = FOR
    extra_labels: tuple[tuple[str, str], ...] = ()  # beside severity (promtool refuses two rules with one name+labels)


@dataclass(frozen=True)
class RuleGroup:
    name: str
    rules: tuple[RecordingRule | AlertRule, ...]


@dataclass(frozen=True)
class SlowdownBand:
    """Acceptance lengths in ``[al_low, al_high)`` (no upper bound when None): speculation costs TPOT above
    ``batch`` running requests (0: at every batch)."""

    al_low: float
    al_high: float | None
    batch: int


def slowdown_bands(model: SlowdownModel, step: float = AL_STEP) -> tuple[SlowdownBand, ...]:
    """The perf model's break-even batch per AL band, from AL 1 up to k + 1 (or the AL where it pays at every
    batch up to ``max_num_seqs``)."""
    levels = [1.0 + i * step for i in range(round(model.k / step) + 1)]
    points: list[tuple[float, int]] = []  # (AL, break-even batch), up to the first AL that pays at every batch
    end: float | None = None
    for al in levels:
        batch = model.break_even_batch(al)
        if batch is None:
            end = al
            break
        if not points or points[-1][1] != batch:
            points.append((al, batch))
    highs = [p[0] for p in points[1:]] + [end]
    return tuple(SlowdownBand(al, high, batch) for (al, batch), high in zip(points, highs, strict=True))


def recording_rules() -> tuple[RecordingRule, ...]:
    out: list[RecordingRule] = []
    for labels in (BY_MODEL, BY_INSTANCE):
        out += [
            RecordingRule(record_name(labels, "acceptance_rate"), promql.acceptance_rate(labels)),
            RecordingRule(record_name(labels, "mean_acceptance_length"), promql.mean_acceptance_length(labels)),
            RecordingRule(record_name(labels, "per_position_acceptance"), promql.per_position_acceptance(labels)),
            RecordingRule(record_name(labels, "draft_tokens"), promql.draft_tokens_rate(labels)),
            RecordingRule(record_name(labels, "drafts"), promql.drafts_rate(labels)),
        ]
    return tuple(out)


_WHERE = "{{ $labels.instance }} ({{ $labels.model_name }})"


MIN_DRAFTS = 30  # per 5-minute rate window: fewer drafts judge no acceptance (monitor's --min-drafts, as a rate)


def _enough_drafts(min_drafts: float) -> str:
    """The replica drafted at least ``min_drafts`` over the 5-minute rate window (a per-second rate of
    ``min_drafts / 300``), enough for its acceptance to judge anything.

    vLLM V1 before 0.8.5 exports no drafts counter: its draft tokens are counted instead, as ``specwise monitor
    --min-drafts`` counts them on such a page, so the acceptance-rate alert still judges it (``unless``: only where
    no drafts series exists). A vLLM V0 replica has no recorded acceptance to judge (:func:`promql.not_v0`)."""
    if not (math.isfinite(min_drafts) and min_drafts > 0):
        # monitor --min-drafts' rule, for API callers too: a guard of 0 drafts guards nothing.
        raise SpecError(f"min_drafts: must be a positive number of drafts per 5 minutes, got {min_drafts!r}")
    on = f"on ({promql.by(BY_INSTANCE)})"
    drafts = record_name(BY_INSTANCE, "drafts")
    draft_tokens = record_name(BY_INSTANCE, "draft_tokens")
    rate = f"{min_drafts / 300:.6g}"
    return f"{on} ({drafts} >= {rate} or ({draft_tokens} >= {rate} unless {on} {drafts}))"


def acceptance_alerts(min_acceptance: float, min_drafts: float = MIN_DRAFTS) -> tuple[AlertRule, ...]:
    """``min_drafts``: drafts per 5-minute window below which a low rate is noise (a handful of drafts), not an
    alert -- the guard ``specwise monitor --min-drafts`` applies to its windows."""
    if not 0.0 < min_acceptance < 1.0:  # NaN too: the CLI's --min-acceptance check, for API callers
        raise SpecError(
            f"min_acceptance: must be strictly between 0 and 1 (at 0 the alert never fires, at 1 it fires on every "
            f"replica), got {min_acceptance!r}"
        )
    rate = record_name(BY_INSTANCE, "acceptance_rate")
    al = record_name(BY_INSTANCE, "mean_acceptance_length")
    return (
        AlertRule(
            "SpecDecodeLowAcceptance",
            f"{rate} < {min_acceptance:g} and {_enough_drafts(min_drafts)}",
            "warning",
            f"Speculative decoding acceptance below {min_acceptance:g} on {_WHERE}",
            "Draft tokens are mostly rejected: speculation may be adding latency. Lower k, or check the traffic "
            "mix and temperature (specwise monitor shows which model_name drags it down).",
        ),
        AlertRule(
            "SpecDecodeAcceptanceLengthCollapse",
            f"{al} < {MIN_AL:g} and {_enough_drafts(min_drafts)}",
            "critical",
            f"Mean acceptance length below {MIN_AL:g} on {_WHERE}",
            "Almost every draft is rejected while drafts are still proposed: the drafting is wasted work; "
            "consider k=0 for this deployment.",
        ),
    )


def slowdown_alerts(
    model: SlowdownModel, bands: Sequence[SlowdownBand], model_name: str | None = None, min_drafts: float = MIN_DRAFTS
) -> tuple[AlertRule, ...]:
    """``model_name``: the served model the scenario describes (its ``model_name`` label); the alerts fire for its
    replicas only -- the break-even batch is one target's on one GPU and TP, meaningless for another model."""
    al = record_name(BY_INSTANCE, "mean_acceptance_length")
    on = f"on ({promql.by(BY_INSTANCE)})"
    scoped = f"{al}{{model_name={json.dumps(model_name)}}}" if model_name else al
    out = []
    for band in bands:
        expr = f"{promql.running(BY_INSTANCE)} > {band.batch} and {on} {scoped} >= {band.al_low:g}"
        if band.al_high is not None:
            expr += f" and {on} {al} < {band.al_high:g}"
        expr += f" and {_enough_drafts(min_drafts)}"
        span = f"[{band.al_low:g}, {band.al_high:g})" if band.al_high is not None else f">= {band.al_low:g}"
        advice = "set k=0" if band.batch == 0 else f"set k=0 above batch {band.batch}"
        out.append(
            AlertRule(
                "SpecDecodePredictedNetSlowdown",
                expr,
                "warning",
                f"Speculation predicted to cost TPOT on {_WHERE} at this batch size",
                f"With mean acceptance length in {span}, the perf model ({model.predictor}, k={model.k}, context "
                f"{model.context_tokens} tokens{_band(model)}) predicts speculative decoding is slower than plain "
                "decoding above "
                f"{band.batch} running requests: {advice} (num_speculative_tokens_per_batch_size).",
                extra_labels=(("acceptance_length_band", span),),
            )
        )
    return tuple(out)


def _band(model: SlowdownModel) -> str:
    """The predictor's error band, said with every predicted decision (the rules file's header says what it is)."""
    return f"; its speedups carry a +-{model.band:.0%} band" if model.band else ""


def provenance(
    models: ServingModels, calibration: CalibrationDoc | None = None, notes: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """The header lines of a rules file with slowdown alerts: the predictor that priced them and its band, the
    calibration's recorded run, hardware and engine, and what the results must say (other hardware, a range beyond
    the measured one, ``notes``: :mod:`specwise.perfmodel.calibration_match`)."""
    lines = [
        f"Predicted-slowdown alerts priced by {models.predictor}; speedups "
        f"{band_text(models.band, models.band_statistic, models.band_source)}"
    ]
    if calibration is not None:
        version = f" {calibration.engine_version}" if calibration.engine_version else " (version not recorded)"
        lines.append(
            f"Calibration run {calibration.run_id or '(unnamed)'}: target {calibration.target or 'not recorded'}, "
            f"engine {calibration.engine}{version}, hardware {calibration.hardware or 'not recorded'}"
        )
    return (*lines, *(f"warning: {note}" for note in (*models.notes, *notes)))


def build_rule_groups(
    min_acceptance: float = 0.5,
    slowdown: SlowdownModel | None = None,
    for_: str = FOR,
    model_name: str | None = None,
    min_drafts: float = MIN_DRAFTS,
) -> tuple[RuleGroup, ...]:
    """The recording rules and the alerts; ``for_``: how long an alert's condition must hold before it fires;
    ``model_name``: the served model the slowdown alerts are for (None: every model); ``min_drafts``: drafts per
    5 minutes below which every alert stays quiet."""
    alerts = acceptance_alerts(min_acceptance, min_drafts)
    if slowdown is not None:
        alerts += slowdown_alerts(slowdown, slowdown_bands(slowdown), model_name, min_drafts)
    alerts = tuple(replace(a, for_=for_) for a in alerts)
    return (
        RuleGroup("specwise-spec-decode-recording", recording_rules()),
        RuleGroup("specwise-spec-decode-alerts", alerts),
    )


def _q(text: str) -> str:
    return json.dumps(text)


def _rule_lines(rule: RecordingRule | AlertRule) -> list[str]:
    if isinstance(rule, RecordingRule):
        return [f"      - record: {_q(rule.record)}", f"        expr: {_q(rule.expr)}"]
    return [
        f"      - alert: {_q(rule.alert)}",
        f"        expr: {_q(rule.expr)}",
        f"        for: {_q(rule.for_)}",
        "        labels:",
        f"          severity: {_q(rule.severity)}",
        *(f"          {name}: {_q(value)}" for name, value in rule.extra_labels),
        "        annotations:",
        f"          summary: {_q(rule.summary)}",
        f"          description: {_q(rule.description)}",
    ]


def render_rules(groups: Sequence[RuleGroup], header: Sequence[str] = ()) -> str:
    """The rules file Prometheus loads (``rule_files``) and ``promtool check rules`` validates; ``header``: comment
    lines after the first (e.g. :func:`provenance`)."""
    comments = [f"# {' '.join(line.split())}" for line in header]  # one line each: a newline would end the comment
    lines = ["# Generated by specwise export prometheus-rules; regenerate rather than edit.", *comments, "groups:"]
    for group in groups:
        lines += [f"  - name: {_q(group.name)}", "    rules:"]
        for rule in group.rules:
            lines += _rule_lines(rule)
    return "\n".join(lines) + "\n"
