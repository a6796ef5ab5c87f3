from __future__ import annotations

import re
from pathlib import Path

import pytest

from specwise.catalog import resolve_model
from specwise.errors import SpecwiseError
from specwise.specs.hf_config import spec_from_hf_config
from tests.conftest import LLAMA_TINY, write_gguf, write_model_dir


def test_local_dir_matches_hand_count(tmp_path: Path) -> None:
    spec = resolve_model(str(write_model_dir(tmp_path, "tiny", LLAMA_TINY)))
    # embed + head 2x(100x64); per layer q,k,v,o = 64*64 + 2*64*32 + 64*64; mlp 3*64*128; 2 norms; final norm
    per_layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128 + 2 * 64
    assert spec.total_params == 2 * 100 * 64 + 2 * per_layer + 64
    assert spec.kv_bytes_per_token(2.0) == 2 * 2 * 2 * 16 * 2  # layers x (K,V) x kv heads x head_dim x 2 B
    assert spec.source.startswith("hf-config:")


def test_config_json_path_is_accepted(tmp_path: Path) -> None:
    model_dir = write_model_dir(tmp_path, "tiny", LLAMA_TINY)
    assert resolve_model(str(model_dir / "config.json")).total_params == resolve_model(str(model_dir)).total_params


def test_hf_config_and_gguf_of_same_shape_agree(tmp_path: Path) -> None:
    hf = resolve_model(str(write_model_dir(tmp_path, "tiny", LLAMA_TINY)))
    gg = resolve_model(str(write_gguf(tmp_path / "tiny.gguf", tied=False)))
    assert gg.params == hf.params
    assert gg.kv_bytes_per_token(2.0) == hf.kv_bytes_per_token(2.0)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "malformed JSON at line 1"),
        ("[1, 2]", "expected a JSON object"),
        ('{"model_type": "llama"}', "required field 'hidden_size' is missing"),
        ('{"model_type": "weird"}', "model_type 'weird' is not supported"),
        ('{"model_type": "llama", "hidden_size": -5, "num_hidden_layers": 2}', "'hidden_size' must be a positive"),
        ('{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": "2"}', "'num_hidden_layers' must be a"),
    ],
)
def test_malformed_configs_give_one_clear_error(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(SpecwiseError, match=re.escape(fragment)) as err:
        resolve_model(str(write_model_dir(tmp_path, "bad", text)))
    assert "\n" not in str(err.value)


def test_heads_not_divisible_by_kv_heads(tmp_path: Path) -> None:
    with pytest.raises(SpecwiseError, match="not a multiple of num_key_value_heads"):
        resolve_model(str(write_model_dir(tmp_path, "bad", {**LLAMA_TINY, "num_key_value_heads": 3})))


def test_missing_dir_and_missing_config(tmp_path: Path) -> None:
    with pytest.raises(SpecwiseError, match="no such file"):
        resolve_model(str(tmp_path / "nope" / "config.json"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpecwiseError, match=r"no config\.json found"):
        resolve_model(str(tmp_path / "empty"))


def test_unknown_llama_like_type_is_read_with_a_note() -> None:
    spec = spec_from_hf_config({**LLAMA_TINY, "model_type": "olmo2"}, name="x", source="test")
    assert any("not specifically modelled" in n for n in spec.notes)


def test_qwen2_counts_qkv_bias_and_ignores_disabled_window() -> None:
    cfg = {**LLAMA_TINY, "model_type": "qwen2", "sliding_window": 32, "use_sliding_window": False}
    spec = spec_from_hf_config(cfg, name="q", source="test")
    base = spec_from_hf_config(LLAMA_TINY, name="l", source="test")
    assert spec.total_params - base.total_params == 2 * (64 + 2 * 32)  # q, k, v biases per layer
    assert spec.attention.sliding_layers == 0


def test_mistral_v01_style_window_applies_to_all_layers() -> None:
    spec = spec_from_hf_config({**LLAMA_TINY, "model_type": "mistral", "sliding_window": 16}, name="m", source="t")
    assert spec.attention.layer_windows == (16, 16)
    assert spec.kv_bytes_for_sequence(100, 2.0) == spec.kv_bytes_for_sequence(16, 2.0)


@pytest.mark.parametrize("window", [0, -1, -4096])
def test_a_window_that_is_not_one_is_read_as_none_with_a_note(window: int) -> None:
    spec = spec_from_hf_config({**LLAMA_TINY, "model_type": "mistral", "sliding_window": window}, name="m", source="t")
    assert spec.attention.layer_windows == (None, None)
    assert [n for n in spec.notes if "sliding_window" in n] == [
        f"sliding_window {window} is not a window size; read as no sliding window "
        "(every layer keeps its whole context: the larger KV estimate)"
    ]


def test_a_disabled_or_real_window_has_no_window_note() -> None:
    for cfg in ({"sliding_window": -1, "use_sliding_window": False}, {"sliding_window": 16}, {"sliding_window": None}):
        spec = spec_from_hf_config({**LLAMA_TINY, "model_type": "mistral", **cfg}, name="m", source="t")
        assert not any("sliding_window" in n for n in spec.notes)


def test_layer_types_length_mismatch_is_an_error() -> None:
    cfg = {**LLAMA_TINY, "sliding_window": 8, "layer_types": ["sliding_attention"]}
    with pytest.raises(SpecwiseError, match="lists 1 layers but num_hidden_layers is 2"):
        spec_from_hf_config(cfg, name="x", source="t")


def test_quantization_configs() -> None:
    awq = spec_from_hf_config(
        {**LLAMA_TINY, "quantization_config": {"quant_method": "awq", "bits": 4}}, name="a", source="t"
    )
    assert awq.native_quantization.method == "int4"
    with pytest.raises(SpecwiseError, match="quant_method 'hqq' is not modelled"):
        spec_from_hf_config({**LLAMA_TINY, "quantization_config": {"quant_method": "hqq"}}, name="h", source="t")
    # Review C: a quantization_config that is not an object was read as unquantized (weights priced at bf16).
    for bad in ("awq", ["awq"], 4):
        with pytest.raises(SpecwiseError, match="quantization_config must be an object"):
            spec_from_hf_config({**LLAMA_TINY, "quantization_config": bad}, name="s", source="t")
    none = spec_from_hf_config({**LLAMA_TINY, "quantization_config": None}, name="n", source="t")
    assert not none.native_quantization.is_quantized


def test_float32_checkpoints_are_served_in_bf16() -> None:
    assert spec_from_hf_config({**LLAMA_TINY, "torch_dtype": "float32"}, name="f", source="t").dtype == "bf16"
    assert spec_from_hf_config({**LLAMA_TINY, "torch_dtype": "float16"}, name="f", source="t").dtype == "fp16"


def test_eagle3_head_shape() -> None:
    from specwise.catalog import catalog_model_spec

    head = catalog_model_spec("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    assert head.draft_head == "eagle3" and head.draft_vocab_size == 32000
    # fc 3H->H, q/k/v from 2H, o, MLP, 3 norms + final, draft LM head 32000 x H; no embedding.
    h, i = 4096, 14336
    expected = 3 * h * h + (2 * h * h + 2 * 2 * h * 1024) + h * h + 3 * h * i + 4 * h + 32000 * h
    assert head.total_params == expected
    assert head.kv_bytes_per_token(2.0) == 2 * 8 * 128 * 2


GLM4_MOE_TINY = {
    "architectures": ["Glm4MoeForCausalLM"],
    "model_type": "glm4_moe",
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "n_routed_experts": 4,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "num_nextn_predict_layers": 1,
    "attention_bias": True,
    "use_qk_norm": False,
    "vocab_size": 100,
    "tie_word_embeddings": False,
}


@pytest.mark.parametrize("qk_norm", [False, True])
def test_glm4_moe_hand_count(qk_norm: bool) -> None:
    # Glm4MoeForCausalLM: q/k/v carry attention_bias, o_proj never does; q/k RMSNorm only with
    # use_qk_norm; layer 0 dense (first_k_dense_replace), layers 1-2 MoE with one shared expert
    # of moe_intermediate_size and a router with an e_score_correction_bias per expert.
    spec = spec_from_hf_config({**GLM4_MOE_TINY, "use_qk_norm": qk_norm}, name="glm", source="t")
    attn = 64 * 64 + 2 * 64 * 32 + 64 * 64 + (64 + 2 * 32)
    dense_mlp = 3 * 64 * 128
    experts, shared, router = 4 * 3 * 64 * 32, 3 * 64 * 32, 64 * 4 + 4
    per_layer_other = 2 * 64 + (2 * 16 if qk_norm else 0)
    expected = 2 * 100 * 64 + 3 * attn + dense_mlp + 2 * (experts + shared + router) + 3 * per_layer_other + 64
    assert spec.total_params == expected
    assert spec.active_params == expected - 2 * experts // 2
    assert spec.moe is not None and spec.moe.moe_layers == 2 and spec.moe.num_shared_experts == 1
    assert spec.mtp_layers == 1 and not spec.notes
    assert spec.kv_bytes_per_token(2.0) == 3 * 2 * 2 * 16 * 2


def test_plan_memory_says_the_models_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review G: inspect said a zero or negative sliding_window was read as none; plan-memory, whose KV estimate it
    changes, did not."""
    import json

    from specwise.cli import main

    (tmp_path / "config.json").write_text(json.dumps({**LLAMA_TINY, "model_type": "mistral", "sliding_window": -1}))
    assert main(["plan-memory", "--target", str(tmp_path), "--gpu", "H100"]) == 0
    assert f"note: {tmp_path}: sliding_window -1 is not a window size" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    ("qc", "said"),
    [
        ({"quant_method": "gptq", "bits": 3}, "quantization_config.bits 3 for gptq is not modelled (4 or 8 are)"),
        ({"quant_method": "gptq", "bits": "four"}, 'quantization_config.bits "four" for gptq is not modelled'),
        ({"quant_method": "awq", "bits": 8}, "quantization_config.bits 8 for awq is not modelled (4 is)"),
        ({"quant_method": "gptq"}, "quantization_config.bits is missing for gptq (4 or 8 are modelled)"),
    ],
)
def test_an_unmodelled_width_of_a_modelled_method_names_the_bits(qc: dict[str, object], said: str) -> None:
    """GPTQ at 3 bits was refused as "quant_method 'gptq' is not modelled", while GPTQ at 4 and 8 bits is read."""
    with pytest.raises(SpecwiseError) as err:
        spec_from_hf_config({**LLAMA_TINY, "quantization_config": qc}, name="q", source="t")
    assert said in str(err.value) and "quant_method" not in str(err.value)
    for bits, method in ((4, "int4"), (8, "int8")):
        gptq = {"quant_method": "gptq", "bits": bits}
        assert (
            spec_from_hf_config(
                {**LLAMA_TINY, "quantization_config": gptq}, name="q", source="t"
            ).native_quantization.method
            == method
        )


def _ct(*groups: tuple[int, str]) -> dict[str, object]:
    return {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {f"group_{i}": {"weights": {"num_bits": b, "type": t}} for i, (b, t) in enumerate(groups)},
    }


@pytest.mark.parametrize(
    ("qc", "method"),
    [
        (_ct((8, "float")), "fp8"),  # llm-compressor FP8 (the RedHatAI ...-FP8 checkpoints)
        (_ct((8, "int")), "int8"),  # W8A8
        (_ct((4, "int")), "int4"),  # W4A16
        ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, "int4"),
        ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8"),
    ],
)
def test_compressed_tensors_and_bitsandbytes_checkpoints_are_read(qc: dict[str, object], method: str) -> None:
    """Review s46d: these configs carry no top-level ``bits``, so the most common quantised checkpoints served with
    vLLM were refused, and the message's --quantization hint could not help (the error came while reading)."""
    spec = spec_from_hf_config({**LLAMA_TINY, "quantization_config": qc}, name="q", source="t")
    assert spec.native_quantization.method == method


def test_an_unreadable_compressed_tensors_scheme_says_what_to_do() -> None:
    for qc in (_ct((4, "float")), _ct((8, "int"), (4, "int")), {"quant_method": "compressed-tensors"}):
        with pytest.raises(SpecwiseError, match=r"not modelled; .*give the unquantised model with --quantization"):
            spec_from_hf_config({**LLAMA_TINY, "quantization_config": qc}, name="q", source="t")
