"""The verdict, its reason, its headline, k and the k schedule come from one rule -- at the operating load the
predictor's band against min_speedup (enable: its low end clears; measure first: it straddles; disable: its high end
misses), elsewhere the point estimate (a schedule switches speculation off only where it is predicted to lose), loads
above capacity left out -- and never contradict each other (review items A3, C4, A10, A8, B1, B3)."""

from __future__ import annotations

import functools
import re
import tomllib
from pathlib import Path

import pytest

from specwise.advisor import rules
from specwise.advisor.decision import _schedule_words, advise, fitting_scenario
from specwise.advisor.evidence import resolve_evidence
from specwise.advisor.inputs import load_inputs, parse_inputs
from specwise.advisor.schedule import batch_at, k_at
from specwise.cli import main
from specwise.contracts.advice import Advice, ScheduleCheck
from specwise.errors import SpecwiseError
from tests.advise.test_rules import _input as rule_input

SCENARIOS = Path(__file__).resolve().parent / "scenarios"


@functools.cache  # each scenario is simulated once for the module (Advice is frozen)
def _advise(name: str, version: str | None = None) -> Advice:
    return advise(load_inputs(SCENARIOS / f"{name}.toml"), processes=1, engine_version=version)


def _consistent(doc: Advice) -> None:
    """The properties every answer keeps, whatever the numbers."""
    top = doc.ranked[0]
    assert top.sim is not None
    band, minimum, op = top.sim.band, doc.min_speedup, doc.operating_qps
    gains = {q: s for q, s in top.sim.best_speedup_by_qps.items() if q not in top.sim.overloaded_qps}
    failing = sorted(q for q, s in gains.items() if s < minimum)
    assert doc.headline == top.headline
    if op in gains:  # the operating load: the band decides
        s_op = gains[op]
        assert (doc.decision == "disable") == (s_op * (1 + band) < minimum) or top.schedule
        if s_op * (1 - band) < minimum <= s_op * (1 + band):
            assert top.verdict == "measure_first"
    assert not set(top.sim.overloaded_qps) & {q for q in failing}
    for q, gain in gains.items():  # never switched off where it is predicted to pay (review s7)
        if gain >= minimum and top.schedule:
            assert k_at(top.schedule, batch_at(top.sim, q, 256)) != 0
    if doc.decision in ("enable", "enable_below"):
        cfg = doc.serve.speculative_config
        assert cfg is not None
        assert f"with k={cfg['num_speculative_tokens']}" in doc.headline  # C4: the headline's k is the config's
        assert top.k == cfg["num_speculative_tokens"]
    if doc.decision == "enable" and not top.schedule:
        assert not failing  # plain "enable": even the band's low end clears min_speedup at every load
    if doc.decision == "enable_below":
        assert [q for q in failing if q > op]  # it fails ABOVE the operating load
    if "switches it off" in doc.headline:
        batches = {q: batch_at(top.sim, q, 256) for q in failing}
        assert all(k_at(top.schedule, b) == 0 for b in batches.values())  # the schedule really reaches k=0 there
        assert all((c.speedup_e2e or 0) >= 1.0 for c in top.schedule_results if c.qps in failing)
        assert "under load" not in doc.headline or max(failing) > op
        assert "at low load" not in doc.headline or min(failing) < op
    if m := re.search(r"only while the load stays .*below ~([\d.]+) QPS", doc.headline):
        # where the point estimate falls below min_speedup: between the last load above op that clears it and the
        # first that does not (interpolated, said to 2 significant digits)
        first = min(q for q in failing if q > op)
        last = max(q for q in gains if op <= q < first)
        assert 0.95 * last <= float(m.group(1)) <= first
    caveat = "with num_speculative_tokens_per_batch_size"  # the caveat goes with a carried schedule
    cannot_carry = [n for n in doc.serve.notes if not n.startswith(caveat)]
    if cannot_carry:  # the engine version cannot carry the schedule: the headline promises none
        assert "schedule that" not in doc.headline


@pytest.mark.parametrize(
    "name", ["l8-eagle3", "moe-suffix", "qwen3-8b-a100-draft", "qwen3-8b-h100-draft-capacity", "mixed-long-eagle3"]
)
def test_verdict_reason_k_and_schedule_agree(name: str) -> None:
    _consistent(_advise(name))


def test_enable_below_where_speculation_loses_at_a_load_served_without_it() -> None:
    """At 10 QPS the deployment keeps up without speculation but not with any k: speculation loses there (its queue
    grows). The schedule sets k = 0 at that load's batch size, but the draft still holds its share of the KV cache:
    the schedule's own saturated run serves fewer than 10 req/s, so it does not keep up there either, and the advice
    enables only below the edge (review s60: one finite run of the schedule at 10 QPS looked fine, and the headline
    said the schedule "switches it off under load")."""
    doc = _advise("qwen3-8b-h100-draft-capacity")
    top = doc.ranked[0]
    assert top.sim is not None and not top.sim.overloaded_qps
    assert top.schedule[-1][2] == 0 and "10 QPS" in top.reason
    assert top.sim.best_speedup_by_qps[10] < 1.0 and top.sim.best_k_by_qps[10] == 0
    capacity = top.sim.schedule_capacity_per_s
    assert capacity is not None and 7 < capacity < 10
    (at_10,) = [c for c in top.schedule_results if c.qps == 10]
    assert at_10.overloaded and at_10.speedup_e2e == pytest.approx(capacity / 10)
    assert f"10 QPS at most {at_10.speedup_e2e:.2f}x (the schedule serves" in top.reason
    assert doc.decision == "enable_below" and "only while the load stays below ~" in doc.headline
    edge = float(doc.headline.split("below ~")[1].split(" QPS")[0])
    assert 7 < edge <= capacity


def test_loads_above_capacity_are_left_out_of_the_verdict() -> None:
    """l8-eagle3's 36 and 128 QPS are above what the deployment serves without speculation: their latencies are two
    growing queues, so no schedule or "below ... QPS" rests on them."""
    doc = _advise("l8-eagle3")
    top = doc.ranked[0]
    assert top.sim is not None and top.sim.overloaded_qps == (36.0, 128.0)
    assert doc.decision == "enable" and not top.schedule
    assert "up to 8 QPS (the highest load the deployment keeps up with)" in top.reason


def test_a_band_that_only_straddles_is_measured_not_switched_off() -> None:
    """Review s7: EAGLE-3's point estimate pays at every served load; at 0.5-1 QPS only the band's low end misses --
    no schedule turns it off there (it did, and the config ran 0.99x); the 1B draft's band straddles 1.05x at the
    operating load: measure first, not disable."""
    doc = _advise("mixed-long-eagle3")
    eagle = next(c for c in doc.candidates if c.method == "eagle3")
    assert eagle.verdict == "enable" and not eagle.schedule and "only the point estimate clears" in eagle.reason
    draft = next(c for c in doc.candidates if c.method == "draft_model")
    assert draft.verdict == "measure_first" and "the high end of its band clears it" in draft.reason


def test_a_schedule_that_still_loses_is_said_so() -> None:
    checks = (ScheduleCheck(1.0, 1.6), ScheduleCheck(8.0, 0.97))
    sched = ((1, 100, 3), (101, 256, 0))
    words = _schedule_words(True, checks[1:], (), sched, True, "; simulated with the schedule")
    assert "still below 1x at 8 QPS" in words and "holds its memory" in words and "even with" not in words
    even = _schedule_words(True, (), (ScheduleCheck(8.0, 0.995),), sched, True, "; simulated with the schedule")
    assert "still below" not in even and "(even with no speculation: 8 QPS 0.5% slower, within the 1% counted" in even


def test_suffix_needs_arctic_inference() -> None:
    doc = _advise("moe-suffix")
    suffix = next(c for c in doc.candidates if c.method == "suffix")
    assert suffix.verdict == "enable"
    assert any("arctic-inference" in w for w in suffix.warnings)  # B3, in the JSON ...


def test_a_version_without_schedules_gets_no_schedule_promise(tmp_path: Path) -> None:
    # min_speedup 1.0: on vLLM 0.20 (its draft model in series) the operating speedup's band reaches 1.04x at its low
    # end since the 2026-12-06 full-k refit, so at 1.05 the answer is measure first and promises nothing to check
    text = (
        (SCENARIOS / "qwen3-8b-h100-draft-capacity.toml")
        .read_text()
        .replace("[advise]\n", "[advise]\nmin_speedup = 1.0\n")
    )
    scenario = tmp_path / "qwen3-8b-h100-draft-capacity.toml"
    scenario.write_text(text)
    doc = advise(load_inputs(scenario), processes=1, engine_version="0.20")
    _consistent(doc)
    assert doc.decision == "enable_below" and "schedule" not in doc.headline
    assert re.search(r"only while the load stays below ~[\d.]+ QPS$", doc.headline) and doc.serve.notes


def test_terminal_prints_candidate_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--scenario", str(SCENARIOS / "moe-suffix.toml"), "--processes", "1", "--wide"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "warning (suffix): vLLM runs suffix only with the arctic-inference package installed" in out  # B3 + C1


def test_saturation_rule_names_where_the_curve_loses() -> None:
    def msg(gains: dict[float, float]) -> str:
        return rules.saturation(rule_input(best_speedup_by_qps=gains)).message

    low = msg({1: 0.78, 8: 1.51, 32: 1.40})
    assert "LOW load (1 QPS)" in low and "saturated" not in low
    high = msg({1: 2.0, 8: 1.5, 32: 0.9})  # 1.05x is crossed at 8 + 24 * (1.5 - 1.05) / (1.5 - 0.9) = 26 QPS
    assert "saturated GPU" in high and "stops paying (< 1.05x) between 8 and 32 QPS (~26, interpolated)" in high
    both = msg({1: 0.9, 8: 1.5, 32: 0.9})
    assert "LOW load (1 QPS)" in both and "between 8 and 32 QPS (~26, interpolated)" in both


def test_only_the_k_values_that_do_not_fit_are_dropped() -> None:
    """Qwen3-8B on an L4 at max_model_len 4096: the activation reserve grows with k; EAGLE-3 fits up to k=5."""
    inputs = load_inputs(SCENARIOS / "qwen3-8b-l4-k8.toml")
    eagle = next(c for c in inputs.candidates if c.method.name == "eagle3")
    sc, notes = fitting_scenario(inputs, eagle, resolve_evidence(inputs, eagle, [], [], []))
    assert sc.memory_plan.fits and sc.sweep.k_values == (0, 1, 2, 3, 4, 5)
    assert notes == [
        "k=6, 7, 8 dropped: with them the draft's activation reserve does not fit in memory; k up to 5 fits"
    ]


def test_k_zero_alone_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--scenario", str(SCENARIOS / "k0-only.toml")]) == 2
    assert "[[candidate]] #2.k: k needs a value >= 1" in capsys.readouterr().err
    with pytest.raises(SpecwiseError, match="k needs a value >= 1"):
        load_inputs(SCENARIOS / "k0-only.toml")
    text = (SCENARIOS / "k0-only.toml").read_text().replace("k = [0]", "k = [0, 2]")
    inputs = parse_inputs(tomllib.loads(text), "k0-and-2.toml", SCENARIOS)  # k = 0 among others is fine
    assert inputs.candidates[1].speculation.k_values == (0, 2)


def test_candidate_headline_is_in_the_json_and_read_back() -> None:
    doc = _advise("l8-eagle3")
    back = Advice.from_json(doc.to_json())
    assert back.ranked[0].headline == doc.ranked[0].headline == doc.headline
