"""Every console example in the README, run as written (issue 17).

Fast tier: every ``$ specwise`` line parses with the real argument parser (no stale flag survives), and the
examples that need nothing beyond the package run in a scratch directory holding the repository's examples,
with the exit status and the output lines the README shows. Slow tier: the examples that need the SmolLM2
weights (``make models``) or Ray (``pip install 'specwise[ray]'``). Examples that need the reader's own server
or Ray cluster, or the 1.6 GB Qwen pair, are parse-only.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specwise.cli import build_parser
from tests.missing import VLLM, missing_dependency
from tests.readme_examples import ROOT, Example, examples, normalise

ALL = examples()


def test_the_readme_has_examples_of_every_kind() -> None:
    assert len(ALL) >= 20
    assert {e.needs for e in ALL} == {"fast", "models", "parse", "ray"}
    commands = {e.argv[0] for e in ALL}
    assert {"advise", "simulate", "plan-memory", "profile", "bench", "monitor", "validate", "inspect"} <= commands


@pytest.mark.parametrize("example", ALL, ids=[e.id for e in ALL])
def test_every_example_parses(example: Example) -> None:
    try:
        build_parser().parse_args(list(example.argv))
    except SystemExit as exc:  # argparse's --help / version
        assert exc.code == 0
    except Exception as exc:  # the project's Parser raises UsageError
        pytest.fail(f"README line {example.line}: {example.command}\n{exc}")


def _workdir(tmp_path: Path) -> Path:
    """A scratch copy of what the examples read (examples/; models/ and .venv-vllm/ when built), so outputs land
    there and not in the checkout."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for built in ("models", ".venv-vllm"):  # what make models builds; launch files name them relative to examples/
        if (ROOT / built).is_dir():
            (tmp_path / built).symlink_to(ROOT / built)
    return tmp_path


def _run(example: Example, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-m", "specwise.cli", *example.argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def _check(example: Example, proc: subprocess.CompletedProcess[str]) -> None:
    where = f"README line {example.line}: {example.command}"
    assert proc.returncode == example.exit_code, f"{where}\nexit {proc.returncode}\n{proc.stderr[-2000:]}"
    printed = normalise(proc.stdout + "\n" + proc.stderr)
    missing = [s for s in example.shown if normalise(s) not in printed]
    assert not missing, f"{where}\nnot printed: {missing}\n--- printed:\n{proc.stdout[-3000:]}"


FAST = [e for e in ALL if e.needs == "fast"]
MODELS = [e for e in ALL if e.needs == "models"]
RAY = [e for e in ALL if e.needs == "ray"]


@pytest.mark.parametrize("example", FAST, ids=[e.id for e in FAST])
def test_example_runs_as_written(example: Example, tmp_path: Path) -> None:
    _check(example, _run(example, _workdir(tmp_path)))


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("example", MODELS, ids=[e.id for e in MODELS])
def test_example_with_models_runs_as_written(example: Example, tmp_path: Path) -> None:
    if not (ROOT / "models" / "smollm2-135m").is_dir():
        missing_dependency("models/ is missing: run 'make models'", VLLM)
    _check(example, _run(example, _workdir(tmp_path)))


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("example", RAY, ids=[e.id for e in RAY])
def test_example_on_ray_runs_as_written(example: Example, tmp_path: Path) -> None:
    if importlib.util.find_spec("ray") is None:
        missing_dependency("ray is not installed: pip install 'specwise[ray]' (make install installs it)")
    _check(example, _run(example, _workdir(tmp_path)))


def test_the_parser_reads_the_conventions() -> None:
    text = (
        "```console\n$ specwise plan-memory --target m \\\n    --gpu H100  # exit 1\ndoes not fit\n...\n"
        "$ make models\n$ specwise models --json   # the catalog\n```\n```\n$ specwise not-console\n```\n"
    )
    got = examples(text)
    assert [(e.argv, e.exit_code, e.shown) for e in got] == [
        (("plan-memory", "--target", "m", "--gpu", "H100"), 1, ("does not fit",)),
        (("models", "--json"), 0, ()),
    ]


def test_the_prometheus_query_count_is_the_families_queried() -> None:
    """Review s60: the README said 8 queries after the V0 emitted-tokens family made them 9."""
    from specwise.monitor.fleet import FAMILIES
    from tests.readme_examples import README

    text = " ".join(README.read_text().split())
    assert f"grouped `by (model_name, instance)`: {len(FAMILIES)} queries whatever the fleet's size" in text
