"""specwise's GGUF reader against the reference ``gguf`` package, on synthetic and real files."""

from __future__ import annotations

import contextlib
import hashlib
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specwise.catalog import resolve_model
from specwise.errors import SpecwiseError
from specwise.specs.gguf import GGML_TYPE_SIZES, read_gguf
from tests.conftest import SMOLLM2_SHA256, write_gguf


def test_type_sizes_agree_with_reference_package() -> None:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    for type_id, (block_bytes, block_elems) in GGML_TYPE_SIZES.items():
        ref_elems, ref_bytes = GGML_QUANT_SIZES[GGMLQuantizationType(type_id)]
        assert (block_bytes, block_elems) == (ref_bytes, ref_elems), type_id


def test_reader_matches_reference_reader(tmp_path: Path) -> None:
    from gguf import GGUFReader

    path = write_gguf(tmp_path / "m.gguf", tied=False, extra={"test.some_int": 7, "test.some_str": "x"})
    ours = read_gguf(path)
    ref = GGUFReader(str(path))
    assert ours.metadata["test.some_int"] == 7 and ours.metadata["test.some_str"] == "x"
    assert ours.metadata["llama.block_count"] == ref.fields["llama.block_count"].contents()
    assert ours.metadata["tokenizer.ggml.tokens"] == ref.fields["tokenizer.ggml.tokens"].contents()
    assert [t.name for t in ours.tensors] == [t.name for t in ref.tensors]
    for mine, theirs in zip(ours.tensors, ref.tensors, strict=True):
        assert mine.n_elements == int(theirs.n_elements)
        assert mine.n_bytes == int(theirs.n_bytes)
        assert ours.data_offset + mine.offset == int(theirs.data_offset)


def test_real_smollm2_gguf(smollm2_gguf: Path) -> None:
    digest = hashlib.sha256(smollm2_gguf.read_bytes()).hexdigest()
    assert digest == SMOLLM2_SHA256
    spec = resolve_model(str(smollm2_gguf))
    assert spec.total_params == 134_515_008  # SmolLM2-135M, all tensor elements
    assert spec.num_layers == 30 and spec.hidden_size == 576
    assert (spec.attention.num_heads, spec.attention.num_kv_heads, spec.attention.head_dim) == (9, 3, 64)
    assert spec.tie_word_embeddings and spec.vocab_size == 49152
    assert spec.kv_bytes_per_token(2.0) == 30 * 2 * 3 * 64 * 2
    assert spec.file_weight_bytes is not None and 90e6 < spec.file_weight_bytes < smollm2_gguf.stat().st_size
    assert spec.tokenizer.num_tokens == 49152
    assert spec.special_tokens.bos_token_id == 1 and spec.special_tokens.eos_token_ids == (2,)


def test_not_a_gguf(tmp_path: Path) -> None:
    bogus = tmp_path / "model.gguf"
    bogus.write_bytes(b"PK\x03\x04 this is a zip file")
    with pytest.raises(SpecwiseError, match="not a GGUF file"):
        resolve_model(str(bogus))


def test_unsupported_version_and_big_endian(tmp_path: Path) -> None:
    f = tmp_path / "v9.gguf"
    f.write_bytes(b"GGUF" + struct.pack("<I", 9) + b"\0" * 16)
    with pytest.raises(SpecwiseError, match="unsupported GGUF version 9"):
        read_gguf(f)
    f.write_bytes(b"GGUF" + struct.pack(">I", 3) + b"\0" * 16)
    with pytest.raises(SpecwiseError, match="big-endian"):
        read_gguf(f)


def test_absurd_counts_are_rejected_without_allocating(tmp_path: Path) -> None:
    f = tmp_path / "huge.gguf"
    f.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 2**40, 1) + b"\0" * 64)
    with pytest.raises(SpecwiseError, match="cannot fit in the file"):
        read_gguf(f)


@pytest.fixture(scope="module")
def valid_gguf_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return write_gguf(tmp_path_factory.mktemp("g") / "ok.gguf").read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(min_value=0.0, max_value=0.999))
def test_any_truncation_gives_a_clear_error(valid_gguf_bytes: bytes, tmp_path: Path, cut: float) -> None:
    f = tmp_path / "cut.gguf"
    f.write_bytes(valid_gguf_bytes[: int(len(valid_gguf_bytes) * cut)])
    with pytest.raises(SpecwiseError):
        resolve_model(str(f))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_byte_corruption_never_crashes(valid_gguf_bytes: bytes, tmp_path: Path, data: st.DataObject) -> None:
    buf = bytearray(valid_gguf_bytes)
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, min(len(buf) - 1, 2048)))
        buf[pos] = data.draw(st.integers(0, 255))
    f = tmp_path / "corrupt.gguf"
    f.write_bytes(bytes(buf))
    # A clear error is the right answer; any other exception fails the test.
    with contextlib.suppress(SpecwiseError):
        resolve_model(str(f))
