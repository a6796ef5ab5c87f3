"""``specwise profile --method ngram`` says how often the lookup matched: its acceptance is per match (vLLM's
num_drafts), so without the match rate the table overstates what a lookup gives per decode step."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from specwise.contracts.profile import ProfileDoc
from specwise.report.profile import render_profile

GOLDEN = Path(__file__).parent / "profile_document_golden.json"


def _render(drafts: float, steps: float) -> str:
    data = json.loads(GOLDEN.read_text())
    data["method"], data["draft"] = "ngram", None
    for result in data["results"]:
        for row in result["by_k"]:
            row["num_drafts"], row["num_steps"] = drafts, steps
    buf = io.StringIO()
    render_profile(ProfileDoc.from_json(data), out=Console(file=buf, width=160, color_system=None))
    return buf.getvalue()


def test_the_match_rate_is_printed_for_a_lookup() -> None:
    assert "ngram match rate: 8 of 90 decode steps drafted at k=4 (9%)" in _render(8, 90)


def test_no_match_is_said() -> None:
    assert "ngram: no match in 96 decode steps at k=4: nothing was drafted" in _render(0, 96)
