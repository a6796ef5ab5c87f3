"""VRAM planning for a target model and its speculative draft on a vLLM deployment (pure)."""

from specwise.memory.planner import MemoryPlan, MemoryPlanRequest, ModelMemory, plan_memory
from specwise.memory.reserve import ReserveBreakdown

__all__ = ["MemoryPlan", "MemoryPlanRequest", "ModelMemory", "ReserveBreakdown", "plan_memory"]
