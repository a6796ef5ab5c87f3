"""The perf-model alert: speculation predicted to cost TPOT at the live batch size and AL."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from specwise.monitor.loop import assess, findings
from specwise.monitor.predicted import live_k, slowdown_model
from specwise.monitor.rules import Thresholds
from specwise.monitor.window import WindowStats
from specwise.scenario import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama70b-4xh100.toml"


def _stats(running: float, al: float, drafts: float = 1000.0) -> WindowStats:
    return WindowStats(
        window_s=10.0,
        drafts=drafts,
        acceptance_rate=(al - 1) / 4,
        mean_acceptance_length=al,
        per_position_acceptance=(),
        draft_tokens_per_s=None,
        accepted_tokens_per_s=None,
        generation_tokens_per_s=None,
        requests_per_s=None,
        running=running,
        waiting=0.0,
        kv_cache_usage=None,
        preemptions_per_s=None,
    )


def test_ratio_grows_with_batch_and_falls_with_al() -> None:
    model = slowdown_model(load_scenario(EXAMPLE), k=4)
    assert model.tpot_ratio(1, 3.0) < 1.0  # small batch, good AL: speculation pays
    assert model.tpot_ratio(256, 1.2) > model.tpot_ratio(8, 1.2)
    assert model.tpot_ratio(64, 1.2) > model.tpot_ratio(64, 2.5)


def test_alert_names_batch_al_cost_and_the_break_even_batch() -> None:
    model = replace(slowdown_model(load_scenario(EXAMPLE), k=4), max_num_seqs=256)
    even = model.break_even_batch(1.6)
    assert even is not None and 1 <= even < 256
    found = findings(
        _stats(running=min(256, even + 40), al=1.6),
        Thresholds(min_acceptance_rate=0.0, min_mean_acceptance_length=1.0),
        model,
    )
    [f] = [x for x in found if x.rule == "predicted_net_slowdown"]
    assert "with AL 1.60" in f.message and f"set k=0 above batch {even}" in f.message and "TPOT" in f.message
    # below the break-even batch, or with too few drafts, it stays quiet
    assert not [
        x
        for x in findings(_stats(running=max(1, even // 2), al=1.6), Thresholds(), model)
        if x.rule == "predicted_net_slowdown"
    ]
    assert model.check(_stats(running=200, al=1.6, drafts=3), min_drafts=50) is None


def _live(running: float, al: float, k: int, drafts: float = 1000.0) -> WindowStats:
    """A window whose counters show draft length ``k``: draft tokens / drafts = k."""
    return replace(_stats(running, al, drafts), draft_tokens_per_s=k * drafts / 10.0)


def test_the_live_k_from_the_counters_is_priced_without_k() -> None:
    """Without --k the check prices the k the server runs (draft tokens / drafts), not the scenario's largest
    (review 7 #4): k=8 would cost three times what k=4 does at the same batch and AL."""
    scenario = load_scenario(EXAMPLE)
    assert max(scenario.sweep.k_values) == 8
    model, at_4 = slowdown_model(scenario), slowdown_model(scenario, k=4)
    even = at_4.break_even_batch(1.6)
    assert even is not None
    stats = _live(running=min(even + 40, model.max_num_seqs), al=1.6, k=4)
    found = model.check(stats, min_drafts=50)
    expected = at_4.check(stats, min_drafts=50)
    assert found is not None and expected is not None
    assert "k=4 from the counters" in found.message and f"set k=0 above batch {even}" in found.message
    assert found.message.split("TPOT")[0] == expected.message.split("TPOT")[0]  # the same predicted cost
    assert "k=4 from --k" in expected.message
    # too few drafts to read k: nothing is priced at all (the rules need min_drafts too)
    assert live_k(_live(running=100, al=1.6, k=4, drafts=10), min_drafts=50) is None
    assert "the live draft length" in model.describe() and "k=4 (--k)" in at_4.describe()


def test_k_that_disagrees_with_the_live_k_is_noted() -> None:
    scenario = load_scenario(EXAMPLE)
    stats, _ = assess(_live(running=4, al=3.0, k=4), Thresholds(), slowdown_model(scenario, k=8))
    assert any("--k 8 disagrees with the live draft length 4" in n for n in stats.notes)
    agreed, _ = assess(_live(running=4, al=3.0, k=4), Thresholds(), slowdown_model(scenario, k=4))
    unset, _ = assess(_live(running=4, al=3.0, k=4), Thresholds(), slowdown_model(scenario))
    assert not [n for n in (*agreed.notes, *unset.notes) if "disagrees" in n]


def test_data_parallel_engines_are_priced_at_one_engines_batch() -> None:
    """Review 7: with engine="0" running 10 and engine="1" running 20 the check priced batch 30; each engine decodes
    its own batch, so the busiest one's (20) is what a step costs."""
    from specwise.metrics.exposition import parse_exposition
    from specwise.monitor.window import window_stats

    page = (
        "# TYPE vllm:num_requests_running gauge\n"
        'vllm:num_requests_running{model_name="m",engine="0"} 10\n'
        'vllm:num_requests_running{model_name="m",engine="1"} 20\n'
    )
    stats = window_stats(parse_exposition(page), parse_exposition(page), 10.0)
    assert stats.running == 30 and stats.running_per_engine == 20 and stats.batch == 20
    single = window_stats(*(parse_exposition('vllm:num_requests_running{model_name="m"} 7\n'),) * 2, 10.0)
    assert single.batch == 7
    model = replace(slowdown_model(load_scenario(EXAMPLE), k=4), max_num_seqs=256)
    even = model.break_even_batch(1.6)
    assert even is not None and even < 100
    summed = replace(_stats(running=2 * (even + 40), al=1.6), running_per_engine=float(even // 2))
    assert model.check(summed, min_drafts=50) is None  # each engine is below break-even: no alert
    busy = replace(summed, running_per_engine=float(even + 40))
    found = model.check(busy, min_drafts=50)
    assert found is not None and f"at batch {even + 40} " in found.message
