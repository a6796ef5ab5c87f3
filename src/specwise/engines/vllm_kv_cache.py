"""What an fp8 KV cache (``--kv-cache-dtype fp8*``) does to a vLLM server of a given release on a given GPU, read in
the released wheels (review s48a F2, F3). Pure: version, KV dtype choice, GPU spec in; a refusal or notes out.

* **0.8.2 to 0.10.2: a non-auto KV cache sends the server to the V0 engine unless FlashAttention 3 takes it.**
  ``EngineArgs._is_v1_supported_oracle`` (``vllm/engine/arg_utils.py``) calls ``_raise_or_fallback("--kv-cache-
  dtype")`` for any KV dtype but ``auto``, except an fp8 one where ``flash_attn_supports_fp8()`` holds (0.8.2 to
  0.9.2: ``get_flash_attn_version() == 3`` and compute capability 9.0, ``fa_utils.py``) or, from 0.10.0, where
  ``CudaPlatform.is_kv_cache_dtype_supported`` holds (``vllm/platforms/cuda.py``: also 10.0), or on ROCm. This
  holds with speculation or without. On V0, 0.10.0 to 0.10.2 refuse every speculative config at start
  ("Speculative decoding is not supported on vLLM V0.", ``vllm/platforms/cuda.py``); 0.8.2 to 0.9.x run the method
  on V0, which specwise prices only where :func:`~specwise.engines.vllm_versions.speculation_engine` already says
  V0 (a draft model on 0.9; every method on 0.8.3 to 0.8.5). Every V0 server, the plain one too, prefills whole
  prompts up to a 32K context and refuses to start with a token budget below the max model length
  (``SchedulerConfig._verify_args``), so its command needs the larger budget
  (:meth:`~specwise.engines.vllm.VllmEngine.token_budget`). 0.11.0 no longer tests the KV dtype in the oracle (V0 is
  gone) and picks Triton for fp8 off Hopper.
* **0.8.2 to 0.21 on compute capability 9.0: FlashAttention (the default there) reads an fp8 cache as e4m3.**
  0.8.2 to 0.10.0 view any fp8 cache as ``torch.float8_e4m3fn`` (``vllm/v1/attention/backends/flash_attn.py``:
  wrong output from an e5m2 cache, no error); 0.10.1 to 0.20 raise "Unrecognized FP8 dtype: fp8_e5m2"
  (``get_fp8_dtype_for_flashattn``; 0.18 and 0.20 still hand every fp8 name to FlashAttention through
  ``supports_kv_cache_dtype``). 0.22 gives FlashAttention only ``fp8`` / ``fp8_e4m3`` (0.21 not read: taken as 0.20).
"""

from __future__ import annotations

from specwise.engines.vllm_versions import VllmVersion, speculation_engine
from specwise.specs.gpu import GpuSpec

KV_V0_FALLBACK = (VllmVersion(0, 8, 2), VllmVersion(0, 11))  # [from, until): the oracle tests the KV dtype
FA3_FP8_SINCE_10 = VllmVersion(0, 10)  # FlashAttention 3's fp8 cache on compute capability 10.0 too
FA_E5M2_BROKEN = (VllmVersion(0, 8, 2), VllmVersion(0, 22))  # [from, until) on compute capability 9.0
FA_E5M2_RAISES_SINCE = VllmVersion(0, 10, 1)  # before it, read back as e4m3 without a word


def _fa3_capabilities(version: VllmVersion) -> tuple[str, ...]:
    return ("9.0", "10.0") if version >= FA3_FP8_SINCE_10 else ("9.0",)


def _within(version: VllmVersion | None, span: tuple[VllmVersion, VllmVersion]) -> bool:
    return version is not None and span[0] <= version < span[1]


def kv_cache_engine(version: VllmVersion | None, kv_cache_dtype: str, gpu: GpuSpec) -> str:
    """``"v0"`` where vLLM ``version`` on ``gpu`` falls back to its V0 engine for an fp8 ``--kv-cache-dtype`` (module
    docstring), else ``"as-written"`` (a 16-bit choice is written as auto beside a 16-bit model:
    ``advisor.commands._kv_flag``). A GPU whose compute capability is not known (a GPU file without it) is not
    guessed at: ``"as-written"``."""
    known = gpu.compute_capability is not None and gpu.vendor.lower() != "amd"
    if not kv_cache_dtype.startswith("fp8") or not known or not _within(version, KV_V0_FALLBACK):
        return "as-written"
    assert version is not None
    return "as-written" if gpu.compute_capability in _fa3_capabilities(version) else "v0"


def kv_cache_refusal(version: VllmVersion | None, kv_cache_dtype: str, gpu: GpuSpec, method: str) -> str | None:
    """Why vLLM ``version`` cannot serve speculative ``method`` with this KV cache on ``gpu`` as specwise priced it,
    in one line (None: it can): the V0 fallback of 0.8.2 to 0.10.2 (module docstring), where 0.10 refuses the
    speculation and 0.8.2 to 0.9 run it on V0 -- which specwise already prices where the method runs on V0 anyway
    (review s48c F3: a draft model on 0.9)."""
    if method == "none" or kv_cache_engine(version, kv_cache_dtype, gpu) != "v0":
        return None
    assert version is not None
    if speculation_engine(version, method) == "v0":
        return None
    what = (
        'refuses any speculative config there at start ("Speculative decoding is not supported on vLLM V0")'
        if version >= VllmVersion(0, 10)
        else "runs the method there, which specwise prices on V1 for this release"
    )
    later = "0.15" if method == "draft_model" else "0.11"
    return (
        f"vLLM {version} serves --kv-cache-dtype {kv_cache_dtype} on a compute capability {gpu.compute_capability} "
        f"GPU ({gpu.name}) on its V0 engine (FlashAttention 3's fp8 cache needs "
        f'{" or ".join(_fa3_capabilities(version))}), and {what}: set kv_cache_dtype = "auto", or engine_version '
        f"to {later} or later"
    )


def kv_cache_notes(version: VllmVersion | None, kv_cache_dtype: str, gpu: GpuSpec) -> tuple[str, ...]:
    """What the serve command cannot say about its KV cache on ``gpu``: an e5m2 cache on compute capability 9.0
    under 0.8.2 to 0.21 (module docstring)."""
    if kv_cache_dtype != "fp8_e5m2" or gpu.compute_capability != "9.0" or not _within(version, FA_E5M2_BROKEN):
        return ()
    assert version is not None
    if version < FA_E5M2_RAISES_SINCE:
        effect = "reads it back as e4m3 (wrong output, no error)"
    else:
        effect = 'stops the server ("Unrecognized FP8 dtype: fp8_e5m2")'
    return (
        f"--kv-cache-dtype fp8_e5m2 on {gpu.name}: vLLM {version}'s default attention backend there, "
        f'FlashAttention, {effect}; kv_cache_dtype = "fp8" (e4m3, the same 1 byte: the memory plan stands) avoids it',
    )
