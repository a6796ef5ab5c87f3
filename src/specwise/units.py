"""Units: SI inside (bytes, seconds, FLOP/s), conversion only for display."""

from __future__ import annotations

import math

GIB = 1024**3
MIB = 1024**2
GB = 10**9

# Bytes per element of the floating-point formats a checkpoint or KV cache is held in.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
}

# Aliases users (and config.json's ``torch_dtype``) write for the same formats.
DTYPE_ALIASES: dict[str, str] = {
    "float32": "fp32",
    "float": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp8_e4m3fn": "fp8",
}


def canonical_dtype(name: str) -> str:
    """Map ``bfloat16``/``float16``/... to the short names used everywhere (``bf16``...)."""
    key = name.strip().lower()
    key = DTYPE_ALIASES.get(key, key)
    if key not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(DTYPE_BYTES)}")
    return key


# vLLM's ``--kv-cache-dtype`` choices (``CacheDType`` in vllm/config/cache.py, vLLM 0.32) whose bytes per element
# specwise prices: the model's dtype (auto), 16-bit, or one byte (every fp8 variant). vLLM's other choices (fp8_inc,
# fp8_ds_mla, nvfp4, turboquant_*, *_per_token_head...) store scales or sub-byte packing this planner does not model.
KV_CACHE_DTYPES: tuple[str, ...] = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")


def kv_cache_dtype(choice: str, model_dtype: str) -> str:
    """The KV cache's element format (a :data:`DTYPE_BYTES` key) for a ``--kv-cache-dtype`` choice: ``auto`` is the
    model's dtype. ``choice`` must be one of :data:`KV_CACHE_DTYPES` (callers check it and name their own flag)."""
    return canonical_dtype(model_dtype if choice == "auto" else choice)


def fmt_bytes(n_bytes: float) -> str:
    """Human-readable binary size: ``141.1 GB (131.4 GiB)`` style is too long for tables; GiB only."""
    sign = "-" if n_bytes < 0 else ""
    value = abs(n_bytes)
    if value >= GIB:
        return f"{sign}{value / GIB:.2f} GiB"
    if value >= MIB:
        return f"{sign}{value / MIB:.1f} MiB"
    if value >= 1024:
        return f"{sign}{value / 1024:.1f} KiB"
    return f"{sign}{value:.0f} B"


def fmt_count(n: float) -> str:
    """Parameter counts and token counts: 70.55B, 1.24B, 494.0M, 46,603."""
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    return f"{n:,.0f}"


def fmt_about(x: float) -> str:
    """An interpolated value to two significant digits, in plain notation: 2.6, 26, 150 (never 1.5e+02)."""
    return f"{float(f'{x:.2g}'):g}"


def fmt_rate(x: float, beside: float | None = None) -> str:
    """A capacity in requests/s: one decimal from 1 up, two significant digits below it (0.12, 0.054: a capacity of
    0.118 beside one of 0.204 is not "0.1" and "0.2", review s59; at most 6 decimals), and with ``beside`` (the load
    it is set against) as many more decimals as show which side of it it is on (:func:`fmt_beside`)."""
    rounded = float(f"{x:.2g}") if math.isfinite(x) else x
    places = 1 if not 0 < abs(rounded) < 1 else min(6, max(2, 1 - math.floor(math.log10(abs(rounded)))))
    return fmt_beside(x, beside, places) if beside is not None else f"{x:.{places}f}"


def fmt_sig3(x: float) -> str:
    """A table's value to three significant digits, trailing zeros kept, in plain notation from 1e-4 up: 0.710,
    0.771, 1.10, 25.0, 10,200 (``:.3g`` printed 0.71 beside 0.771 and 1.02e+04 in one column: review s59); smaller
    values in e-notation, as ``:.3g`` writes them; -0 as 0."""
    x = x + 0.0  # -0.0 -> 0.0
    if math.isfinite(x) and abs(float(f"{x:.3g}")) >= 1000:  # 999.6 too: it rounds to 1.00e+03
        return f"{x:,.0f}"
    text = f"{x:#.3g}"
    return text[:-1] if text.endswith(".") else text


def fmt_pct(x: float | None) -> str:
    """A share or a relative error as a whole percent: 0.043 -> 4%; None (nothing to measure it on) -> "-"."""
    return "-" if x is None else f"{x:.0%}"


def fmt_x(x: float | None) -> str:
    """A speedup as ``1.23x``; ``-`` where there is none."""
    return "-" if x is None else f"{x:.2f}x"


def fmt_ratio(x: float, edge: float = 1.0) -> str:
    """A speedup to two decimals, or to three where two would print ``edge``, the threshold it is compared with,
    for a value on one side of it: 0.998 is "below 1x" and shows as 0.998, not 1.00 (1.049 is not "1.05")."""
    return fmt_beside(x, edge, 2)


def fmt_beside(x: float, edge: float, places: int) -> str:
    """``x`` to ``places`` decimals, or to as many more (up to three) as show which side of ``edge`` it is on: a
    capacity of 3.996 req/s beside a load of 4 QPS is "3.996", not "4.0"."""
    while places < 3 and round(x, places) == round(edge, places) and x != edge:
        places += 1
    return f"{x:.{places}f}"
