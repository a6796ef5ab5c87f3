"""What an fp8 KV cache (``--kv-cache-dtype fp8*``) does to a vLLM server of a given release on a given GPU, read in
the released wheels (review s48a F2, F3). Pure: version, KV dtype choice, GPU spec in; a refusal or notes out.

* **0.9.0 to 0.10.2: a non-auto KV cache sends the server to the V0 engine unless FlashAttention 3 takes it.**
  ``EngineArgs._is_v1_supported_oracle`` (``vllm/engine/arg_utils.py``) calls ``_raise_or_fallback("--kv-cache-
  dtype")`` for any KV dtype but ``auto``, except an fp8 one where ``flash_attn_supports_fp8()`` holds (0.9.2:
  ``get_flash_attn_version() == 3`` and compute capability 9.0, ``vllm/attention/utils/fa_utils.py``) or, from
  0.10.0, where ``CudaPlatform.is_kv_cache_dtype_supported`` holds (``vllm/platforms/cuda.py``: also 10.0), or on
  ROCm. On V0, 0.10.0 to 0.10.2 refuse every speculative config at start ("Speculative decoding is not supported on
  vLLM V0.", ``vllm/platforms/cuda.py``); 0.9.x run the method on V0, whose whole-prompt prefill needs another
  token budget and prices the method differently from what specwise simulated and wrote. 0.11.0 no longer tests
  the KV dtype in the oracle (V0 is gone) and picks Triton for fp8 off Hopper.
* **0.9 to 0.17 on compute capability 9.0: FlashAttention (the default there) reads an fp8 cache as e4m3.**
  0.9.2 ``vllm/v1/attention/backends/flash_attn.py`` writes the cache as ``fp8_e5m2`` and views it back as
  ``torch.float8_e4m3fn`` (wrong output, no error); 0.10 to 0.17 raise "Unrecognized FP8 dtype: fp8_e5m2"
  (``get_fp8_dtype_for_flashattn``). From 0.18 the FlashAttention backend no longer lists fp8 and another backend
  serves it.
"""

from __future__ import annotations

from specwise.engines.vllm_versions import VllmVersion
from specwise.specs.gpu import GpuSpec

KV_V0_FALLBACK = (VllmVersion(0, 9), VllmVersion(0, 11))  # [from, until): the oracle tests the KV dtype
FA3_FP8_CAPABILITIES = {VllmVersion(0, 9): ("9.0",), VllmVersion(0, 10): ("9.0", "10.0")}
FA_E5M2_BROKEN = (VllmVersion(0, 9), VllmVersion(0, 18))  # [from, until) on compute capability 9.0


def _within(version: VllmVersion | None, span: tuple[VllmVersion, VllmVersion]) -> bool:
    return version is not None and span[0] <= version < span[1]


def kv_cache_engine(version: VllmVersion | None, kv_cache_dtype: str, gpu: GpuSpec) -> str:
    """``"v0"`` where vLLM ``version`` on ``gpu`` falls back to its V0 engine for an fp8 ``--kv-cache-dtype`` (module
    docstring), else ``"as-written"`` (a 16-bit choice is written as auto beside a 16-bit model:
    ``advisor.commands._kv_flag``). A GPU whose compute capability is not known (a GPU file without it) is not
    guessed at: ``"as-written"``."""
    if not kv_cache_dtype.startswith("fp8") or not _within(version, KV_V0_FALLBACK) or gpu.vendor.lower() == "amd":
        return "as-written"
    assert version is not None
    if gpu.compute_capability is None:
        return "as-written"
    takes = FA3_FP8_CAPABILITIES[VllmVersion(version.major, version.minor)]
    return "as-written" if gpu.compute_capability in takes else "v0"


def kv_cache_refusal(version: VllmVersion | None, kv_cache_dtype: str, gpu: GpuSpec, method: str) -> str | None:
    """Why vLLM ``version`` cannot serve speculative ``method`` with this KV cache on ``gpu`` as specwise writes it,
    in one line (None: it can): the V0 fallback of 0.9.0 to 0.10.2 (module docstring)."""
    if method == "none" or kv_cache_engine(version, kv_cache_dtype, gpu) != "v0":
        return None
    assert version is not None
    what = (
        'refuses any speculative config there at start ("Speculative decoding is not supported on vLLM V0")'
        if version >= VllmVersion(0, 10)
        else "runs the method there, with whole-prompt prefills and another token budget than specwise priced"
    )
    return (
        f"vLLM {version} serves --kv-cache-dtype {kv_cache_dtype} on a compute capability {gpu.compute_capability} "
        f"GPU ({gpu.name}) on its V0 engine (FlashAttention 3's fp8 cache needs "
        f"{' or '.join(FA3_FP8_CAPABILITIES[VllmVersion(version.major, version.minor)])}), and {what}: set "
        'kv_cache_dtype = "auto", or engine_version to 0.11 or later'
    )


def kv_cache_notes(version: VllmVersion | None, kv_cache_dtype: str, gpu: GpuSpec) -> tuple[str, ...]:
    """What the serve command cannot say about its KV cache on ``gpu``: an e5m2 cache on compute capability 9.0
    under 0.9 to 0.17 (module docstring)."""
    if kv_cache_dtype != "fp8_e5m2" or gpu.compute_capability != "9.0" or not _within(version, FA_E5M2_BROKEN):
        return ()
    assert version is not None
    if version < VllmVersion(0, 10):
        effect = "reads it back as e4m3 (wrong output, no error)"
    else:
        effect = 'stops the server ("Unrecognized FP8 dtype: fp8_e5m2")'
    return (
        f"--kv-cache-dtype fp8_e5m2 on {gpu.name}: vLLM {version}'s default attention backend there, "
        f'FlashAttention, {effect}; kv_cache_dtype = "fp8" (e4m3, the same 1 byte: the memory plan stands) avoids '
        "it, as does VLLM_ATTENTION_BACKEND=FLASHINFER",
    )
