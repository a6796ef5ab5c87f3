"""The hardening table as tests: the named cases of issue 13 in the default tier; the full mutation table (~1,800
invocations, each bounded in time and address space, two workers) in the slow tier."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.hardening.cases import Case, all_cases, flag_cases
from tests.hardening.harness import run_case
from tests.hardening.table import verdict

ROOT = Path(__file__).resolve().parents[2]

# Mutations named in issue 13, by (group, case name): each must be refused with one line (exit 2).
NAMED = {
    ("simulate TOML", "workload.0.share=inf"),
    ("simulate TOML", "sweep.seed=inf"),
    ("simulate TOML", "sweep.burstiness_cv=inf"),
    ("simulate TOML", "sweep.num_requests=huge"),
    ("simulate TOML", "workload.0.temperature=string"),
    ("advise TOML", "advise.min_speedup=nan"),
    ("advise TOML", "sweep.qps=inf"),
    ("advise TOML", "workload.0.temperature=string"),
    ("advise TOML", "sweep.num_requests=huge"),
    ("config.json", "num_hidden_layers=huge"),
    ("config.json", "hidden_size=huge"),
    ("advise --profile JSON", "results=string"),
    ("advise --profile JSON", "results.0.per_position_acceptance=table"),
    ("advise --profile JSON", "method=missing"),
    ("advise --bench JSON", "configs.1.speculative_config.prompt_lookup_min=inf"),
    ("advise --bench JSON", "configs=table"),
}
NAMED_GROUPS = ("wrong document kind", "scenario file", "advise file", "--profile file", "--bench file", "output path")


def _named(root: Path) -> list[Case]:
    cases = all_cases(root)
    picked = [c for c in cases if (c.group, c.name) in NAMED or c.group in NAMED_GROUPS]
    found = {(c.group, c.name) for c in picked}
    assert found >= NAMED, f"named cases missing from the table: {sorted(NAMED - found)}"
    return picked + [c for c in flag_cases() if c.argv[0] not in ("monitor", "profile")]


def test_the_table_is_large_enough(tmp_path: Path) -> None:
    assert len(all_cases(tmp_path)) >= 200


def test_named_cases_are_refused_cleanly(tmp_path: Path) -> None:
    findings = []
    for case in _named(tmp_path):
        expect = 2 if (case.group, case.name) in NAMED else case.expect
        out = run_case(case.name, list(case.argv), limit_memory=False)
        why = verdict(Case(case.group, case.name, case.argv, expect, case.fragment), out)
        if why:
            findings.append(f"[{case.group}] {case.name}: {why}")
    assert not findings, "\n".join(findings)


@pytest.mark.slow
def test_full_mutation_table_is_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.hardening.table"], cwd=ROOT, capture_output=True, text=True, timeout=2400
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
