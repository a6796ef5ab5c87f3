"""advise under a predictor that cannot tell a slowdown from a speedup where it is used (a first-hour review: an
SGLang scenario got a confident "Enable" although the published fit put only 44% of SGLang's held-back speedups on
the measured side of 1), and the rules' k when the verdict is disable."""

from __future__ import annotations

import functools
import tomllib
from typing import Any

from specwise.advisor.decision import advise
from specwise.advisor.inputs import parse_inputs
from specwise.contracts.advice import Advice
from specwise.examples import scenario_example_path


@functools.cache
def _advise(
    name: str, engine: str | None = None, vllm_version: str | None = None, operating_qps: float | None = None
) -> Advice:
    path = scenario_example_path(f"example:{name}")
    data: dict[str, Any] = tomllib.loads(path.read_text())
    if engine is not None:
        data["deployment"]["engine"] = engine
    if operating_qps is not None:  # an operating load beyond the example's, simulated there too
        data["advise"]["operating_qps"] = operating_qps
        data["sweep"]["qps"] = sorted({*data["sweep"]["qps"], operating_qps})
    return advise(parse_inputs(data, path.name, path.parent), processes=1, engine_version=vllm_version)


def test_sglang_enables_nothing_it_cannot_tell_from_a_slowdown() -> None:
    vllm, sglang = _advise("advise/summarize-low-qps"), _advise("advise/summarize-low-qps", "sglang")
    assert vllm.decision == "enable"  # the same scenario on vLLM, where the fit's direction record is good
    assert sglang.decision == "measure_first" and sglang.measure is not None
    (top,) = [c for c in sglang.candidates if c.method == "draft_model"]  # vLLM's enabled candidate
    assert top.verdict == "measure_first"
    assert top.reason.startswith("on the held-back sglang measurements on data-centre GPUs the published fit put ")
    assert "; the simulation alone says: " in top.reason  # what it would have said, kept
    assert any("a guess until measured" in w for w in top.warnings)
    assert not any("a guess until measured" in w for c in vllm.candidates for w in c.warnings)


def test_a_disable_judges_its_rules_at_a_k_the_candidate_offers() -> None:
    """The rules spoke of k = 1 when the verdict was disable (k 0), though the candidate offers only k = 4: the
    acceptance rule then passed at k=1 for a pair it warns about at k=4 in the schedule example. At 12 QPS (10, the
    example's operating load, is measure first since the anchor-grid refit of 2026-12-06: 0.84x, band 0.63-1.06x)."""
    doc = _advise("advise/evidence-llama3-70b-qwama-v0", vllm_version="0.9", operating_qps=12.0)
    (cand,) = doc.candidates
    assert cand.verdict == "disable"
    (rule,) = [r for r in cand.rules if r.rule == "acceptance"]
    assert rule.evidence.startswith("at k=4: ") and rule.status == "warn", rule


def test_nothing_simulated_says_nothing_replayed() -> None:
    doc = _advise("advise/evidence-llama3-70b-qwama-v0")  # the current vLLM cannot run Qwama at TP 4
    assert doc.decision == "unsupported"
    (first, *_) = doc.serve.notes
    assert "which nothing here replays: no candidate runs on the current vLLM" in first
    assert "which the simulation replays" not in first
