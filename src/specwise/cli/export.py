"""``specwise export``: rules and dashboards as code for a fleet of vLLM servers.

* ``prometheus-rules``: recording rules (acceptance rate, mean acceptance length, per-position acceptance, draft
  tokens/s, by model_name and by instance) and alerts (low acceptance, AL collapse; with ``--scenario``, the perf
  model's predicted net slowdown above a batch size), for Prometheus' ``rule_files``.
* ``grafana``: a dashboard JSON with ``$model_name`` / ``$instance`` variables.

``--out -`` (or no ``--out``) prints to stdout; a file is written atomically.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from specwise.cli.common import (
    EXIT_OK,
    add_predictor_flags,
    alert_rate,
    non_empty,
    path_text,
    positive_float,
    positive_int,
    predictor_override,
    prometheus_duration,
    refuse_without_scenario,
    scenario_file,
)
from specwise.export.grafana import DASHBOARD_UID, build_dashboard, render_dashboard
from specwise.export.rules import FOR, GENERATED_MARK, MIN_DRAFTS, build_rule_groups, provenance, render_rules
from specwise.fileio import check_output_file, refuse_a_foreign_file, write_text_atomic


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write Prometheus rules or a Grafana dashboard for speculative decoding across a fleet",
        description="Rules and dashboards as code: the monitor's checks as Prometheus recording/alerting rules, "
        "and a Grafana dashboard, over vLLM's spec-decode metrics.",
    )
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True, parser_class=type(p))
    rules = kinds.add_parser(
        "prometheus-rules",
        help="a Prometheus rules YAML (check it with: promtool check rules FILE)",
        description="Recording rules by model_name and by instance, and alerts: low acceptance, acceptance-length "
        "collapse, and with --scenario the perf model's predicted net slowdown above a batch size.",
    )
    rules.add_argument(
        "--scenario",
        type=scenario_file,
        metavar="FILE",
        help="a simulate scenario of this deployment: alert when the running batch passes the size above which "
        "its perf model predicts speculation costs TPOT",
    )
    rules.add_argument(
        "--k", type=positive_int, help="with --scenario: the deployed k, one the scenario models (default: its largest)"
    )
    rules.add_argument(
        "--model-name",
        type=non_empty,
        metavar="NAME",
        help="with --scenario: the model_name label of the replicas it describes (vllm serve --served-model-name; "
        "default: the scenario's target); the slowdown alerts fire for those only",
    )
    rules.add_argument(
        "--min-acceptance", type=alert_rate, default=0.5, help="alert below this rate, in (0, 1) (default 0.5)"
    )
    rules.add_argument(
        "--min-drafts",
        type=positive_float,  # monitor --min-drafts' check: a guard of 0 drafts guards nothing
        default=MIN_DRAFTS,
        help=f"every alert needs this many drafts per 5 minutes on the replica (default {MIN_DRAFTS}): a few drafts "
        "judge nothing",
    )
    rules.add_argument(
        "--for",
        dest="for_",
        type=prometheus_duration,
        default=FOR,
        metavar="DURATION",
        help=f"how long a condition must hold before its alert fires (default {FOR}; e.g. 30s in a test setup; a bare "
        "number is seconds)",
    )
    add_predictor_flags(rules)
    _out_flag(rules)
    rules.set_defaults(handler=run_rules)
    grafana = kinds.add_parser(
        "grafana",
        help="a Grafana dashboard JSON",
        description="Panels: acceptance rate, mean acceptance length, per-position acceptance, draft tokens/s, "
        "running requests, TPOT/ITL p50/p99; variables $model_name and $instance.",
    )
    _out_flag(grafana)
    grafana.set_defaults(handler=run_grafana)


def _out_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=path_text, default="-", metavar="FILE", help="write here (default: - for stdout)")


def _our_rules(text: str) -> bool:
    """A rules file export wrote: its first line is the generator's mark."""
    return text.startswith(GENERATED_MARK)


def _our_dashboard(text: str) -> bool:
    """A dashboard export wrote: a JSON object whose top-level ``uid`` is specwise's."""
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("uid") == DASHBOARD_UID


def _emit(out: str, text: str) -> int:
    if out == "-":
        sys.stdout.write(text)
    else:
        write_text_atomic(Path(out), text)
        print(f"wrote {out}", file=sys.stderr)  # a file written says so (review s47b F7); stdout stays the file's
    return EXIT_OK


def run_rules(args: argparse.Namespace) -> int:
    if args.out != "-":
        check_output_file(Path(args.out), [("--scenario", args.scenario)])
        refuse_a_foreign_file(args.out, _our_rules)
    refuse_without_scenario(args, extra=("model_name",))
    slowdown = None
    name = None
    header: tuple[str, ...] = ()
    if args.scenario is not None:
        from specwise.monitor.predicted import check_modelled_k, slowdown_model
        from specwise.scenario import load_scenario

        choice = predictor_override(args)
        scenario = load_scenario(args.scenario, choice, reader="export prometheus-rules --scenario")
        check_modelled_k(args.k, scenario.sweep.k_values)
        slowdown, name = slowdown_model(scenario, args.k), args.model_name or scenario.target.name
        header = provenance(scenario.models, choice.calibration if choice else None, scenario.limit_notes())
        for note in (*scenario.models.notes, *scenario.limit_notes()):  # other hardware, beyond the range
            print(f"warning: {note}", file=sys.stderr)
    groups = build_rule_groups(args.min_acceptance, slowdown, args.for_, name, args.min_drafts)
    return _emit(args.out, render_rules(groups, header))


def run_grafana(args: argparse.Namespace) -> int:
    if args.out != "-":
        check_output_file(Path(args.out))
        refuse_a_foreign_file(args.out, _our_dashboard)
    return _emit(args.out, render_dashboard(build_dashboard()))
