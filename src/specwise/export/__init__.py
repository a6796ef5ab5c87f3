"""Rules and dashboards as code for a fleet of vLLM servers: Prometheus recording and alerting rules, and a
Grafana dashboard, over the same PromQL (pure: frozen dataclasses in, text out; the CLI writes the files)."""

from specwise.export.grafana import PanelSpec, build_dashboard, panel_specs, render_dashboard
from specwise.export.rules import (
    AlertRule,
    RecordingRule,
    RuleGroup,
    SlowdownBand,
    build_rule_groups,
    render_rules,
    slowdown_bands,
)

__all__ = [
    "AlertRule",
    "PanelSpec",
    "RecordingRule",
    "RuleGroup",
    "SlowdownBand",
    "build_dashboard",
    "build_rule_groups",
    "panel_specs",
    "render_dashboard",
    "render_rules",
    "slowdown_bands",
]
