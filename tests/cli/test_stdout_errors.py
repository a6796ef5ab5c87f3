"""Stdout that cannot be written (``> /dev/full``, a full disk, an I/O error) is the environment's trouble: one
line naming the output and the OS error, exit 2, as an unwritable ``--out`` path is; never "internal error ... a
bug" (review 16, finding 7). A closed pipe stays exit 0 (tests/cli/test_broken_pipe.py); an OSError of a bug
stays exit 3."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specwise.cli import main
from tests.child_env import child_env

PLAN = ["plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "L4"]
NO_SPACE = "cannot write the output: [Errno 28] No space left on device"


class _FullStream(io.StringIO):
    """A stdout on a full disk: every write fails with ENOSPC."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize(
    "argv",
    [PLAN, [*PLAN, "--json"], ["speedup", "--alpha", "0.7", "--k", "4", "--cost-ratio", "0.1", "--json"]],
    ids=["plan-memory", "plan-memory-json", "speedup-json"],
)
def test_a_full_stdout_is_one_line_exit_2(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", _FullStream())
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"specwise {argv[0]}: error: {NO_SPACE}"  # one line; not "internal error", not "a bug"


def test_an_oserror_of_a_bug_is_still_internal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only stdout's failures are the environment's: the same errno raised elsewhere is reported as a bug."""

    def broken(*_: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("specwise.cli.speedup.batch_one_speedup", broken)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the crash report lands here
    assert main(["speedup", "--alpha", "0.7", "--k", "4", "--cost-ratio", "0.1"]) == 3
    assert "internal error: OSError" in capsys.readouterr().err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_dev_full_exits_2_without_a_traceback(json_flag: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "specwise", *PLAN, *json_flag],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
            timeout=120,
            check=False,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"specwise plan-memory: error: {NO_SPACE}\n"  # nothing more as Python exits either


@pytest.mark.parametrize("argv", [["models"], PLAN], ids=["models", "plan-memory"])
def test_a_closed_stdout_is_one_line_exit_2(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Started with stdout closed (``>&-``), Python's ``sys.stdout`` is None: the first print had failed as an
    internal error (AttributeError, a crash file; first-hour audit 2026-12-07)."""
    monkeypatch.setattr(sys, "stdout", None)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"specwise {argv[0]}: error: cannot write the output: standard output is closed"


def test_a_closed_stdout_in_a_real_process() -> None:
    done = subprocess.run(
        ["sh", "-c", f'exec "{sys.executable}" -m specwise models >&-'],
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "standard output is closed" in done.stderr and "internal error" not in done.stderr
