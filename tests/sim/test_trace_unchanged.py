"""Every recorded simulator trace (``tests/sim/trace_cases.py``) is reproduced: integers exactly, floats to 1e-9
relative. Recorded before the speed work of issue 16; ``python tests/sim/regen_traces.py`` rewrites them (say why
in the commit).

Each case runs four ways: as shipped (the scalar path for small batches, the vector path for large ones), on the
scalar path only, on the vector path only, and switching between them every few requests -- the path changes the
speed, never the trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.sim import engine
from tests.golden.test_examples_unchanged import diff
from tests.sim.trace_cases import CASES, fingerprint

GOLDEN = Path(__file__).parent / "golden" / "traces.json"


@pytest.fixture(scope="module")
def recorded() -> dict[str, object]:
    data: dict[str, object] = json.loads(GOLDEN.read_text())
    return data


def test_every_case_is_recorded(recorded: dict[str, object]) -> None:
    assert sorted(recorded) == sorted(CASES)


# (SCALAR_MAX_BATCH, SCALAR_RESUME_BATCH) per way of running
PATHS = {"shipped": None, "scalar": (10**9, 10**9), "vector": (-1, -1), "switching": (3, 1)}


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_trace_unchanged(case: str, path: str, recorded: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    limits = PATHS[path]
    if limits is not None:
        monkeypatch.setattr(engine, "SCALAR_MAX_BATCH", limits[0])
        monkeypatch.setattr(engine, "SCALAR_RESUME_BATCH", limits[1])
    got = json.loads(json.dumps(fingerprint(CASES[case]().run())))
    differences = diff(got, recorded[case], f"${case}")
    assert not differences, "\n".join(differences[:20])
