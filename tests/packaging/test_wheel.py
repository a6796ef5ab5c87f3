"""The wheel, as a user outside the repository gets it (issue 14): built from the checkout, installed alone
(with its dependencies from the package index) into a fresh venv in a temporary directory, and the README's
console examples run from there, as written.

Core install first: what the README runs needs no extra except ``--report`` / ``--plot``, which must say
``pip install 'specwise[report]'`` in one line (exit 2). Then the ``report`` extra is added and those run too.
The ``specwise examples`` lines run first (the README's wheel route copies the shipped examples before the
commands that read ``examples/...``). Slow tier: a wheel build and two installs (~1 minute with a warm pip
cache) and every fast README example (~1-2 minutes on 2 cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.readme_examples import ROOT, Example, examples, normalise

pytestmark = [pytest.mark.slow]

NEEDS_REPORT = ("--report", "--plot")
OPTIONAL = ("matplotlib", "tokenizers", "torch", "transformers")


def _sh(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.args}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _site_packages_bytes(venv: Path) -> int:
    (site,) = venv.glob("lib/python*/site-packages")
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file() and not p.is_symlink())


def _check(example: Example, proc: subprocess.CompletedProcess[str]) -> None:
    where = f"README line {example.line}: {example.command}"
    assert proc.returncode == example.exit_code, f"{where}\nexit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr, where
    printed = normalise(proc.stdout + "\n" + proc.stderr)
    missing = [s for s in example.shown if normalise(s) not in printed]
    assert not missing, f"{where}\nnot printed: {missing}\n--- printed:\n{proc.stdout[-3000:]}"


def test_readme_examples_run_from_a_venv_holding_only_the_wheel(tmp_path: Path) -> None:
    # a clean environment: nothing of the checkout (no PYTHONPATH to src/), outputs at the README's width
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(COLUMNS="120", NO_COLOR="1", TERM="dumb", XDG_CACHE_HOME=str(tmp_path / "cache"))
    dist, venv, work = tmp_path / "dist", tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    _ok(_sh([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)], tmp_path, env))
    (wheel,) = dist.glob("specwise-*.whl")
    _ok(_sh([sys.executable, "-m", "venv", str(venv)], tmp_path, env))
    pip, specwise = [str(venv / "bin" / "python"), "-m", "pip"], str(venv / "bin" / "specwise")
    empty = _site_packages_bytes(venv)
    _ok(_sh([*pip, "install", "-q", str(wheel)], tmp_path, env))
    installed = {d["name"].lower() for d in json.loads(_ok(_sh([*pip, "list", "--format", "json"], work, env)))}
    assert not installed & set(OPTIONAL), "an optional extra is installed by the core wheel"
    core_bytes = _site_packages_bytes(venv) - empty
    print(f"wheel {wheel.stat().st_size:,} bytes; core install {core_bytes / 2**20:.0f} MiB")
    assert core_bytes < 160 * 2**20  # was ~245 MiB with matplotlib and tokenizers (issue 14)

    readme = [e for e in examples() if e.needs == "fast"]
    copy_first = [e for e in readme if e.argv[0] == "examples"]
    assert copy_first, "the README shows no 'specwise examples --copy' for the wheel route"
    for example in [*copy_first, *(e for e in readme if e not in copy_first)]:
        proc = _sh([specwise, *example.argv], work, env)
        if any(flag in example.argv for flag in NEEDS_REPORT):
            assert proc.returncode == 2, f"README line {example.line}: {proc.stderr}"
            assert proc.stderr.strip().endswith("pip install 'specwise[report]'"), proc.stderr
        else:
            _check(example, proc)

    _ok(_sh([*pip, "install", "-q", f"{wheel}[report]"], tmp_path, env))
    print(f"core + report install {(_site_packages_bytes(venv) - empty) / 2**20:.0f} MiB")
    for example in (e for e in readme if any(flag in e.argv for flag in NEEDS_REPORT)):
        _check(example, _sh([specwise, *example.argv], work, env))
    assert (work / "out" / "advise.html").stat().st_size > 10_000
