"""``specwise completion``: the scripts are made from the parser; the bash one is valid bash and completes command
names, options and option values when bash's own completion machinery calls it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specwise.cli import build_parser, main

_DRIVER = """
source "$1"
t() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _specwise; echo "${COMPREPLY[*]}"; }
complete -p specwise
t specwise adv
t specwise advise --sce
t specwise simulate --metric ""
t specwise export ""
t specwise export prometheus-rules --pred
t specwise -v dr
t specwise completion ""
"""


def _script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_script_is_valid_and_completes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "specwise.bash"
    script.write_text(_script("bash", capsys))
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
    driver = tmp_path / "driver.sh"
    driver.write_text(_DRIVER)
    out = subprocess.run(
        ["bash", str(driver), str(script)], capture_output=True, text=True, timeout=30, check=True
    ).stdout.splitlines()
    assert out == [
        "complete -o filenames -F _specwise specwise",
        "advise",
        "--scenario",
        "e2e tpot throughput goodput",
        "prometheus-rules grafana",
        "--predictor",
        "drafts",
        "bash fish zsh",
    ]


def test_every_command_is_in_every_script(capsys: pytest.CaptureFixture[str]) -> None:
    commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert {"advise", "examples", "drafts", "completion"} <= commands
    for shell in ("bash", "zsh", "fish"):
        text = _script(shell, capsys)
        assert all(name in text for name in commands), shell
    assert "bashcompinit" in _script("zsh", capsys)
    fish = _script("fish", capsys)
    assert (
        "complete -c specwise -n '__fish_seen_subcommand_from simulate' -l metric -xa 'e2e tpot throughput goodput'"
        in fish
    )
    assert main(["completion", "powershell"]) == 2


def test_the_script_runs_from_a_fresh_interpreter() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "specwise.cli", "completion", "bash"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.startswith("# bash completion for specwise")


_CATALOG_DRIVER = """
source "$1"
t() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _specwise; echo "${COMPREPLY[*]}"; }
t specwise drafts --gpu H1
t specwise plan-memory --target x --gpu L4
t specwise examples advise/summ
t specwise examples advise/summarize-low-qps --co
t specwise simulate --scenario zzz-no-such-file
t specwise drafts --gpu h1
t specwise advise --scenario example : advise/summ
t specwise advise --scenario example :
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_gpu_and_example_names_complete_from_the_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review D, finding 9: ``--gpu`` and ``examples NAME`` offered the working directory's files."""
    script = tmp_path / "specwise.bash"
    script.write_text(_script("bash", capsys))
    driver = tmp_path / "driver.sh"
    driver.write_text(_CATALOG_DRIVER)
    out = subprocess.run(
        ["bash", str(driver), str(script)], capture_output=True, text=True, timeout=30, check=True, cwd=tmp_path
    ).stdout.splitlines()
    assert out[0].split() == ["H100-SXM-80GB", "H100-PCIe-80GB", "H100-NVL"]
    assert out[1].split() == ["L4", "L40S"]
    assert out[2].split() == ["advise/summarize-high-qps", "advise/summarize-low-qps"]
    assert out[3] == "--copy"  # options still complete after NAME
    assert out[4] == ""  # a free value elsewhere still completes files (none match here)
    assert out[5].split() == ["H100-SXM-80GB", "H100-PCIe-80GB", "H100-NVL"]  # case-insensitive, as --gpu reads it
    assert out[6].split() == ["advise/summarize-high-qps", "advise/summarize-low-qps"]  # example:NAME (review s45c)
    assert "advise/summarize-low-qps" in out[7].split() and "llama70b-ngram" in out[7].split()
    fish = _script("fish", capsys)
    assert "advise/summarize-low-qps" in fish and "-l gpu -xa" in fish
