"""A Grafana dashboard for speculative decoding across a fleet (``specwise export grafana``): acceptance rate, mean
acceptance length, per-position acceptance, draft tokens/s, running requests and TPOT/ITL quantiles, with
``$model_name`` and ``$instance`` template variables.

Built from typed dataclasses here rather than with grafanalib or grafana-foundation-sdk: grafanalib's maintainer
(Weaveworks) has shut down and it would add attrs for one JSON document; the foundation SDK's Python package is not
on the index this project installs from. The document is Grafana's dashboard JSON model (schemaVersion 39), which
Grafana imports as is (Dashboards -> Import, or file provisioning).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from specwise.engines.vllm import METRICS
from specwise.export import promql
from specwise.export.promql import BY_INSTANCE

SCHEMA_VERSION = 39
MATCHERS = 'model_name=~"$model_name", instance=~"$instance"'
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
JsonDoc = dict[str, object]


@dataclass(frozen=True)
class Target:
    expr: str
    legend: str

    def to_dict(self, ref_id: str) -> JsonDoc:
        return {"refId": ref_id, "expr": self.expr, "legendFormat": self.legend, "datasource": DATASOURCE}


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str
    targets: tuple[Target, ...]
    description: str = ""

    def to_dict(self, panel_id: int, x: int, y: int) -> JsonDoc:
        return {
            "id": panel_id,
            "type": "timeseries",
            "title": self.title,
            "description": self.description,
            "datasource": DATASOURCE,
            "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
            "fieldConfig": {"defaults": {"unit": self.unit}, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom"}, "tooltip": {"mode": "multi"}},
            "targets": [t.to_dict(chr(ord("A") + i)) for i, t in enumerate(self.targets)],
        }


@dataclass(frozen=True)
class Variable:
    name: str
    label: str
    query: str

    def to_dict(self) -> JsonDoc:
        return {
            "name": self.name,
            "label": self.label,
            "type": "query",
            "datasource": DATASOURCE,
            "query": {"query": self.query, "refId": f"{self.name}-query"},
            "definition": self.query,
            "refresh": 2,
            "includeAll": True,
            "multi": True,
            "allValue": ".*",
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
            "sort": 1,
        }


@dataclass(frozen=True)
class Dashboard:
    title: str
    uid: str
    variables: tuple[Variable, ...]
    panels: tuple[Panel, ...]

    def to_dict(self) -> JsonDoc:
        datasource: JsonDoc = {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus"}
        return {
            "title": self.title,
            "uid": self.uid,
            "schemaVersion": SCHEMA_VERSION,
            "version": 1,
            "editable": True,
            "tags": ["vllm", "speculative-decoding", "specwise"],
            "time": {"from": "now-6h", "to": "now"},
            "refresh": "30s",
            "templating": {"list": [datasource, *(v.to_dict() for v in self.variables)]},
            "panels": [p.to_dict(i + 1, 12 * (i % 2), 8 * (i // 2)) for i, p in enumerate(self.panels)],
        }


def _quantiles(histogram: str, name: str) -> tuple[Target, ...]:
    return tuple(
        Target(
            promql.histogram_quantile(q, histogram, BY_INSTANCE, MATCHERS), f"{name} p{round(q * 100)} {{{{instance}}}}"
        )
        for q in (0.5, 0.99)
    )


def build_dashboard(
    title: str = "vLLM speculative decoding (specwise)", uid: str = "specwise-spec-decode"
) -> Dashboard:
    legend = "{{instance}} {{model_name}}"
    m = MATCHERS
    panels = (
        Panel(
            "Acceptance rate",
            "percentunit",
            (Target(promql.acceptance_rate(BY_INSTANCE, m), legend),),
            "accepted draft tokens / draft tokens (vLLM's definition)",
        ),
        Panel(
            "Mean acceptance length",
            "none",
            (Target(promql.mean_acceptance_length(BY_INSTANCE, m), legend),),
            "1 + accepted tokens / drafts: tokens generated per verify step",
        ),
        Panel(
            "Per-position acceptance",
            "percentunit",
            (Target(promql.per_position_acceptance(BY_INSTANCE, m), "{{instance}} position {{position}}"),),
            "accepted at position i / drafts; a collapsed tail means k is larger than useful",
        ),
        Panel("Draft tokens/s", "short", (Target(promql.draft_tokens_rate(BY_INSTANCE, m), legend),)),
        Panel(
            "Running requests",
            "short",
            (Target(promql.running(BY_INSTANCE, m), legend),),
            "the decode batch size the speculation cost depends on",
        ),
        Panel("TPOT / ITL p50 and p99", "s", _quantiles(METRICS.tpot, "TPOT") + _quantiles(METRICS.itl, "ITL")),
    )
    variables = (
        Variable("model_name", "model", f"label_values({METRICS.spec_drafts}, model_name)"),
        Variable("instance", "instance", f'label_values({METRICS.spec_drafts}{{model_name=~"$model_name"}}, instance)'),
    )
    return Dashboard(title, uid, variables, panels)


def render_dashboard(dashboard: Dashboard) -> str:
    return json.dumps(dashboard.to_dict(), indent=2, allow_nan=False) + "\n"
