"""torch threads follow the cores this process may run on, or --threads."""

from __future__ import annotations

import os

import pytest
import torch

from specwise.cli import main
from specwise.profiler.threads import available_cores, configure_threads


def test_threads_default_to_the_affinity_and_follow_the_flag() -> None:
    before = torch.get_num_threads()
    try:
        assert available_cores() == len(os.sched_getaffinity(0))
        assert configure_threads() == available_cores() == torch.get_num_threads()
        assert configure_threads(1) == 1 == torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def test_profile_has_a_threads_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["profile", "--help"])
    assert "--threads N" in capsys.readouterr().out
    assert main(["profile", "--target", "x", "--method", "ngram", "--prompts", "builtin:qa", "--threads", "0"]) == 2
