"""specwise: will speculative decoding make your vLLM deployment faster or slower?

The Python API (:mod:`specwise.api`) does what the commands do and returns their typed documents::

    import specwise
    advice = specwise.advise("example:advise/summarize-low-qps")   # -> Advice
    sweep = specwise.simulate("my-scenario.toml")                   # -> SweepResult
    plan = specwise.plan_memory("Qwen/Qwen3-8B", "L40S", draft="Qwen/Qwen3-0.6B")  # -> MemoryPlan
    doc = specwise.profile("models/target", "models/draft")        # -> ProfileDoc (specwise[profile])
    run = specwise.bench("http://127.0.0.1:8000", "my-model")      # -> BenchDoc
    pair = specwise.check_pair("Qwen/Qwen3-8B", "Qwen/Qwen3-0.6B")  # -> PairReport
    view = specwise.inspect("Qwen/Qwen3-8B")                        # -> ModelSpecView
    summary = specwise.prompt_summary("builtin:chat")              # -> PromptSummary (specwise prompts)

``import specwise`` loads none of it: each name is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specwise.errors import SpecwiseError

if TYPE_CHECKING:
    from specwise.api import advise, bench, check_pair, inspect, plan_memory, profile, prompt_summary, simulate

__all__ = [
    "SpecwiseError",
    "__version__",
    "advise",
    "bench",
    "check_pair",
    "inspect",
    "plan_memory",
    "profile",
    "prompt_summary",
    "simulate",
]
__version__ = "0.1.0"

# specwise.api.__all__, named here so that ``import specwise`` imports nothing more (a test keeps the two equal)
_API = frozenset({"advise", "bench", "check_pair", "inspect", "plan_memory", "profile", "prompt_summary", "simulate"})


def __getattr__(name: str) -> Any:
    if name in _API:
        from specwise import api

        return getattr(api, name)
    raise AttributeError(f"module 'specwise' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names (the lazily imported functions among them), not this module's imports."""
    return sorted(__all__)
