"""One model as a memory plan deploys it: the plan-memory JSON's ``target`` and ``draft`` objects (README
"plan-memory JSON contract"), written by :meth:`specwise.memory.MemoryPlan.to_dict` and read back inside an
advice's candidate memory (:class:`specwise.contracts.advice.CandidateMemory`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from specwise.contracts.document import Fields


@dataclass(frozen=True)
class ModelMemory:
    """One model as deployed: its size and per-token KV at the chosen dtypes and parallelism."""

    name: str  # JSON "id"
    params: int
    active_params: int
    dtype: str
    quantization: str
    tp: int
    weight_bytes: int
    weight_bytes_per_gpu: int
    kv_bytes_per_token: int
    kv_bytes_per_token_per_gpu: int
    kv_bytes_per_max_len_seq_per_gpu: int

    def to_dict(self) -> dict[str, Any]:
        """Its JSON, key for key in field order (``name`` written as ``id``)."""
        return {"id" if f.name == "name" else f.name: getattr(self, f.name) for f in fields(self)}

    to_json = to_dict

    @classmethod
    def from_json(cls, f: Fields) -> ModelMemory:
        """Read back; a key it lacks reads as 0 or empty."""

        def n(key: str) -> int:
            return f.integer(key, 0) or 0

        return cls(
            f.text("id", "") or "",
            n("params"),
            n("active_params"),
            f.text("dtype", "") or "",
            f.text("quantization", "") or "",
            n("tp"),
            n("weight_bytes"),
            n("weight_bytes_per_gpu"),
            n("kv_bytes_per_token"),
            n("kv_bytes_per_token_per_gpu"),
            n("kv_bytes_per_max_len_seq_per_gpu"),
        )
