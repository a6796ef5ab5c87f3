from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specwise.catalog import catalog_model_spec
from specwise.errors import SpecError, SpecwiseError
from specwise.specs.hf_config import load_hf_model_dir
from specwise.specs.model import AttentionSpec, MoeSpec, ParamBreakdown
from specwise.specs.quant import Quantization


def test_kv_heads_shard_then_replicate_under_tp() -> None:
    spec = catalog_model_spec("meta-llama/Llama-3.1-8B-Instruct")  # 8 KV heads
    full = spec.kv_bytes_per_token(2.0)
    assert spec.kv_bytes_per_token(2.0, tp=2) == full // 2
    assert spec.kv_bytes_per_token(2.0, tp=8) == full // 8
    assert spec.kv_bytes_per_token(2.0, tp=16) == full // 8  # one (replicated) KV head per GPU


def test_fp8_kv_halves_bf16() -> None:
    spec = catalog_model_spec("Qwen/Qwen3-8B")
    assert spec.kv_bytes_per_token(1.0) * 2 == spec.kv_bytes_per_token(2.0)


@given(tokens=st.integers(0, 300_000))
def test_sequence_kv_never_exceeds_full_attention_and_is_monotone(tokens: int) -> None:
    spec = catalog_model_spec("google/gemma-3-1b-it")
    held = spec.kv_bytes_for_sequence(tokens, 2.0)
    assert held <= tokens * spec.kv_bytes_per_token(2.0)
    assert spec.kv_bytes_for_sequence(tokens + 1, 2.0) >= held


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (
            lambda: AttentionSpec(kind="gqa", num_heads=0, num_kv_heads=1, head_dim=8, layer_windows=(None,)),
            "num_heads",
        ),
        (lambda: AttentionSpec(kind="gqa", num_heads=4, num_kv_heads=1, head_dim=8, layer_windows=()), "layer_windows"),
        (
            lambda: AttentionSpec(kind="mla", num_heads=4, num_kv_heads=4, head_dim=8, layer_windows=(None,)),
            "kv_lora_rank",
        ),
        (
            lambda: MoeSpec(num_experts=4, experts_per_token=8, expert_intermediate_size=8, moe_layers=1),
            "experts_per_token",
        ),
        (lambda: ParamBreakdown(embedding=-1, lm_head=0, attention=0, mlp=0), "embedding"),
        (lambda: Quantization("int3"), "quantization"),
    ],
)
def test_spec_validation_names_the_field(build: object, field: str) -> None:
    with pytest.raises(SpecError, match=field):
        build()  # type: ignore[operator]


def test_quantization_bits() -> None:
    assert Quantization("int4").bytes_per_weight(2.0) == pytest.approx((4 + 16 / 128 + 4 / 128) / 8)
    assert Quantization("mxfp4").bytes_per_weight(2.0) == pytest.approx(4.25 / 8)
    assert Quantization("none").bytes_per_weight(2.0) == 2.0


def test_a_refused_config_value_names_the_file(tmp_path: Path) -> None:
    # review 5: "MoeSpec.experts_per_token: 16 routed experts per token but only 8 experts" with no path
    config = json.loads((Path(__file__).parents[2] / "examples/models/my-finetune/config.json").read_text())
    config.update(
        num_local_experts=8, num_experts_per_tok=16, model_type="mixtral", architectures=["MixtralForCausalLM"]
    )
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(SpecwiseError, match=r"config\.json: experts_per_token \(num_experts_per_tok\): 16 routed"):
        load_hf_model_dir(tmp_path)


def test_a_local_model_is_named_by_its_directory_or_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review s60: a config file in the working directory was called "."; /dev/null read as "no config.json"."""
    from tests.conftest import LLAMA_TINY

    config = json.dumps(LLAMA_TINY)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(config)
    (tmp_path / "mycfg.json").write_text(config)
    monkeypatch.chdir(tmp_path)
    assert load_hf_model_dir(Path("mycfg.json")).name == "mycfg.json"
    assert load_hf_model_dir(Path("m")).name == "m"
    assert load_hf_model_dir(Path("m/config.json")).name == "m"
    (tmp_path / "config.json").write_text(config)
    assert load_hf_model_dir(Path("config.json")).name == "config.json"
    with pytest.raises(SpecwiseError, match=r"^/dev/null: not a regular file"):
        load_hf_model_dir(Path("/dev/null"))
