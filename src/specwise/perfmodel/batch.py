"""The shape of one forward pass: per sequence, its query tokens and the context it attends to."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class BatchShape:
    """One forward pass over ``len(query_tokens)`` sequences.

    ``query_tokens[i]``: tokens sequence i feeds this pass (1 for decode, k+1 for verification, a
    chunk for prefill). ``context_tokens[i]``: tokens already in its KV cache. ``logit_rows``:
    positions whose logits are computed (vLLM computes them only for sampled positions: every
    verified position, the last position of a prefill that completes).
    """

    query_tokens: IntArray
    context_tokens: IntArray
    logit_rows: int = field(default=-1)

    def __post_init__(self) -> None:
        if self.query_tokens.shape != self.context_tokens.shape:
            raise ValueError("BatchShape: query_tokens and context_tokens differ in length")
        if self.logit_rows < 0:
            object.__setattr__(self, "logit_rows", int(self.query_tokens.size))

    @classmethod
    def uniform(cls, num_seqs: int, query: int, context: int) -> BatchShape:
        return cls(
            np.full(num_seqs, query, dtype=np.int64),
            np.full(num_seqs, context, dtype=np.int64),
            logit_rows=num_seqs * query,
        )

    @property
    def num_seqs(self) -> int:
        return int(self.query_tokens.size)

    @property
    def batched_tokens(self) -> int:
        return int(self.query_tokens.sum())

    @property
    def kv_tokens(self) -> int:
        """Tokens of KV read: each sequence's context plus its own new tokens."""
        return int(self.context_tokens.sum() + self.query_tokens.sum())
