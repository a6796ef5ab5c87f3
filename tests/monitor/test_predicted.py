"""The perf-model alert: speculation predicted to cost TPOT at the live batch size and AL."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from specwise.monitor.loop import findings
from specwise.monitor.predicted import slowdown_model
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
