"""The largest step a simulation ran (``SimResult.peak_*``): what a calibration's measured range is checked against
(review 11 #5). Exact where the answer is known by hand, within the engine's limits, and the same on every path."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specwise.sim import engine
from specwise.sim.workload import RequestTable, generate_requests
from specwise.traffic import Arrivals
from tests.sim.test_engine import _classes, _run
from tests.sim.trace_cases import CASES


@pytest.mark.parametrize("k", [0, 3])
def test_a_batch_that_starts_together_peaks_at_its_size_and_its_last_step(k: int) -> None:
    """Eight 100-token prompts at t=0, each generating 50 tokens, with nothing accepted (AL 1): they prefill in one
    step of 800 tokens and decode together. A sequence that has generated g tokens has computed 100 + g - 1 and feeds
    1 + k tokens, the full k however few it still owes (vLLM drafts num_speculative_tokens for every request and cuts
    what passes max_tokens after verification), so the last step, at g = 49, reads 8 x (100 + 49 + k) KV tokens and
    none reads more."""
    n, prompt, out = 8, 100, 50
    req = RequestTable(np.zeros(n), np.full(n, prompt), np.full(n, out), np.zeros(n, dtype=np.int64))
    res = _run(req, _classes(alpha=0.0), k)
    assert res.peak_seqs == n
    assert res.peak_batched_tokens == n * prompt
    assert res.peak_kv_tokens == n * (prompt + out - 1 + k)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qps=st.floats(0.5, 200.0), k=st.integers(0, 6), n=st.integers(1, 60), seed=st.integers(0, 2**16))
def test_the_peak_is_within_the_engine_limits(qps: float, k: int, n: int, seed: int) -> None:
    classes = _classes()
    req = generate_requests(classes, Arrivals("poisson", qps), n, np.random.default_rng(seed))
    res = _run(req, classes, k, max_num_seqs=16, batched=512)
    assert 1 <= res.peak_seqs <= min(16, n)
    assert 1 <= res.peak_batched_tokens <= 512
    longest = int((req.prompt_tokens + req.output_tokens).max())
    assert longest - 1 <= res.peak_kv_tokens <= res.peak_seqs * (longest + k)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_path_reports_the_same_peak(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scalar, vector and fast-forward paths take the same steps (tests/sim/test_trace_unchanged.py), so they
    find the same largest one."""
    seen = set()
    for limits in (None, (10**9, 10**9), (-1, -1), (3, 1)):
        if limits is not None:
            monkeypatch.setattr(engine, "SCALAR_MAX_BATCH", limits[0])
            monkeypatch.setattr(engine, "SCALAR_RESUME_BATCH", limits[1])
        res = CASES[case]().run()
        seen.add(json.dumps([res.peak_seqs, res.peak_batched_tokens, res.peak_kv_tokens]))
    assert len(seen) == 1, seen
