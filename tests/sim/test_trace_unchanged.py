"""Every recorded simulator trace (``tests/sim/trace_cases.py``) is reproduced: integers exactly, floats to 1e-9
relative. Recorded before the speed work of issue 16; ``python tests/sim/regen_traces.py`` rewrites them (say why
in the commit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.golden.test_examples_unchanged import diff
from tests.sim.trace_cases import CASES, fingerprint

GOLDEN = Path(__file__).parent / "golden" / "traces.json"


@pytest.fixture(scope="module")
def recorded() -> dict[str, object]:
    data: dict[str, object] = json.loads(GOLDEN.read_text())
    return data


def test_every_case_is_recorded(recorded: dict[str, object]) -> None:
    assert sorted(recorded) == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_trace_unchanged(case: str, recorded: dict[str, object]) -> None:
    got = json.loads(json.dumps(fingerprint(CASES[case]().run())))
    differences = diff(got, recorded[case], f"${case}")
    assert not differences, "\n".join(differences[:20])
