"""VRAM planning for a target model and its speculative draft on a vLLM deployment (pure)."""

from specwise.contracts.memory import ModelMemory
from specwise.memory.planner import (
    MemoryPlan,
    MemoryPlanRequest,
    check_draft_tp,
    check_target_alone,
    plan_memory,
)
from specwise.memory.reserve import ReserveBreakdown

__all__ = [
    "MemoryPlan",
    "MemoryPlanRequest",
    "ModelMemory",
    "ReserveBreakdown",
    "check_draft_tp",
    "check_target_alone",
    "plan_memory",
]
