"""What a profile run measures (validated once, so the runner never sees a bad value)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from specwise.errors import CLI_FLAGS, FieldNames, SpecwiseError
from specwise.methods import MAX_K, PROFILABLE
from specwise.values import ValueRefusal, non_negative_int, positive_int

METHODS = PROFILABLE  # what --method takes: the methods table's profilable rows
DRAFTING_MODES = ("greedy", "probabilistic")
CONTEXTS = ("per-temperature", "shared")
ESTIMATORS = ("realized", "expected")


@dataclass(frozen=True)
class ProfileSettings:
    method: str = "draft_model"
    temperatures: tuple[float, ...] = (0.0, 0.5, 1.0)
    k_values: tuple[int, ...] = tuple(range(1, 9))
    max_new_tokens: int = 128
    max_prompt_tokens: int = 1024
    top_k: int = 0
    top_p: float = 1.0
    contexts: str = "per-temperature"
    estimator: str = "realized"
    quantizations: tuple[dict[str, str], ...] = field(default_factory=tuple)
    seed: int = 0
    batch_size: int = 8
    prompt_lookup_min: int = 5
    prompt_lookup_max: int = 5
    suffix_max_depth: int = 24
    suffix_min_token_prob: float = 0.1
    bootstrap_resamples: int = 1000

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise SpecwiseError(f"method: {self.method!r} is not one of {', '.join(METHODS)}")
        if not self.temperatures:
            raise SpecwiseError("temperatures: at least one is needed")
        for t in self.temperatures:
            if not t >= 0 or t != t:
                raise SpecwiseError(f"temperatures: must be >= 0, got {t}")
        if not self.k_values or min(self.k_values) < 1 or max(self.k_values) > MAX_K:
            raise SpecwiseError(f"k: values must be in 1..{MAX_K}, got {list(self.k_values)}")
        if self.max_new_tokens < 2:
            raise SpecwiseError(f"max_new_tokens: must be >= 2, got {self.max_new_tokens}")
        if self.contexts not in CONTEXTS:
            raise SpecwiseError(f"contexts: {self.contexts!r} is not one of {', '.join(CONTEXTS)}")
        if self.estimator not in ESTIMATORS:
            raise SpecwiseError(f"estimator: {self.estimator!r} is not one of {', '.join(ESTIMATORS)}")
        if not 0 < self.top_p <= 1 or self.top_k < 0:
            raise SpecwiseError("top_p must be in (0, 1] and top_k >= 0")
        if not 1 <= self.prompt_lookup_min <= self.prompt_lookup_max:
            raise SpecwiseError(
                f"prompt_lookup_min={self.prompt_lookup_min} must be >= 1 and <= "
                f"prompt_lookup_max={self.prompt_lookup_max}"
            )
        if self.method != "draft_model" and self.quantizations and any("draft" in q for q in self.quantizations):
            raise SpecwiseError(f"quantize: method {self.method} has no draft model to quantise")

    @property
    def k_max(self) -> int:
        return max(self.k_values)

    @property
    def drafting_modes(self) -> tuple[str, ...]:
        # n-gram and suffix proposals are deterministic: a one-hot q, i.e. greedy drafting.
        return DRAFTING_MODES if self.method == "draft_model" else ("greedy",)

    def continuation_temperature_groups(self) -> list[tuple[float, tuple[float, ...]]]:
        """(temperature the continuation is sampled at, temperatures evaluated on it)."""
        temps = tuple(sorted(set(self.temperatures)))
        if self.contexts == "shared":
            return [(temps[0], temps)]
        return [(t, (t,)) for t in temps]


VERIFY_K, VERIFY_PATHS = 4, 1
VERIFY_DEFAULTS: dict[str, object] = {
    "verify_temperatures": (0.0, 1.0),
    "verify_k": VERIFY_K,
    "verify_paths": VERIFY_PATHS,
}
"""What verification (``--verify``) runs when its other settings are not given."""


def _refuse_unused(given: list[str], needed: str, why: str = "") -> None:
    if given:
        raise SpecwiseError(f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} {needed}{why}")


def check_verify_options(
    verify: bool, options: Mapping[str, object], switch: str, names: FieldNames = CLI_FLAGS
) -> None:
    """The speculative loop's settings (``options``: name -> value, None when not given) act only with
    verification on (``switch`` names what turns it on): without it they are refused in one line, never silently
    ignored. The command line and the API share this rule."""
    if not verify:
        _refuse_unused([names.name(n) for n, v in options.items() if v is not None], switch)


def lookup_range(method: str, lo: int | None, hi: int | None, names: FieldNames = CLI_FLAGS) -> tuple[int, int]:
    """ngram's (shortest, longest) n-gram: vLLM's default 5, 5 when neither is given, else one stands for both.
    They set n-gram lookup only: given with another method (a draft model, suffix decoding) they are refused in one
    line, never silently ignored. The command line and the API share this rule."""
    if method != "ngram":
        given = [names.name(n) for n, v in (("prompt_lookup_min", lo), ("prompt_lookup_max", hi)) if v is not None]
        _refuse_unused(given, names.setting("method", "ngram"), f" (method {method} has no prompt lookup)")
    if lo is None:
        return (5, 5) if hi is None else (hi, hi)  # 5, 5: vLLM's SpeculativeConfig default
    if hi is not None and lo > hi:
        raise SpecwiseError(
            f"{names.setting('prompt_lookup_min', lo)} is above {names.setting('prompt_lookup_max', hi)}"
        )
    return lo, (hi if hi is not None else lo)


def parse_k_values(text: str) -> tuple[int, ...]:
    """``1-8`` or ``1,2,4`` -> sorted unique ints."""
    values: set[int] = set()
    try:
        for part in (p.strip() for p in text.split(",") if p.strip()):
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if lo > hi:
                    raise ValueError
                if hi > MAX_K:  # checked before the range is built: 1-3000000000 must not fill memory
                    raise SpecwiseError(f"--k {text!r}: k above {MAX_K} is not profiled")
                values.update(range(lo, hi + 1))
            else:
                values.add(int(part))
    except ValueError:
        raise SpecwiseError(f"--k {text!r}: expected a range like 1-8 or a list like 1,2,4") from None
    if not values or min(values) < 1:
        raise SpecwiseError(f"--k {text!r}: k must be >= 1 (k = 0 is no speculation)")
    if max(values) > MAX_K:
        raise SpecwiseError(f"--k {text!r}: k above {MAX_K} is not profiled")
    return tuple(sorted(values))


def parse_temperatures(text: str) -> tuple[float, ...]:
    try:
        temps = tuple(float(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise SpecwiseError(f"--temperatures {text!r}: expected numbers like 0,0.5,1.0") from None
    if not temps:
        raise SpecwiseError("--temperatures: at least one is needed")
    for t in temps:
        if not t >= 0 or t != t or t == float("inf"):
            raise SpecwiseError(f"--temperatures: {t} is not allowed; temperatures are finite and >= 0")
    return temps


def thread_count(text: str) -> int:
    """``threads``: a positive integer, at most :data:`~specwise.profiler.threads.THREADS_PER_CORE` per core this
    process may run on."""
    from specwise.profiler.threads import check_threads

    try:
        return check_threads(positive_int(text))
    except SpecwiseError as exc:
        raise ValueRefusal(str(exc)) from None


CHECKS: dict[str, Callable[[str], int]] = {
    "max_prompts": positive_int,
    "max_new_tokens": positive_int,
    "top_k": non_negative_int,
    "prompt_lookup_min": positive_int,
    "prompt_lookup_max": positive_int,
    "batch_size": positive_int,
    "threads": thread_count,
    "seed": non_negative_int,
}
"""The integer settings' checks of their text, by setting (``specwise profile``'s flags and the API's arguments;
:class:`~specwise.values.ValueRefusal` on a bad one)."""


def check_method_draft(method: str | None, draft: object, names: FieldNames = CLI_FLAGS) -> None:
    """A draft model's method needs a draft; n-gram and suffix lookup take none (checked before any weights load)."""
    if method is not None and method not in METHODS:
        raise SpecwiseError(f"{names.name('method')}: {method!r} is not one of {', '.join(METHODS)}")
    if (method or "draft_model") == "draft_model" and draft is None:
        raise SpecwiseError(f"{names.name('method')} draft_model needs a {names.name('draft')} model")
    if method not in (None, "draft_model") and draft is not None:
        raise SpecwiseError(
            f"{names.name('method')} {method}: drafts from the prompt, not with a {names.name('draft')}"
        )
