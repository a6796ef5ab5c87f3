"""Review finding 6: the nested results are typed -- a candidate's memory plan reads as attributes
(``advice.candidates[0].memory.fits``, as :class:`~specwise.memory.MemoryPlan`'s do), and its JSON is the
plan-memory contract unchanged, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import specwise
from specwise.contracts.advice import Advice, CandidateMemory
from specwise.contracts.document import DocumentError, Fields, json_safe
from specwise.contracts.sweep import ClassLatency, RowLatency, SweepResult
from specwise.memory import MemoryPlan

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "examples"
LLAMA_70B, LLAMA_8B = "meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"


def _plans() -> list[MemoryPlan]:
    return [
        specwise.plan_memory(LLAMA_70B, "H100-SXM-80GB", tp=4, draft=LLAMA_8B),  # a draft model that fits
        specwise.plan_memory(LLAMA_70B, "H100-SXM-80GB", tp=2, draft=LLAMA_8B),  # one that does not
        specwise.plan_memory(LLAMA_70B, "H100-SXM-80GB", tp=4, draft="ngram"),  # no draft weights
        specwise.plan_memory(LLAMA_8B, "L40S", gpu_memory_utilization=1, reserve_bytes=2**30),  # an int; a reserve
    ]


@pytest.mark.parametrize("plan", _plans(), ids=["fits", "does-not-fit", "ngram", "given-reserve"])
def test_candidate_memory_is_the_plan_contract_typed(plan: MemoryPlan) -> None:
    mem = CandidateMemory.from_json(Fields(plan.to_dict(), "plan"))
    assert json.dumps(mem.to_json()) == json.dumps(plan.to_dict())  # key for key, 1 stays 1
    for name in ("fits", "fits_without_draft", "kv_cache_tokens", "max_concurrent_seqs", "draft_concurrency_cost"):
        assert getattr(mem, name) == getattr(plan, name), name
    assert mem.problems == plan.problems and mem.warnings == plan.warnings
    assert mem.per_gpu.kv_budget_bytes == plan.kv_budget_bytes_per_gpu
    assert mem.per_gpu.reserve_bytes == plan.reserve.total_bytes
    assert (mem.draft.name if mem.draft else None) == (plan.draft.name if plan.draft else None)
    assert mem.target.weight_bytes_per_gpu == plan.target.weight_bytes_per_gpu


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("advise-*.json")))
def test_advice_read_back_has_typed_memory_that_writes_the_same_json(path: Path) -> None:
    data = json.loads(path.read_text())
    doc = Advice.from_json(data)
    by_name = {c["candidate"]: c for c in data["candidates"]}
    for c in doc.candidates:
        assert isinstance(c.memory, CandidateMemory)
        assert c.memory.fits is by_name[c.candidate]["memory"]["fits"]
        assert c.memory.fits == (c.verdict != "does_not_fit") or c.verdict == "unsupported"
        assert json.dumps(c.to_json(bulk=False)["memory"]) == json.dumps(by_name[c.candidate]["memory"])


def test_the_api_advice_has_typed_memory() -> None:
    advice = specwise.advise("example:advise/draft-does-not-fit")
    draft = advice.candidate("draft_model:meta-llama/Llama-3.1-8B-Instruct")
    assert draft.memory.fits is False and draft.memory.per_gpu.shortfall_bytes > 0
    assert draft.memory.draft is not None and draft.memory.draft.name == LLAMA_8B
    assert advice.candidate("ngram").memory.fits is True and advice.candidate("ngram").memory.draft is None


def test_a_memory_that_is_no_object_is_refused_in_one_line() -> None:
    data = json.loads((GOLDEN / "advise-int4-target.json").read_text())
    data["candidates"][0]["memory"] = 3
    with pytest.raises(DocumentError, match=r"candidates\[0\]\.memory: expected an object"):
        Advice.from_json(data)


def test_a_sweep_row_latency_is_typed_and_writes_the_same_json() -> None:
    data = json.loads((GOLDEN / "simulate-llama70b-ngram.json").read_text())
    doc = SweepResult.from_json(data)
    row, raw = doc.results[0], data["results"][0]
    assert isinstance(row.latency, RowLatency)
    assert (
        row.latency.e2e_s.p50 == raw["latency"]["e2e_s"]["p50"] and row.latency.requests == raw["latency"]["requests"]
    )
    assert json.dumps(json_safe(row.to_json())["latency"]) == json.dumps(raw["latency"])
    assert json.dumps(json_safe(doc.to_json())) == json.dumps(data)


def test_a_sweep_rows_classes_are_typed_and_write_the_same_json() -> None:
    """``SweepRow.by_class`` (review C, finding 6, the last raw dict): each class's summary and TPOT speedup read
    as attributes; the JSON is unchanged."""
    data = json.loads((GOLDEN / "simulate-llama70b-ngram.json").read_text())
    doc = SweepResult.from_json(data)
    row, raw = doc.results[1], data["results"][1]
    assert set(row.by_class) == set(raw["by_class"]) and len(row.by_class) >= 2
    for name, summary in row.by_class.items():
        assert isinstance(summary, ClassLatency)
        assert summary.speedup_tpot == raw["by_class"][name]["speedup_tpot"]
        assert summary.tpot_s.p50 == raw["by_class"][name]["tpot_s"]["p50"]
        assert json.dumps(json_safe(summary.to_json())) == json.dumps(raw["by_class"][name])


def test_a_class_that_is_no_object_is_refused_in_one_line() -> None:
    data = json.loads((GOLDEN / "simulate-llama70b-ngram.json").read_text())
    name = next(iter(data["results"][0]["by_class"]))
    data["results"][0]["by_class"][name] = None
    with pytest.raises(DocumentError, match=rf"results\[0\]\.by_class\.{name}: must be an object"):
        SweepResult.from_json(data)
