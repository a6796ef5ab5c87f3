"""The planner's KV arithmetic against vLLM's own figure on real weights (recorded reading)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specwise.catalog import resolve_model
from specwise.memory.planner import kv_tokens_that_fit
from specwise.specs.model import AttentionSpec

READING = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "vllm_cpu_kv_smollm2.json").read_text())


def test_smollm2_kv_cache_tokens_match_vllm(smollm2_gguf: Path) -> None:
    spec = resolve_model(str(smollm2_gguf))
    base, with_draft = READING["runs"]
    budget = READING["kv_cache_bytes"]
    per_token = spec.kv_bytes_per_token(2.0)  # bf16
    assert kv_tokens_that_fit(budget, per_token) == base["kv_cache_tokens"]  # exact: 46,592
    draft = replace(
        spec,
        attention=AttentionSpec(
            kind="gqa", num_heads=9, num_kv_heads=3, head_dim=64, layer_windows=(None,) * with_draft["draft_layers"]
        ),
    )
    both = kv_tokens_that_fit(budget, per_token + draft.kv_bytes_per_token(2.0))
    # vLLM reported 2 blocks fewer with the draft (41,088 vs 41,120): within 0.1%.
    assert both == pytest.approx(with_draft["kv_cache_tokens"], rel=1e-3)
    assert both >= with_draft["kv_cache_tokens"]
