"""Read a scenario TOML file: parse (``scenario/parse.py``) then build (``scenario/build.py``).

Every error is one line naming the file and the field, e.g.
``scenario.toml: [[workload]] #2 'chat'.acceptance: must be <= 1.0, got 1.3``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from specwise.errors import NegativeAnswer, SpecwiseError
from specwise.fileio import read_text_bounded
from specwise.perfmodel.factory import PredictorChoice
from specwise.scenario.build import build_scenario
from specwise.scenario.model import DeploymentSpec, Scenario, ScenarioSpec
from specwise.scenario.parse import parse_scenario_spec

MAX_TOML_BYTES = 4 * 2**20  # a scenario is a page of settings, not megabytes


def source_name(path: Path) -> str:
    """How messages name a scenario file: ``example:NAME`` for a file shipped in the package (what the user gave;
    its installed path -- in a wheel, somewhere in site-packages -- means nothing to them), else the path."""
    from specwise.examples import EXAMPLE_PREFIX, root

    try:
        shipped = path.relative_to(Path(str(root())))
    except ValueError:
        return str(path)
    return EXAMPLE_PREFIX + shipped.as_posix().removesuffix(".toml")


def read_toml(path: Path, what: str = "scenario") -> dict[str, Any]:
    """A TOML file as a table; missing, unreadable, oversized or malformed files are one line naming the file."""
    text = read_text_bounded(path, MAX_TOML_BYTES, what)  # a BOM (Windows editors) is dropped: it is not TOML
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecwiseError(f"{source_name(path)}: invalid TOML: {exc}") from None
    except RecursionError:
        raise SpecwiseError(f"{source_name(path)}: invalid TOML: nested too deeply") from None


def load_scenario(path: Path, predictor: PredictorChoice | None = None, reader: str = "simulate") -> Scenario:
    """``reader``: the command reading the file, as its errors name it (``export prometheus-rules --scenario``)."""
    data, file = read_toml(path), source_name(path)
    try:
        return parse_scenario(data, file=file, base_dir=path.parent, predictor=predictor, reader=reader)
    except NegativeAnswer as exc:  # simulate's answer is "no" (vLLM would not start it); for export and monitor
        if reader == "simulate":  # the scenario is an input to something else: an input error there
            raise
        raise SpecwiseError(str(exc)) from None


def load_scenario_spec(path: Path, reader: str = "simulate") -> ScenarioSpec:
    """The simulate scenario in ``path`` as written, parsed but not built (no memory plan, nothing simulated)."""
    return parse_scenario_spec(read_toml(path), file=source_name(path), base_dir=path.parent, reader=reader)


def parse_scenario(
    data: Mapping[str, Any],
    *,
    file: str = "scenario",
    base_dir: Path | None = None,
    predictor: PredictorChoice | None = None,
    reader: str = "simulate",
) -> Scenario:
    """Parse and build; ``predictor`` (a command-line choice) replaces the scenario's own."""
    spec = parse_scenario_spec(data, file=file, base_dir=base_dir, reader=reader)
    if predictor is not None:
        note = override_note(spec.deployment, predictor)
        notes = (*spec.notes, note) if note else spec.notes
        spec = replace(spec, deployment=with_predictor(spec.deployment, predictor), notes=notes)
    return build_scenario(spec)


def override_note(dep: DeploymentSpec, choice: PredictorChoice, flag: str = "--predictor/--calibration") -> str | None:
    """What a command-line predictor replaces, when the scenario named one of its own (``[deployment]
    .calibration`` or ``.predictor``): said beside the result, not silently dropped (the same two choices in one
    file, or on one command line, are refused as a conflict); None when the scenario named none or the same."""
    own = dep.predictor
    if own.calibration_path is None and own.kind == "published-fit":
        return None  # the scenario took the default
    if own.kind == choice.kind and own.calibration_path == choice.calibration_path:
        return None
    theirs = f"[deployment].calibration = {str(own.calibration_path)!r}" if own.calibration_path else own.kind
    mine = f"the calibration {str(choice.calibration_path)!r}" if choice.calibration_path else f"the {choice.kind}"
    return f"{flag}: simulated with {mine}, not the scenario's {theirs}"


def with_predictor(dep: DeploymentSpec, choice: PredictorChoice) -> DeploymentSpec:
    """The deployment simulated with another predictor, keeping its engine and version."""
    return replace(dep, predictor=replace(choice, engine=dep.engine, engine_version=dep.engine_version))
