"""Catalog entries the published-evidence data set needs: each resolves, plans and pairs.

The parameter counts themselves are checked against their published totals in
tests/specs/test_params_golden.py (every entry with ``published.total_params``).
"""

from __future__ import annotations

import json

import pytest

from specwise.catalog import catalog_models, resolve_draft, resolve_gpu, resolve_model
from specwise.cli import main
from specwise.compat.pair import check_pair
from specwise.memory import MemoryPlanRequest, plan_memory
from specwise.memory.weights import weight_bytes
from specwise.specs.derived import mtp_draft_spec
from specwise.units import DTYPE_BYTES

MIB = 1 << 20

# (target, draft or None, gpu, tp, draft_tp, max_model_len): deployments the data set describes.
DEPLOYMENTS = [
    ("meta-llama/Meta-Llama-3-70B-Instruct", None, "H100-NVL", 2, None, None),
    ("meta-llama/Meta-Llama-3-70B-Instruct", "yuhuili/EAGLE-LLaMA3-Instruct-70B", "H100-NVL", 2, None, None),
    ("meta-llama/Meta-Llama-3-70B-Instruct", "turboderp/Qwama-0.5B-Instruct", "A6000", 4, 1, 8192),
    ("zai-org/GLM-4.5-Air", None, "H100-NVL", 4, None, None),
    ("zai-org/GLM-4.5-Air", "mtp", "H100-NVL", 4, None, None),
    ("Qwen/QwQ-32B", None, "A6000", 2, None, 32768),
    ("Qwen/Qwen2-7B-Instruct", None, "RTX-3090", 1, None, None),
    ("Qwen/Qwen3-8B", "AngelSlim/Qwen3-8B_eagle3", "RTX-3090", 1, None, 8192),
]
ADDED_MODELS = [
    "meta-llama/Meta-Llama-3-70B-Instruct",
    "yuhuili/EAGLE-LLaMA3-Instruct-70B",
    "AngelSlim/Qwen3-8B_eagle3",
    "zai-org/GLM-4.5-Air",
    "turboderp/Qwama-0.5B-Instruct",
    "Qwen/QwQ-32B",
    "Qwen/Qwen2-7B-Instruct",
]
ADDED_HEADS = ["yuhuili/EAGLE-LLaMA3-Instruct-70B", "AngelSlim/Qwen3-8B_eagle3"]


def test_added_models_are_in_the_catalog_with_sources() -> None:
    models = catalog_models()
    deployed = {d[0] for d in DEPLOYMENTS} | {d[1] for d in DEPLOYMENTS if d[1] and d[1] != "mtp"}
    assert set(ADDED_MODELS) <= deployed
    for model_id in ADDED_MODELS:
        entry = models[model_id]
        assert resolve_model(model_id).name == model_id
        if entry.published:
            assert entry.published["source"]


@pytest.mark.parametrize(
    ("target_id", "draft_id", "gpu_name", "tp", "draft_tp", "max_model_len"),
    DEPLOYMENTS,
    ids=[f"{d[0]}+{d[1]}@{d[3]}x{d[2]}" for d in DEPLOYMENTS],
)
def test_deployment_plans_and_fits(
    target_id: str, draft_id: str | None, gpu_name: str, tp: int, draft_tp: int | None, max_model_len: int | None
) -> None:
    target = resolve_model(target_id)
    draft = None
    if draft_id is not None:
        draft, trained_for = resolve_draft(draft_id, target)
        if draft.kind == "model":
            assert draft.spec is not None
            assert check_pair(target, draft.spec, head_trained_for=trained_for).compatible
    plan = plan_memory(
        MemoryPlanRequest(
            target=target, gpu=resolve_gpu(gpu_name), tp=tp, draft=draft, draft_tp=draft_tp, max_model_len=max_model_len
        )
    )
    assert plan.fits, plan.problems
    assert plan.kv_cache_tokens > 0
    if draft is not None:
        assert plan.kv_cache_tokens < plan.kv_cache_tokens_without_draft


@pytest.mark.parametrize("head_id", ADDED_HEADS)
def test_heads_pass_check_pair_against_their_targets(head_id: str) -> None:
    trained_for = catalog_models()[head_id].draft_for
    assert trained_for
    for target_id in trained_for:
        target = resolve_model(target_id)
        head, resolved_for = resolve_draft(head_id, target)
        assert head.spec is not None and resolved_for == trained_for
        report = check_pair(target, head.spec, head_trained_for=resolved_for)
        status = {f.check: f.status for f in report.findings}
        assert report.compatible
        assert status["head"] == "pass" and status["vocab"] == "pass" and status["size_ratio"] == "info"


def test_heads_do_not_fit_other_hidden_sizes() -> None:
    head, trained_for = resolve_draft("AngelSlim/Qwen3-8B_eagle3", resolve_model("Qwen/Qwen3-32B"))
    assert head.spec is not None
    report = check_pair(resolve_model("Qwen/Qwen3-32B"), head.spec, head_trained_for=trained_for)
    assert not report.compatible and "4096" in report.failures[0].message


def test_qwama_drafts_for_llama3_70b() -> None:
    target = resolve_model("meta-llama/Meta-Llama-3-70B-Instruct")
    draft = resolve_model("turboderp/Qwama-0.5B-Instruct")
    report = check_pair(target, draft)
    status = {f.check: f.status for f in report.findings}
    assert report.compatible
    assert status["vocab"] == status["tokenizer"] == status["special_tokens"] == "pass"
    assert status["size_ratio"] == "pass"  # 70.6B : 0.47B
    assert draft.model_type == "qwen2" and draft.vocab_size == 128256 and draft.tie_word_embeddings
    # A Qwen2 vocabulary draft is refused for the same target.
    assert not check_pair(target, resolve_model("Qwen/Qwen2.5-0.5B-Instruct")).compatible


def test_weight_bytes_match_the_released_files() -> None:
    eagle = resolve_model("yuhuili/EAGLE-LLaMA3-Instruct-70B")
    assert eagle.draft_head == "eagle" and eagle.dtype == "fp16"
    assert weight_bytes(eagle, DTYPE_BYTES[eagle.dtype], None) == pytest.approx(4.08e9, rel=0.01)
    qwama = resolve_model("turboderp/Qwama-0.5B-Instruct")
    assert weight_bytes(qwama, DTYPE_BYTES[qwama.dtype], None) == pytest.approx(946e6, rel=0.01)


def test_llama3_70b_differs_from_31_only_in_context_and_eos() -> None:
    l3 = resolve_model("meta-llama/Meta-Llama-3-70B-Instruct")
    l31 = resolve_model("meta-llama/Llama-3.1-70B-Instruct")
    assert l3.params == l31.params and l3.total_params == 70_553_706_496
    assert l3.max_position_embeddings == 8192 and l31.max_position_embeddings == 131072
    assert l3.special_tokens.eos_token_ids == (128009,)


def test_glm45_air_moe_layout_kv_and_mtp() -> None:
    spec = resolve_model("zai-org/GLM-4.5-Air")
    assert spec.model_type == "glm4_moe" and not spec.notes
    assert spec.moe is not None
    assert (spec.moe.moe_layers, spec.moe.num_experts, spec.moe.experts_per_token) == (45, 128, 8)
    assert spec.moe.num_shared_experts == 1 and spec.moe.expert_intermediate_size == 1408
    assert spec.attention.kind == "gqa" and spec.kv_bytes_per_token(2.0) == 46 * 2 * 8 * 128 * 2
    assert spec.mtp_layers == 1
    mtp = mtp_draft_spec(spec)
    assert mtp.num_layers == 1 and mtp.draft_head == "mtp"
    # The 106B main model plus its MTP module (stored as model.layers.46.*) is the Hub's ~110B.
    assert spec.total_params + mtp.total_params == pytest.approx(110e9, rel=0.01)


def test_new_gpus_resolve_with_nvidia_smi_memory() -> None:
    nvl = resolve_gpu("h100_nvl")
    assert nvl.name == "H100-NVL" and nvl.memory_bytes == 95830 * MIB and nvl.supports_fp8
    assert nvl.dense_bf16_flops_per_s == pytest.approx(1671e12 / 2)
    a6000 = resolve_gpu("RTX A6000")
    assert a6000.name == "A6000" and a6000.memory_bytes == 49140 * MIB and not a6000.supports_fp8
    rtx3090 = resolve_gpu("3090")
    assert rtx3090.name == "RTX-3090" and rtx3090.memory_bytes == 24576 * MIB and not rtx3090.supports_fp8
    laptop = resolve_gpu("NVIDIA GeForce RTX 4060 Laptop GPU")  # as nvidia-smi names it
    assert laptop.name == "RTX-4060-Laptop" and laptop.memory_bytes == 8192 * MIB and laptop.supports_fp8
    assert laptop.memory_bandwidth_bytes_per_s == 256e9 and "derived" in laptop.source
    for gpu in (nvl, a6000, rtx3090, laptop):
        assert gpu.source and gpu.dense_int8_ops_per_s is not None


def test_plan_memory_cli_with_the_70b_eagle_head(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "plan-memory",
            "--target",
            "meta-llama/Meta-Llama-3-70B-Instruct",
            "--draft",
            "yuhuili/EAGLE-LLaMA3-Instruct-70B",
            "--gpu",
            "H100-NVL",
            "--tp",
            "2",
            "--json",
        ]
    )
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["fits"] is True
    assert d["compatibility"]["compatible"] is True
    assert d["draft"]["kv_bytes_per_token"] == 2 * 8 * 128 * 2
