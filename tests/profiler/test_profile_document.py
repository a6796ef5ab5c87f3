"""The profile document of a run, built from the profiler's own summarise output (counts from fixed acceptance
probabilities, no real weights) and a verify pass on tiny random models: its JSON is what specwise wrote before
results and loop rows were typed (``profile_document_golden.json``, recorded from the dict-based profiler, wall
clock left out), and it reads back to the same JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specwise.contracts.document import DocumentError, Fields
from specwise.contracts.profile import ProfileDoc, ProfileResult
from specwise.profiler.analysis import counts_by_k
from specwise.profiler.counting import model_draft_proposals
from specwise.profiler.document import build_document
from specwise.profiler.result import Observation, summarise
from specwise.profiler.settings import ProfileSettings
from specwise.profiler.verify import verify
from tests.profiler.tiny_qwen2 import tiny_qwen2

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
K = (1, 2, 4)


def _observations() -> list[Observation]:
    rng = np.random.default_rng(7)
    out = []
    for quant in ((), (("draft", "int8"),)):
        for temp in (0.0, 1.0):
            for drafting in ("greedy", "probabilistic"):
                for i, cls in enumerate(("code", "code", "qa", "qa", "qa")):
                    accept = rng.uniform(0.1, 0.95, size=24)
                    counts = counts_by_k(model_draft_proposals(accept, 20, max(K)), K)
                    estimator = "realized" if temp == 0.0 or i % 2 else "expected"
                    alpha_sum = float(accept[:20].sum())
                    out.append(Observation(quant, temp, drafting, cls, counts, alpha_sum, 20, estimator))
    return out


def _document() -> ProfileDoc:
    s = ProfileSettings(
        temperatures=(0.0, 1.0),
        k_values=K,
        max_new_tokens=10,
        quantizations=({"draft": "int8"},),
        bootstrap_resamples=200,
    )
    results = summarise(_observations(), K, 0, 200)
    target, draft = tiny_qwen2(0, 2, 64), tiny_qwen2(1, 1, 64)
    prompts = [[1, 2, 3], [4, 5, 6, 7]]
    rows = verify(target, draft, prompts, results, s, (0.0, 1.0), 2, measure_speedup=False, paths_per_prompt=2)
    return build_document("t", "d", s, "builtin:test", 5, results, {"load_s": 1.5, "analysis_s": 0.25}, rows)


def _without_wall_clock(data: dict[str, Any]) -> dict[str, Any]:
    rows = [{k: v for k, v in row.items() if k != "speculative_wall_s"} for row in data["verification"]]
    return {**data, "verification": rows}


def test_profile_json_is_unchanged_and_round_trips() -> None:
    doc = _document()
    data = doc.to_json()
    assert len(doc.results) == 24 and len(doc.verification) == 4
    golden = (HERE / "profile_document_golden.json").read_text()
    assert json.dumps(_without_wall_clock(data), indent=1) == golden  # same keys, order, values and number types
    assert ProfileDoc.from_json(data).to_json() == data
    assert ProfileDoc.from_json(json.loads(json.dumps(data))).to_json() == data


def test_the_shipped_profile_benchmark_is_a_bench_record_not_a_profile() -> None:
    """bench/results/profile_qwen.json is bench/profile_qwen.py's record (phases A-E2), not a ``specwise profile``
    document: the reader refuses it in one line. The profile results it nests (phase C) are an older layout without
    ``estimator``; they parse, and read back to the same JSON but for that field."""
    path = ROOT / "bench" / "results" / "profile_qwen.json"
    with pytest.raises(DocumentError, match="not a specwise profile \\(no 'results'\\)"):
        ProfileDoc.read(path)
    nested = json.loads(path.read_text())["phase_C_profile_per_temperature"]["results"]
    results = [ProfileResult.from_json(Fields(r, f"results[{i}]")) for i, r in enumerate(nested)]
    assert len(results) == 12 and all(r.by_k for r in results)
    assert [{k: v for k, v in r.to_json().items() if k != "estimator"} for r in results] == nested
