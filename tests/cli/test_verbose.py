"""``-v`` says something (a first-hour review: it logged nothing, and ``plan-memory ... -v`` was refused): the
command, the predictor and band each scenario is priced with, each sweep's size and time, the exit; given before or
after the command; nothing without it."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from specwise.cli import build_parser, main


def _stderr(*argv: str) -> str:
    cmd = [sys.executable, "-m", "specwise.cli", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False).stderr


def test_verbose_before_or_after_the_command() -> None:
    before = _stderr("-v", "plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100")
    after = _stderr("plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "-v")
    for err in (before, after):
        assert "DEBUG specwise: specwise plan-memory (specwise " in err
        assert "DEBUG specwise: specwise plan-memory: exit 0 after " in err
    assert _stderr("plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100") == ""


def test_verbose_says_the_predictor_and_the_sweep(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="specwise"):
        assert main(["advise", "example:advise/int4-target", "--processes", "1", "-v", "--json"]) == 0
    said = [r.getMessage() for r in caplog.records]
    assert any(
        m.startswith("meta-llama/Llama-3.1-70B-Instruct on 1 x H100-SXM-80GB, draft_model with ")
        and ": predictor published-fit (vllm-v1), band +-26% (" in m
        for m in said
    ), said
    assert any("simulations (" in m and "requests each) in " in m for m in said), said
    assert logging.getLogger("specwise").level == logging.NOTSET  # as it was before main ran


def test_every_subcommand_takes_it() -> None:
    parser = build_parser()
    for argv in (["gpus", "-v"], ["export", "grafana", "--out", "x", "-v"], ["validate", "--verbose"]):
        assert parser.parse_args(argv).verbose is True
    assert parser.parse_args(["gpus"]).verbose is False
