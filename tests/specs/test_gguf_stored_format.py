"""``specwise inspect`` reports what a GGUF file stores (its llama.cpp file type and tensor types), not the dtype
it would be served in: a Q4_1 file is ``GGUF Q4_1``, never ``(bf16, none)``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from specwise.catalog import resolve_model
from specwise.cli import main
from specwise.report.models import ModelSpecView, render_model_spec
from specwise.specs.gguf import GgufTensorInfo
from specwise.specs.gguf_spec import gguf_stored_format


def write_quantized_gguf(path: Path, ggml_type: int, file_type: int | None) -> Path:
    """A tiny llama GGUF whose weight matrices are stored as ``ggml_type`` (norms stay F32)."""
    import gguf
    import numpy as np

    qtype = gguf.GGMLQuantizationType(ggml_type)
    block_elems, block_bytes = gguf.constants.GGML_QUANT_SIZES[qtype]
    hidden, ff, vocab, heads, kv_heads, layers = 256, 512, 64, 4, 2, 1
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_name("tiny-quantized")
    w.add_block_count(layers)
    w.add_context_length(512)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_vocab_size(vocab)
    w.add_token_list([f"t{i}" for i in range(vocab)])
    if file_type is not None:
        w.add_file_type(file_type)

    def matrix(name: str, rows: int, cols: int) -> None:
        data = np.zeros((rows, cols // block_elems * block_bytes), dtype=np.uint8)
        w.add_tensor(name, data, raw_shape=data.shape, raw_dtype=qtype)  # the byte shape

    head_dim = hidden // heads
    matrix("token_embd.weight", vocab, hidden)
    w.add_tensor("blk.0.attn_norm.weight", np.zeros((hidden,), dtype=np.float32))
    matrix("blk.0.attn_q.weight", heads * head_dim, hidden)
    matrix("blk.0.attn_k.weight", kv_heads * head_dim, hidden)
    matrix("blk.0.attn_v.weight", kv_heads * head_dim, hidden)
    matrix("blk.0.attn_output.weight", hidden, heads * head_dim)
    w.add_tensor("blk.0.ffn_norm.weight", np.zeros((hidden,), dtype=np.float32))
    matrix("blk.0.ffn_gate.weight", ff, hidden)
    matrix("blk.0.ffn_up.weight", ff, hidden)
    matrix("blk.0.ffn_down.weight", hidden, ff)
    w.add_tensor("output_norm.weight", np.zeros((hidden,), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize(
    ("ggml_type", "file_type", "label"),
    [(3, 3, "GGUF Q4_1"), (2, 2, "GGUF Q4_0"), (8, 7, "GGUF Q8_0"), (3, None, "GGUF Q4_1"), (12, 15, "GGUF Q4_K_M")],
)
def test_gguf_reports_its_quantization(tmp_path: Path, ggml_type: int, file_type: int | None, label: str) -> None:
    spec = resolve_model(str(write_quantized_gguf(tmp_path / "m.gguf", ggml_type, file_type)))
    expected = label if ggml_type != 12 else "GGUF Q4_K_M (mostly Q4_K)"
    assert spec.stored_format == expected
    view = ModelSpecView(spec, "bf16")
    assert view.to_json()["native_quantization"] == expected
    out = Console(width=100, record=True)
    render_model_spec(view, out)
    text = out.export_text()
    assert expected in text and "bf16, none" not in text


def test_inspect_json_of_a_q4_1_gguf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_quantized_gguf(tmp_path / "q.gguf", 3, 3)
    assert main(["inspect", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["native_quantization"] == "GGUF Q4_1" and doc["stored_as"] == "GGUF Q4_1"


def test_stored_format_from_tensor_types_alone() -> None:
    tensors = [
        GgufTensorInfo("blk.0.ffn_up.weight", (128, 64), 14, 0),  # Q6_K, 8,192 elements
        GgufTensorInfo("blk.0.attn_q.weight", (64, 64), 12, 0),  # Q4_K, 4,096 elements
        GgufTensorInfo("blk.0.attn_norm.weight", (64,), 0, 0),  # F32 vector: not a weight matrix
    ]
    assert gguf_stored_format(None, tensors) == "GGUF Q6_K"
    assert gguf_stored_format(True, tensors) == "GGUF Q6_K"  # a bool is no file type
    assert gguf_stored_format(999, tensors) == "GGUF Q6_K"  # unknown file type: the tensors say
    assert gguf_stored_format(18, tensors) == "GGUF Q6_K"


def test_hf_models_keep_dtype_and_quantization() -> None:
    view = ModelSpecView(resolve_model("meta-llama/Llama-3.1-70B-Instruct"), "bf16")
    assert view.stored_as == "bf16, none"
