"""Simulation scenarios: a TOML file, validated into frozen dataclasses with errors naming the field."""

from specwise.scenario.model import Scenario, SweepSpec
from specwise.scenario.toml_loader import load_scenario, parse_scenario

__all__ = ["Scenario", "SweepSpec", "load_scenario", "parse_scenario"]
