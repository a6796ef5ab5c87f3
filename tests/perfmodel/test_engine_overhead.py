"""The engine's per-step costs outside the forward passes (perfmodel/profiles.EngineOverhead), each term on its own,
and how StepCost charges them: a fixed cost per step, one per running sequence, one per draft token proposed, the
legacy rejection-sampler share of the verification pass; in series with the forward pass, or overlapped with it
where the engine overlaps its scheduler and nothing speculates (SGLang's overlap scheduler)."""

from __future__ import annotations

import numpy as np
import pytest

from specwise.perfmodel.batch import BatchShape
from specwise.perfmodel.profiles import EngineOverhead, published_fit
from specwise.sim.stepcost import StepCost

VERIFY_S = 0.010  # a stand-in forward pass: 10 ms whatever the batch
PROPOSE_S = 0.002


class FixedPass:
    """A step-time predictor whose pass costs VERIFY_S, so only the engine's terms vary."""

    totals_exact = False

    def step_time_s(self, batch: BatchShape) -> float:
        return VERIFY_S


class FixedDraft:
    def propose_time_s(self, decode: BatchShape, k: int, verify_time_s: float) -> float:
        return PROPOSE_S if k > 0 else 0.0

    def prefill_time_s(self, prefill: BatchShape) -> float:
        return 0.0


def _batch(seqs: int, tokens_each: int = 1) -> tuple[BatchShape, np.ndarray, np.ndarray]:
    q = np.full(seqs, tokens_each, dtype=np.int64)
    c = np.full(seqs, 100, dtype=np.int64)
    return BatchShape(q, c, int(q.sum())), np.ones(seqs, dtype=np.int64), c


def test_the_fixed_term_is_paid_once_per_step() -> None:
    o = EngineOverhead(base_s=1e-3, per_seq_s=0.0)
    assert o.step_s(1) == o.step_s(256) == pytest.approx(1e-3)


def test_the_per_sequence_term_grows_with_the_batch() -> None:
    o = EngineOverhead(base_s=0.0, per_seq_s=2e-5)
    assert o.step_s(64) == pytest.approx(64 * 2e-5)
    assert o.step_s(128) - o.step_s(64) == pytest.approx(64 * 2e-5)


def test_the_per_draft_token_term_grows_with_batch_times_k() -> None:
    o = EngineOverhead(base_s=0.0, per_draft_token_s=1e-6)
    assert o.speculating_step_s(0.0, 64, 64 * 4, VERIFY_S) == pytest.approx(256e-6)
    assert o.speculating_step_s(0.0, 64, 0, VERIFY_S) == 0.0


def test_the_legacy_rejection_share_is_of_the_verification_pass() -> None:
    o = EngineOverhead(base_s=0.0, rejection_fraction=0.015)
    assert o.speculating_step_s(0.0, 1, 0, 0.020) == pytest.approx(0.0003)


def test_without_speculation_the_engine_runs_in_series_or_under_the_pass() -> None:
    serial = EngineOverhead(base_s=1e-3, per_seq_s=1e-5)
    overlapped = EngineOverhead(base_s=1e-3, per_seq_s=1e-5, overlapped_without_speculation=True)
    assert serial.plain_step_s(VERIFY_S, 100) == pytest.approx(VERIFY_S + 2e-3)
    assert overlapped.plain_step_s(VERIFY_S, 100) == pytest.approx(VERIFY_S)  # hidden under the pass
    assert overlapped.plain_step_s(1e-3, 100) == pytest.approx(2e-3)  # the longer of the two


def test_stepcost_charges_each_term_once() -> None:
    o = EngineOverhead(base_s=1e-3, per_seq_s=1e-5, per_draft_token_s=1e-6, rejection_fraction=0.01)
    batch, draft_q, draft_ctx = _batch(32, tokens_each=5)  # k = 4: 4 draft tokens + 1 per sequence verified
    spec = StepCost(FixedPass(), FixedDraft(), o).decode_step_s(batch, draft_q, draft_ctx, 4)  # type: ignore[arg-type]
    expected = VERIFY_S + (1e-3 + 32 * 1e-5) + PROPOSE_S + (32 * 4 * 1e-6 + 0.01 * VERIFY_S)
    assert spec == pytest.approx(expected)
    plain_batch, q1, c1 = _batch(32)
    plain = StepCost(FixedPass(), None, o).decode_step_s(plain_batch, q1, c1, 0)  # type: ignore[arg-type]
    assert plain == pytest.approx(VERIFY_S + 1e-3 + 32 * 1e-5)


def test_speculation_turns_sglangs_overlap_off() -> None:
    """The same engine costs hidden without speculation are paid in series with it (SGLang sets
    disable_overlap_schedule for EAGLE, EAGLE3, STANDALONE and NGRAM)."""
    o = EngineOverhead(base_s=3e-3, per_seq_s=0.0, overlapped_without_speculation=True)
    batch, draft_q, draft_ctx = _batch(8, tokens_each=3)
    plain_batch, q1, c1 = _batch(8)
    plain = StepCost(FixedPass(), None, o).decode_step_s(plain_batch, q1, c1, 0)  # type: ignore[arg-type]
    spec = StepCost(FixedPass(), FixedDraft(), o).decode_step_s(batch, draft_q, draft_ctx, 2)  # type: ignore[arg-type]
    assert plain == pytest.approx(VERIFY_S)
    assert spec == pytest.approx(VERIFY_S + 3e-3 + PROPOSE_S)


@pytest.mark.parametrize("engine", ["vllm-v1", "sglang"])
def test_the_fitted_overheads_are_small_beside_a_pass_but_grow_with_load(engine: str) -> None:
    """What the published fit charges at batch 64 with k = 4: every term positive, the total under a few
    milliseconds (an H100 pass of an 8B model is ~6-10 ms), and more at 128 than at 1 sequence."""
    o = published_fit().profiles[engine].overhead
    assert o.base_s > 0 and o.per_seq_s > 0 and o.per_draft_token_s > 0
    at_64 = o.speculating_step_s(0.0, 64, 64 * 4, VERIFY_S)
    assert 0 < at_64 < 5e-3
    assert o.step_s(128) > o.step_s(1)
