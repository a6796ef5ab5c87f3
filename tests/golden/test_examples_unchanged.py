"""Every shipped example gives the same JSON as the recorded one (``tests/golden/examples``), on the roofline
predictor (the published-fit default is checked against published measurements by ``specwise validate``).

The files were written by ``specwise simulate|advise --scenario EXAMPLE --json`` before the seams refactor
(issue 12): a refactor must not move a number. Floats compare to 1e-9 relative (summation order may change);
everything else exactly. A deliberate change of output regenerates them with ``python tests/golden/regen.py``
and says why in its commit.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "examples"
CASES = sorted(p.stem for p in GOLDEN.glob("*.json"))


def command(case: str) -> list[str]:
    kind, _, name = case.partition("-")
    scenario = ROOT / "examples" / ("advise/" if kind == "advise" else "") / f"{name}.toml"
    flags = _example_flags(scenario)
    return [kind, "--scenario", str(scenario), *flags, "--json", "--processes", "1", "--predictor", "roofline"]


# the example's own command line (its first line, "# specwise KIND --scenario PATH [FLAGS]") keeps these flags: the
# ones that change the answer (--vllm-version), not where it is written
_KEPT_FLAGS = ("--vllm-version",)


def _example_flags(scenario: Path) -> list[str]:
    words = scenario.read_text().splitlines()[0].lstrip("# ").split()
    return [w for i, flag in enumerate(words) if flag in _KEPT_FLAGS for w in words[i : i + 2]]


def diff(a: Any, b: Any, path: str = "$") -> list[str]:
    """Where ``a`` and ``b`` differ (floats to 1e-9 relative)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}: keys {sorted(set(a) ^ set(b))}"] if set(a) != set(b) else []
        for key in sorted(set(a) & set(b)):
            out += diff(a[key], b[key], f"{path}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in diff(x, y, f"{path}[{i}]")]
    if isinstance(a, float) or isinstance(b, float):
        if (
            isinstance(a, int | float)
            and isinstance(b, int | float)
            and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        ):
            return []
    elif a == b:
        return []
    return [f"{path}: {a!r} != {b!r}"]


def expected_exit(doc: object) -> int:
    """advise exits 1 when its answer is "do not enable"; every other example exits 0."""
    return 1 if isinstance(doc, dict) and doc.get("decision") == "disable" else 0


@pytest.mark.parametrize("case", CASES)
def test_example_output_unchanged(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    want = json.loads((GOLDEN / f"{case}.json").read_text())
    assert main(command(case)) == expected_exit(want)
    # commands quote the scenario's path: recorded as <repo>/..., wherever the checkout is
    got = json.loads(capsys.readouterr().out.replace(str(ROOT), "<repo>"))
    differences = diff(got, want)
    assert not differences, "\n".join(differences[:20])
