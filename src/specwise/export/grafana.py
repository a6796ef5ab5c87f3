"""A Grafana dashboard for speculative decoding across a fleet (``specwise export grafana``): acceptance rate, mean
acceptance length, per-position acceptance, draft tokens/s, running requests and TPOT/ITL quantiles, with
``$model_name`` and ``$instance`` template variables.

The panels' content (title, unit, PromQL, description) is specwise's, in the typed ``PanelSpec`` below; the
dashboard document is built with Grafana's own grafana-foundation-sdk (https://github.com/grafana/grafana-foundation-sdk,
builders over Grafana's dashboard JSON model), so its shape is Grafana's rather than hand-written JSON. Grafana
imports it as is (Dashboards -> Import, or file provisioning).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dashboard_builders
from grafana_foundation_sdk.builders import prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model

from specwise.engines.vllm import METRICS
from specwise.export import promql
from specwise.export.promql import BY_INSTANCE

MATCHERS = 'model_name=~"$model_name", instance=~"$instance"'
DATASOURCE = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
PANEL_HEIGHT, PANEL_WIDTH = 8, 12  # two panels per row on Grafana's 24-column grid


@dataclass(frozen=True)
class Target:
    expr: str
    legend: str


@dataclass(frozen=True)
class PanelSpec:
    title: str
    unit: str
    targets: tuple[Target, ...]
    description: str = ""


DASHBOARD_UID = "specwise-spec-decode"  # in the file export --out writes, and rewrites


def _panel(spec: PanelSpec, panel_id: int) -> timeseries.Panel:
    col, row = panel_id % 2, panel_id // 2
    panel = (
        timeseries.Panel()
        .id(panel_id + 1)
        .title(spec.title)
        .description(spec.description)
        .datasource(DATASOURCE)
        .unit(spec.unit)
        .grid_pos(model.GridPos(h=PANEL_HEIGHT, w=PANEL_WIDTH, x=PANEL_WIDTH * col, y=PANEL_HEIGHT * row))
        .legend(
            common_builders.VizLegendOptions()
            .display_mode(common.LegendDisplayMode.LIST)
            .placement(common.LegendPlacement.BOTTOM)
            .show_legend(True)
        )
        .tooltip(common_builders.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI))
    )
    for i, t in enumerate(spec.targets):
        query = prometheus.Dataquery().ref_id(chr(ord("A") + i)).expr(t.expr).legend_format(t.legend)
        panel = panel.with_target(query.datasource(DATASOURCE))
    return panel


def _variable(name: str, label: str, query: str) -> dashboard_builders.QueryVariable:
    return (
        dashboard_builders.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query({"query": query, "refId": f"{name}-query"})
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .include_all(True)
        .multi(True)
        .all_value(".*")
        .sort(model.VariableSort.ALPHABETICAL_ASC)
    )


def _quantiles(histogram: str, name: str) -> tuple[Target, ...]:
    return tuple(
        Target(
            promql.histogram_quantile(q, histogram, BY_INSTANCE, MATCHERS), f"{name} p{round(q * 100)} {{{{instance}}}}"
        )
        for q in (0.5, 0.99)
    )


def panel_specs() -> tuple[PanelSpec, ...]:
    legend = "{{instance}} {{model_name}}"
    m = MATCHERS
    return (
        PanelSpec(
            "Acceptance rate",
            "percentunit",
            (Target(promql.acceptance_rate(BY_INSTANCE, m), legend),),
            "accepted draft tokens / draft tokens (vLLM's definition)",
        ),
        PanelSpec(
            "Mean acceptance length",
            "none",
            (Target(promql.mean_acceptance_length(BY_INSTANCE, m), legend),),
            "1 + accepted tokens / drafts: tokens generated per verify step",
        ),
        PanelSpec(
            "Per-position acceptance",
            "percentunit",
            (Target(promql.per_position_acceptance(BY_INSTANCE, m), "{{instance}} position {{position}}"),),
            "accepted at position i / drafts; a collapsed tail means k is larger than useful",
        ),
        PanelSpec("Draft tokens/s", "short", (Target(promql.draft_tokens_rate(BY_INSTANCE, m), legend),)),
        PanelSpec(
            "Running requests",
            "short",
            (Target(promql.running(BY_INSTANCE, m), legend),),
            "the decode batch size the speculation cost depends on",
        ),
        PanelSpec("TPOT / ITL p50 and p99", "s", _quantiles(METRICS.tpot, "TPOT") + _quantiles(METRICS.itl, "ITL")),
    )


def build_dashboard(title: str = "vLLM speculative decoding (specwise)", uid: str = DASHBOARD_UID) -> model.Dashboard:
    builder = (
        dashboard_builders.Dashboard(title)
        .uid(uid)
        .tags(["vllm", "speculative-decoding", "specwise"])
        .editable()
        .time("now-6h", "now")
        .refresh("30s")
        .with_variable(dashboard_builders.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
        # the pickers read the draft-token counter, which vLLM V1 before 0.8.5 exports too (it has no drafts counter)
        .with_variable(_variable("model_name", "model", f"label_values({METRICS.spec_draft_tokens}, model_name)"))
        .with_variable(
            _variable(
                "instance",
                "instance",
                f'label_values({METRICS.spec_draft_tokens}{{model_name=~"$model_name"}}, instance)',
            )
        )
    )
    for i, spec in enumerate(panel_specs()):
        builder = builder.with_panel(_panel(spec, i))
    return builder.build()


def render_dashboard(dashboard: model.Dashboard) -> str:
    return json.dumps(dashboard, cls=JSONEncoder, indent=2, allow_nan=False) + "\n"
