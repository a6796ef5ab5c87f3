"""Scenarios: a TOML file parsed into a spec (names, as written) and built into a scenario (catalog resolved,
memory planned, step-time models chosen), with errors naming the file and the field."""

from specwise.scenario.build import build_scenario
from specwise.scenario.model import Scenario, ScenarioSpec, SweepSpec
from specwise.scenario.parse import parse_scenario_spec
from specwise.scenario.toml_loader import load_scenario, parse_scenario, read_toml

__all__ = [
    "Scenario",
    "ScenarioSpec",
    "SweepSpec",
    "build_scenario",
    "load_scenario",
    "parse_scenario",
    "parse_scenario_spec",
    "read_toml",
]
