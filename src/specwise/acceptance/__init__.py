"""Acceptance: vLLM's definitions, the per-step accepted-token distribution, closed forms (pure)."""

from specwise.acceptance.model import AcceptanceModel, expected_speedup_iid, expected_tokens_per_step_iid

__all__ = ["AcceptanceModel", "expected_speedup_iid", "expected_tokens_per_step_iid"]
