"""Golden tests: parameter counts, weight bytes and KV bytes against published numbers.

Published totals come from the catalog entries' ``published`` fields (model cards, safetensors
metadata, technical reports; each entry names its source). Card figures are rounded to two or
three significant digits, hence the 2% tolerance; exact safetensors counts match to the parameter.
Some publishers leave embeddings out of a count; the entry says so with
``total_params_excludes_embedding`` (EAGLE heads listed without the token embedding they carry),
``active_params_excludes_embedding`` or ``active_params_excludes_embedding_and_lm_head``.
"""

from __future__ import annotations

import pytest

from specwise.catalog import catalog_model_spec, catalog_models
from specwise.memory.weights import weight_bytes
from specwise.specs.derived import mtp_draft_spec

PUBLISHED = [(m.id, m.published) for m in catalog_models().values() if m.published.get("total_params")]


def test_catalog_has_the_models_the_issue_lists() -> None:
    ids = set(catalog_models())
    assert len(ids) >= 30
    for required in (
        "meta-llama/Llama-3.2-1B-Instruct",
        "meta-llama/Llama-3.2-3B-Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.3-70B-Instruct",
        "meta-llama/Llama-3.1-405B-Instruct",
        "Qwen/Qwen2.5-0.5B-Instruct",
        "Qwen/Qwen2.5-72B-Instruct",
        "Qwen/Qwen3-0.6B",
        "Qwen/Qwen3-32B",
        "Qwen/Qwen3-30B-A3B",
        "mistralai/Mistral-7B-Instruct-v0.3",
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "google/gemma-2-9b-it",
        "google/gemma-3-27b-it",
        "microsoft/phi-4",
        "deepseek-ai/DeepSeek-V3",
        "openai/gpt-oss-20b",
        "openai/gpt-oss-120b",
        "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    ):
        assert required in ids, required


@pytest.mark.parametrize(("model_id", "published"), PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_total_params_match_published(model_id: str, published: dict[str, float]) -> None:
    spec = catalog_model_spec(model_id)
    total = spec.total_params
    if published.get("total_params_excludes_embedding"):
        total -= spec.params.embedding
    assert total == pytest.approx(published["total_params"], rel=0.02)


ACTIVE = [(m.id, m.published) for m in catalog_models().values() if m.published.get("active_params")]


@pytest.mark.parametrize(("model_id", "published"), ACTIVE, ids=[p[0] for p in ACTIVE])
def test_active_params_match_published(model_id: str, published: dict[str, float]) -> None:
    spec = catalog_model_spec(model_id)
    active = spec.active_params
    if published.get("active_params_excludes_embedding"):
        active -= spec.params.embedding
    if published.get("active_params_excludes_embedding_and_lm_head"):
        active -= spec.params.embedding + spec.params.lm_head
    assert active == pytest.approx(published["active_params"], rel=0.02)
    assert active < spec.total_params


def test_llama_70b_weights_and_kv_match_reference() -> None:
    spec = catalog_model_spec("meta-llama/Llama-3.1-70B-Instruct")
    assert weight_bytes(spec, 2.0, None) == pytest.approx(141.1e9, rel=0.01)
    assert spec.kv_bytes_per_token(2.0) == 327_680  # 80 layers x 8 KV heads x 128 x 2 (K,V) x 2 B


def test_qwen3_pair_kv_ratio_matches_specdecode_bench() -> None:
    target = catalog_model_spec("Qwen/Qwen3-8B")
    draft = catalog_model_spec("Qwen/Qwen3-0.6B")
    assert target.kv_bytes_per_token(2.0) == 144 * 1024
    assert draft.kv_bytes_per_token(2.0) == 112 * 1024
    ratio = (target.kv_bytes_per_token(2.0) + draft.kv_bytes_per_token(2.0)) / target.kv_bytes_per_token(2.0)
    assert ratio == pytest.approx(1.78, abs=0.02)


def test_deepseek_v3_mla_kv_and_native_fp8_weights() -> None:
    spec = catalog_model_spec("deepseek-ai/DeepSeek-V3")
    assert spec.attention.kind == "mla"
    assert spec.kv_bytes_per_token(2.0) == 61 * (512 + 64) * 2
    assert spec.kv_bytes_per_token(2.0, tp=8) == spec.kv_bytes_per_token(2.0)  # latent not sharded
    assert spec.native_quantization.method == "fp8"
    # ~671B fp8 linear weights + bf16 embeddings: the released checkpoint is ~688 GB with MTP.
    assert weight_bytes(spec, 2.0, None) == pytest.approx(674e9, rel=0.02)
    mtp = mtp_draft_spec(spec)
    assert mtp.num_layers == 1 and mtp.draft_head == "mtp"
    assert mtp.total_params == pytest.approx(14e9, rel=0.05)
    assert mtp.kv_bytes_per_token(2.0) == (512 + 64) * 2


def test_gpt_oss_sliding_layers_and_mxfp4_experts() -> None:
    spec = catalog_model_spec("openai/gpt-oss-120b")
    assert spec.attention.sliding_layers == 18 and set(filter(None, spec.attention.layer_windows)) == {128}
    # Long sequences keep only 128 tokens in the sliding layers.
    assert spec.kv_bytes_for_sequence(10_000, 2.0) == 18 * 10_000 * 2048 + 18 * 128 * 2048
    # MXFP4 experts + bf16 rest: the released checkpoint is ~65 GB.
    assert weight_bytes(spec, 2.0, None) == pytest.approx(65e9, rel=0.03)


def test_gemma_sliding_window_patterns() -> None:
    g2 = catalog_model_spec("google/gemma-2-9b-it")
    assert g2.attention.layer_windows[:4] == (4096, None, 4096, None)
    g3 = catalog_model_spec("google/gemma-3-27b-it")
    assert g3.attention.sliding_layers == 62 - 62 // 6
    assert g3.attention.layer_windows[5] is None and g3.attention.layer_windows[4] == 1024
    assert g3.params.vision > 0
