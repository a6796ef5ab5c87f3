"""The real vLLM CPU engine the slow tier uses: its venv, the SmolLM2 models, common server flags."""

from __future__ import annotations

from pathlib import Path

from tests.missing import VLLM, missing_dependency

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
MODEL = ROOT / "models" / "smollm2-135m"
DRAFT = ROOT / "models" / "smollm2-135m-draft4"
# float32, not the checkpoint's bfloat16: a CPU without AVX512-BF16 / AMX (this project's 2-core AVX2 CI machines)
# emulates bf16 at ~3x the time per token, enough to time requests out (CI run of 2026-12-01: TPOT 456 ms, not 34 ms)
EXTRA = ("--dtype", "float32", "--max-model-len", "2048", "--max-num-seqs", "8", "--enforce-eager")
ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CACHE_ROOT": "/tmp/specwise-vllm-cache"}


def require_engine(needs: Path = DRAFT / "model.safetensors") -> None:
    """Skip without `make vllm models` (``needs``: the model file the test uses); with SPECWISE_REQUIRE_VLLM=1 (set
    by the Makefile) fail instead."""
    if not PYTHON.exists() or not needs.exists():
        missing_dependency("vLLM CPU environment or models missing: run 'make vllm models'", VLLM)
