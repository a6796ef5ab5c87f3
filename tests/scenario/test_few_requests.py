"""A sweep of very few requests per (QPS, k) cell is warned about: its percentiles are noise the band omits."""

from __future__ import annotations

import re
from pathlib import Path

from specwise.examples import example_path
from specwise.scenario.build import FEW_REQUESTS
from specwise.scenario.toml_loader import load_scenario


def test_few_requests_per_cell_are_warned_about(tmp_path: Path) -> None:
    shipped = example_path("example:llama70b-ngram")
    few = tmp_path / "few.toml"
    few.write_text(re.sub(r"num_requests = \d+", "num_requests = 5", shipped.read_text()))
    warned = [w for w in load_scenario(few).warnings if "num_requests = 5" in w]
    assert len(warned) == 1 and f"use {FEW_REQUESTS} or more" in warned[0]
    assert not [w for w in load_scenario(shipped).warnings if "num_requests" in w]
