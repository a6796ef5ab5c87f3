"""A small, strict GGUF reader: header, metadata and tensor table only (no tensor data is read).

Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md -- little-endian; ``GGUF`` magic,
uint32 version (2 or 3), uint64 tensor count, uint64 metadata count, metadata key/values, tensor
infos (name, dims, ggml type, offset), then tensor data aligned to ``general.alignment`` (32).

Every length read from the file is checked against the bytes that remain, so a file that is not
a GGUF, or is cut short, gives one clear :class:`SpecwiseError` instead of a huge allocation.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from specwise.errors import SpecwiseError

GGUF_MAGIC = b"GGUF"
_MAX_DIMS = 8

# GGUF metadata value types -> struct format (scalars).
_SCALARS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9

# ggml tensor types -> (bytes per block, elements per block); ggml/src/ggml.c type_traits.
GGML_TYPE_SIZES: dict[int, tuple[int, int]] = {
    0: (4, 1),
    1: (2, 1),
    2: (18, 32),
    3: (20, 32),
    6: (22, 32),
    7: (24, 32),
    8: (34, 32),
    9: (40, 32),
    10: (84, 256),
    11: (110, 256),
    12: (144, 256),
    13: (176, 256),
    14: (210, 256),
    15: (292, 256),
    16: (66, 256),
    17: (74, 256),
    18: (98, 256),
    19: (50, 256),
    20: (18, 32),
    21: (110, 256),
    22: (82, 256),
    23: (136, 256),
    24: (1, 1),
    25: (2, 1),
    26: (4, 1),
    27: (8, 1),
    28: (8, 1),
    29: (56, 256),
    30: (2, 1),
    34: (54, 256),
    35: (66, 256),
    39: (17, 32),
    40: (36, 64),
    41: (18, 128),
}
GGML_TYPE_NAMES: dict[int, str] = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    6: "Q5_0",
    7: "Q5_1",
    8: "Q8_0",
    9: "Q8_1",
    10: "Q2_K",
    11: "Q3_K",
    12: "Q4_K",
    13: "Q5_K",
    14: "Q6_K",
    15: "Q8_K",
    16: "IQ2_XXS",
    17: "IQ2_XS",
    18: "IQ3_XXS",
    19: "IQ1_S",
    20: "IQ4_NL",
    21: "IQ3_S",
    22: "IQ2_S",
    23: "IQ4_XS",
    24: "I8",
    25: "I16",
    26: "I32",
    27: "I64",
    28: "F64",
    29: "IQ1_M",
    30: "BF16",
    34: "TQ1_0",
    35: "TQ2_0",
    39: "MXFP4",
    40: "NVFP4",
    41: "Q1_0",
}


@dataclass(frozen=True)
class GgufTensorInfo:
    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def n_bytes(self) -> int | None:
        """Stored bytes of the tensor, when its ggml type is known."""
        size = GGML_TYPE_SIZES.get(self.ggml_type)
        if size is None:
            return None
        block_bytes, block_elems = size
        return -(-self.n_elements // block_elems) * block_bytes

    @property
    def type_name(self) -> str:
        return GGML_TYPE_NAMES.get(self.ggml_type, f"type{self.ggml_type}")


@dataclass(frozen=True)
class GgufFile:
    path: str
    version: int
    metadata: dict[str, Any]
    tensors: tuple[GgufTensorInfo, ...]
    data_offset: int
    file_size: int

    @property
    def tensor_data_bytes(self) -> int:
        """Bytes of the tensor-data section (what a loader keeps of the weights)."""
        return self.file_size - self.data_offset


class _Reader:
    def __init__(self, fh: BinaryIO, size: int, path: str) -> None:
        self.fh, self.size, self.path, self.pos = fh, size, path, 0

    def read(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > self.size:
            raise SpecwiseError(
                f"{self.path}: truncated or corrupt GGUF: {what} needs {n} bytes at offset {self.pos}, "
                f"file has {self.size}"
            )
        data = self.fh.read(n)
        if len(data) != n:
            raise SpecwiseError(f"{self.path}: truncated GGUF: short read of {what} at offset {self.pos}")
        self.pos += n
        return data

    def scalar(self, fmt: str, what: str) -> Any:
        return struct.unpack(fmt, self.read(struct.calcsize(fmt), what))[0]

    def count(self, what: str, min_item_bytes: int) -> int:
        n = int(self.scalar("<Q", what))
        if n * max(1, min_item_bytes) > self.size - self.pos:
            raise SpecwiseError(f"{self.path}: corrupt GGUF: {what} = {n} cannot fit in the file")
        return n

    def string(self, what: str) -> str:
        raw = self.read(self.count(f"length of {what}", 1), what)
        return raw.decode("utf-8", errors="replace")

    def value(self, vtype: int, key: str) -> Any:
        if vtype in _SCALARS:
            return self.scalar(_SCALARS[vtype], f"value of {key}")
        if vtype == _STRING:
            return self.string(f"value of {key}")
        if vtype == _ARRAY:
            item_type = int(self.scalar("<I", f"array type of {key}"))
            if item_type == _ARRAY:
                raise SpecwiseError(f"{self.path}: nested arrays in {key} are not supported")
            item_size = struct.calcsize(_SCALARS[item_type]) if item_type in _SCALARS else 8
            n = self.count(f"array length of {key}", item_size)
            if item_type in _SCALARS:
                fmt = _SCALARS[item_type]
                return list(struct.unpack(f"<{n}{fmt[1:]}", self.read(n * item_size, f"array {key}")))
            if item_type == _STRING:
                return [self.string(f"item of {key}") for _ in range(n)]
            raise SpecwiseError(f"{self.path}: unknown array item type {item_type} in {key}")
        raise SpecwiseError(f"{self.path}: unknown metadata value type {vtype} for key {key!r}")


def read_gguf(path: Path) -> GgufFile:
    """Read a GGUF file's metadata and tensor table."""
    try:
        size = path.stat().st_size
        fh = path.open("rb")
    except OSError as exc:
        raise SpecwiseError(f"{path}: cannot open: {exc.strerror}") from None
    with fh:
        r = _Reader(fh, size, str(path))
        magic = fh.read(4)
        r.pos = len(magic)
        if magic != GGUF_MAGIC:
            raise SpecwiseError(f"{path}: not a GGUF file (starts with {magic!r}, expected b'GGUF')")
        version = int(r.scalar("<I", "version"))
        if version not in (2, 3):
            if struct.unpack(">I", struct.pack("<I", version))[0] in (2, 3):
                raise SpecwiseError(f"{path}: big-endian GGUF is not supported")
            raise SpecwiseError(f"{path}: unsupported GGUF version {version} (supported: 2, 3)")
        n_tensors = r.count("tensor count", 8)
        n_kv = r.count("metadata count", 12)
        metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = r.string("metadata key")
            vtype = int(r.scalar("<I", f"type of {key}"))
            metadata[key] = r.value(vtype, key)
        tensors = []
        for _ in range(n_tensors):
            name = r.string("tensor name")
            n_dims = int(r.scalar("<I", f"dims of {name}"))
            if n_dims > _MAX_DIMS:
                raise SpecwiseError(f"{path}: corrupt GGUF: tensor {name!r} claims {n_dims} dimensions")
            shape = tuple(int(d) for d in struct.unpack(f"<{n_dims}Q", r.read(8 * n_dims, f"shape of {name}")))
            ggml_type = int(r.scalar("<I", f"type of {name}"))
            offset = int(r.scalar("<Q", f"offset of {name}"))
            tensors.append(GgufTensorInfo(name, shape, ggml_type, offset))
        alignment = metadata.get("general.alignment", 32)
        if not isinstance(alignment, int) or alignment <= 0:
            raise SpecwiseError(f"{path}: corrupt GGUF: general.alignment = {alignment!r}")
        data_offset = -(-r.pos // alignment) * alignment
        if data_offset > size:
            raise SpecwiseError(f"{path}: truncated GGUF: no tensor data after the header")
        for t in tensors:
            n_bytes = t.n_bytes or 0
            if data_offset + t.offset + n_bytes > size:
                raise SpecwiseError(
                    f"{path}: truncated GGUF: tensor {t.name!r} ends past the end of the file "
                    f"({data_offset + t.offset + n_bytes} > {size} bytes)"
                )
    return GgufFile(str(path), version, metadata, tuple(tensors), data_offset, size)
