"""Simulator invariants (hypothesis) and behaviour checks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specwise.acceptance.model import AcceptanceModel
from specwise.catalog import catalog_model_spec, resolve_gpu
from specwise.errors import SpecError
from specwise.perfmodel import CalibratedPredictor, ModelDraftCost, NgramDraftCost, RooflinePredictor
from specwise.sim.engine import EngineConfig, SimResult, SpecConfig, simulate
from specwise.sim.metrics import summarize
from specwise.sim.workload import RequestTable, WorkloadClass, generate_requests
from specwise.traffic import Arrivals, LengthDist

TARGET = CalibratedPredictor(3.926e-8, 2.101e-5, 5.886e-3)  # SpecDecode-Bench's Llama-8B/H100 fit
DRAFT = ModelDraftCost(CalibratedPredictor(2.378e-9, 8.414e-7, 2.135e-3))  # its EAGLE draft fit


def _classes(alpha: float = 0.7, **kw: object) -> list[WorkloadClass]:
    return [
        WorkloadClass(
            "c",
            1.0,
            LengthDist("uniform", 0, 0, 8, 400),
            LengthDist("uniform", 0, 0, 1, 120),
            AcceptanceModel.iid(alpha),
            **kw,
        )
    ]  # type: ignore[arg-type]


def _run(
    requests: RequestTable,
    classes: list[WorkloadClass],
    k: int,
    *,
    kv: int = 200_000,
    seed: int = 1,
    max_num_seqs: int = 64,
    batched: int = 2048,
) -> SimResult:
    spec = SpecConfig(k, DRAFT) if k else None
    engine = EngineConfig(kv_capacity_tokens=kv, max_num_seqs=max_num_seqs, max_num_batched_tokens=batched)
    return simulate(requests, classes, engine, TARGET, spec, np.random.default_rng(seed))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    qps=st.floats(0.5, 200.0),
    k=st.integers(0, 6),
    alpha=st.floats(0.0, 1.0),
    n=st.integers(1, 80),
    kv=st.sampled_from([2_000, 20_000, 200_000]),
    seed=st.integers(0, 2**16),
)
def test_every_request_finishes_and_tokens_are_conserved(
    qps: float, k: int, alpha: float, n: int, kv: int, seed: int
) -> None:
    classes = _classes(alpha)
    req = generate_requests(classes, Arrivals("poisson", qps), n, np.random.default_rng(seed))
    res = _run(req, classes, k, kv=kv, seed=seed)
    assert not np.isnan(res.finish_s).any() and not np.isnan(res.first_token_s).any()
    assert (res.first_token_s >= req.arrival_s).all() and (res.finish_s >= res.first_token_s).all()
    # Each output token is emitted exactly once: first tokens + token-normalised ITL weights.
    assert int(res.itl_weight.sum()) + n == int(req.output_tokens.sum())
    assert res.accepted_tokens <= res.draft_tokens
    assert int(res.accepted_per_position.sum()) == res.accepted_tokens
    if k == 0:
        assert res.drafts == 0


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), qps=st.floats(1.0, 50.0))
def test_k0_speculation_equals_baseline(seed: int, qps: float) -> None:
    classes = _classes()
    req = generate_requests(classes, Arrivals("poisson", qps), 60, np.random.default_rng(seed))
    engine = EngineConfig(kv_capacity_tokens=50_000, max_num_seqs=32, max_num_batched_tokens=1024)
    base = simulate(req, classes, engine, TARGET, None, np.random.default_rng(seed))
    k0 = simulate(req, classes, engine, TARGET, SpecConfig(0, DRAFT), np.random.default_rng(seed))
    np.testing.assert_array_equal(base.finish_s, k0.finish_s)
    np.testing.assert_array_equal(base.first_token_s, k0.first_token_s)


def test_same_seed_same_trace_and_other_seed_differs() -> None:
    classes = _classes()
    req = generate_requests(classes, Arrivals("gamma", 20.0, cv=2.0), 200, np.random.default_rng(3))
    a, b = _run(req, classes, 4, seed=9), _run(req, classes, 4, seed=9)
    np.testing.assert_array_equal(a.finish_s, b.finish_s)
    assert a.accepted_tokens == b.accepted_tokens
    c = _run(req, classes, 4, seed=10)
    assert c.accepted_tokens != a.accepted_tokens


def _batch1_tpot(alpha: float, k: int) -> float:
    classes = _classes(alpha)
    req = RequestTable(np.array([0.0]), np.array([200]), np.array([400]), np.array([0]))
    res = _run(req, classes, k)
    return float((res.finish_s[0] - res.first_token_s[0]) / 399)


def test_al_one_never_gains_and_more_alpha_never_hurts_at_batch1() -> None:
    base = _batch1_tpot(0.5, 0)
    for k in (1, 3, 6):
        assert _batch1_tpot(0.0, k) > base  # AL = 1: pure cost
    tpots = [_batch1_tpot(a, 4) for a in (0.0, 0.3, 0.6, 0.9, 1.0)]
    assert all(later <= earlier * 1.02 for earlier, later in itertools.pairwise(tpots))
    assert tpots[-1] < base / 2


def test_measured_acceptance_matches_the_model() -> None:
    model = AcceptanceModel.from_per_position([0.9, 0.6, 0.35, 0.2])
    classes = [WorkloadClass("c", 1.0, LengthDist("fixed", 100), LengthDist("fixed", 300), model)]
    req = generate_requests(classes, Arrivals("poisson", 5.0), 300, np.random.default_rng(0))
    res = _run(req, classes, 4)
    summary = summarize(res, classes)
    assert summary.mean_acceptance_length == pytest.approx(model.mean_acceptance_length(4), abs=0.05)
    per_pos = res.accepted_per_position / res.drafts
    assert per_pos == pytest.approx(model.per_position(4), abs=0.03)


def test_small_kv_cache_preempts_and_still_finishes() -> None:
    classes = [WorkloadClass("c", 1.0, LengthDist("fixed", 300), LengthDist("fixed", 300), AcceptanceModel.iid(0.6))]
    req = generate_requests(classes, Arrivals("poisson", 100.0), 60, np.random.default_rng(1))
    res = _run(req, classes, 3, kv=2_000)
    assert res.preemptions.sum() > 0 and not np.isnan(res.finish_s).any()


def test_request_larger_than_cache_is_a_clear_error() -> None:
    classes = _classes()
    req = RequestTable(np.array([0.0]), np.array([5000]), np.array([100]), np.array([0]))
    with pytest.raises(SpecError, match="needs 5100 KV tokens"):
        _run(req, classes, 0, kv=4096)


@pytest.mark.parametrize(("k", "needs", "fits"), [(0, 1000, 985), (4, 1003, 982)])
def test_a_request_that_fits_in_tokens_but_not_in_blocks_is_refused_not_waited_for(
    k: int, needs: int, fits: int
) -> None:
    """Review s46a F4: 995 + 5 tokens in a 1,000-token cache (62 blocks of 16, 992 tokens) was never admitted and the
    loop waited for it forever; 985 + 7 (62 blocks) runs. With k = 4 the last step also holds its 4 drafts beside the
    token owed (review s50a F1): 995 + 5 needs 1,003, and 982 + 7 (+ 3) is what fits."""
    classes = _classes()
    with pytest.raises(SpecError, match=rf"needs {needs} KV tokens \(63 blocks of 16\) but the cache holds 992"):
        _run(RequestTable(np.array([0.0]), np.array([995]), np.array([5]), np.array([0])), classes, k, kv=1000)
    res = _run(RequestTable(np.array([0.0]), np.array([fits]), np.array([7]), np.array([0])), classes, k, kv=1000)
    assert np.isfinite(res.finish_s).all() and res.peak_kv_tokens <= 992
    with pytest.raises(SpecError, match="needs 993 KV tokens"):
        _run(RequestTable(np.array([0.0]), np.array([fits + 1]), np.array([7]), np.array([0])), classes, k, kv=1000)


def test_k_schedule_switches_k_by_batch_size() -> None:
    spec = SpecConfig(4, DRAFT, schedule=((1, 8, 4), (9, 32, 2), (33, 512, 0)))
    assert [spec.k_for_batch(b) for b in (1, 8, 9, 32, 33, 600)] == [4, 4, 2, 2, 0, 0]


def test_mixed_classes_are_simulated_as_mixed() -> None:
    classes = [
        WorkloadClass("code", 1.0, LengthDist("fixed", 200), LengthDist("fixed", 200), AcceptanceModel.iid(0.9)),
        WorkloadClass("chat", 1.0, LengthDist("fixed", 200), LengthDist("fixed", 200), AcceptanceModel.iid(0.2)),
    ]
    req = generate_requests(classes, Arrivals("poisson", 2.0), 200, np.random.default_rng(0))
    s = summarize(_run(req, classes, 4), classes)
    assert s.by_class["code"].tpot_s.p50 < 0.7 * s.by_class["chat"].tpot_s.p50
    assert s.by_class["code"].requests + s.by_class["chat"].requests == 200


def test_ngram_on_real_roofline() -> None:
    target = RooflinePredictor(catalog_model_spec("meta-llama/Llama-3.1-8B-Instruct"), resolve_gpu("H100"))
    classes = _classes(0.6)
    req = generate_requests(classes, Arrivals("poisson", 1.0), 50, np.random.default_rng(0))
    engine = EngineConfig(kv_capacity_tokens=100_000)
    base = summarize(simulate(req, classes, engine, target, None, np.random.default_rng(0)), classes)
    ngram = summarize(
        simulate(req, classes, engine, target, SpecConfig(3, NgramDraftCost()), np.random.default_rng(0)), classes
    )
    assert ngram.overall.tpot_s.p50 < base.overall.tpot_s.p50


def test_distributions_validate() -> None:
    with pytest.raises(SpecError, match="rate must be > 0"):
        Arrivals("poisson", -1.0)
    with pytest.raises(SpecError, match="mean"):
        LengthDist("lognormal", mean=10, cv=0.5, min=20, max=30)
    with pytest.raises(SpecError, match="non-decreasing"):
        Arrivals("trace", trace_s=(1.0, 0.5))
    lengths = LengthDist("lognormal", 500, 0.8, 10, 4000).sample(np.random.default_rng(0), 20_000)
    assert lengths.min() >= 10 and lengths.max() <= 4000 and lengths.mean() == pytest.approx(500, rel=0.05)
    gaps = np.diff(Arrivals("gamma", 10.0, cv=3.0).times(np.random.default_rng(0), 20_000))
    assert gaps.mean() == pytest.approx(0.1, rel=0.05) and gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.1)
