"""An n-gram candidate priced with the assumed match rate (SpecDecode-Bench's traces, prompt_lookup 3-7) whose
config runs another window says so (review s60: the config wrote vLLM's default 5-5 beside a price for 3-7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.advisor.evidence import resolve_evidence, window_note
from specwise.advisor.inputs import load_inputs

SCENARIO = """
name = "window"
[deployment]
target = "meta-llama/Llama-3.1-8B-Instruct"
gpu = "H100-SXM-80GB"
[advise]
operating_qps = 2
[sweep]
qps = [2]
[[workload]]
name = "summ"
task = "summarization"
prompt_tokens = 2000
output_tokens = 200
[[candidate]]
method = "ngram"
k = [4]
{window}
"""


@pytest.mark.parametrize(
    ("window", "says"),
    [
        ("", "the config runs 5-5 (also vLLM's default, taken where the candidate gives none), which"),
        ("prompt_lookup_min = 2\nprompt_lookup_max = 4", "the config runs 2-4, which matches"),
        ("prompt_lookup_min = 3\nprompt_lookup_max = 7", None),
    ],
)
def test_a_window_other_than_the_priced_one_is_said(tmp_path: Path, window: str, says: str | None) -> None:
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(window=window))
    inputs = load_inputs(path)
    (candidate,) = inputs.candidates
    note = window_note(candidate, resolve_evidence(inputs, candidate, [], [], []))
    if says is None:
        assert note is None
    else:
        assert note is not None and note.startswith("the assumed n-gram match rate is SpecDecode-Bench's at ")
        assert says in note and "prompt_lookup_min = 3 and prompt_lookup_max = 7" in note


def test_a_given_match_rate_needs_no_note(tmp_path: Path) -> None:
    """Nothing assumed about the window's matches: the note has nothing to say."""
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(window="acceptance = 0.6\nmatch_rate = 0.3"))
    inputs = load_inputs(path)
    (candidate,) = inputs.candidates
    assert window_note(candidate, resolve_evidence(inputs, candidate, [], [], [])) is None
