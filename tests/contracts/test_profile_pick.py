"""advise --profile: a workload whose class (or task) the profile never saw falls back to all prompts, and says so
when the profile's prompts are all of other classes (before: "class all" and nothing else, though every profiled
prompt was chat)."""

from __future__ import annotations

import numpy as np
import pytest

from specwise.contracts.document import DocumentError
from specwise.contracts.profile import ProfileDoc
from specwise.profiler.analysis import counts_by_k
from specwise.profiler.counting import model_draft_proposals
from specwise.profiler.document import build_document
from specwise.profiler.result import Observation, summarise
from specwise.profiler.settings import ProfileSettings

K = (1, 2)


def _doc(classes: tuple[str | None, ...]) -> ProfileDoc:
    rng = np.random.default_rng(5)
    obs = []
    for cls in classes:
        accept = rng.uniform(0.3, 0.9, size=14)
        counts = counts_by_k(model_draft_proposals(accept, 12, max(K)), K)
        obs.append(Observation((), 0.0, "greedy", cls, counts, float(accept[:12].sum()), 12))
    settings = ProfileSettings(temperatures=(0.0,), k_values=K, max_new_tokens=12)
    return build_document("t", "d", settings, "p", len(classes), summarise(obs, K, 0, 50), {})


def test_a_fall_back_to_prompts_of_other_classes_is_said() -> None:
    source = _doc(("chat", "chat", "qa")).pick("summarize", "summarization", 0.0, "greedy").source
    assert "class all" in source
    assert source.endswith(
        " -- workload 'summarize' uses the acceptance of all profiled prompts, which are chat, qa only "
        "(none profiled as 'summarize' or 'summarization')"
    )
    source = _doc(("chat",)).pick("summarization", "summarization", 0.0, "greedy").source
    assert source.endswith("which are chat only (none profiled as 'summarization')")


def test_the_workload_s_own_class_or_prompts_without_classes_need_no_note() -> None:
    assert "class summarization," in _doc(("chat", "summarization")).pick("s", "summarization", 0.0, "greedy").source
    assert " -- " not in _doc(("chat", "summarization")).pick("s", "summarization", 0.0, "greedy").source
    assert " -- " not in _doc((None, None)).pick("summarize", "summarization", 0.0, "greedy").source


def test_a_profile_that_drafted_nothing_says_so() -> None:
    """An n-gram profile with no match writes null rates: a real answer, refused as such, not as a bad file."""
    data = {
        "schema": "specwise.profile/1",
        "method": "ngram",
        "target": "t",
        "draft": None,
        "settings": {"prompt_lookup_min": 2, "prompt_lookup_max": 4},
        "results": [
            {
                "temperature": 0.0,
                "drafting": "greedy",
                "quantization": {},
                "class": None,
                "alpha_mean": None,
                "per_position_acceptance": [None],
                "by_k": [{"k": 1, "acceptance_rate": None, "per_position_acceptance": [None]}],
            }
        ],
    }
    doc = ProfileDoc.from_json(data, "p.json")
    with pytest.raises(DocumentError, match=r"^profile: nothing was drafted at T=0: it measured no acceptance"):
        doc.pick("chat", None, 0.0, "greedy")
