"""The verdict, its reason, its headline, k and the k schedule come from one test -- the low end of the predictor's
band against min_speedup at each simulated load -- and never contradict each other (review items A3, C4, A10, A8,
B1, B3)."""

from __future__ import annotations

import functools
import re
import tomllib
from pathlib import Path

import pytest

from specwise.advisor import rules
from specwise.advisor.decision import advise, batch_at, fitting_scenario, k_at
from specwise.advisor.evidence import resolve_evidence
from specwise.advisor.inputs import load_inputs, parse_inputs
from specwise.cli import main
from specwise.contracts.advice import Advice
from specwise.engines.vllm_versions import DYNAMIC_K_CAVEAT
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
    low = {q: s * (1 - band) for q, s in top.sim.best_speedup_by_qps.items()}
    failing = sorted(q for q, lo in low.items() if lo < minimum)
    assert doc.headline == top.headline
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
        assert float(m.group(1)) == min(q for q in failing if q > op)
    cannot_carry = [n for n in doc.serve.notes if n != DYNAMIC_K_CAVEAT]  # the caveat goes with a carried schedule
    if cannot_carry:  # the engine version cannot carry the schedule: the headline promises none
        assert "schedule that" not in doc.headline


@pytest.mark.parametrize("name", ["l8-eagle3", "moe-suffix", "qwen3-8b-a100-draft"])
def test_verdict_reason_k_and_schedule_agree(name: str) -> None:
    _consistent(_advise(name))


def test_enable_below_switches_off_where_the_band_fails_above_the_load() -> None:
    doc = _advise("l8-eagle3")
    assert doc.decision == "enable_below" and "switches it off under load" in doc.headline
    top = doc.ranked[0]
    assert top.schedule[-1][2] == 0 and "128 QPS" in top.reason  # the load where the band's low end misses


def test_a_schedule_that_still_loses_is_not_said_to_switch_it_off() -> None:
    doc = _advise("qwen3-8b-a100-draft")
    assert doc.decision == "enable_below" and "only while the load stays below ~32 QPS" in doc.headline
    assert "switches it off" not in doc.headline and "still below 1x" in doc.reason


def test_a_loss_at_low_load_is_switched_off_at_low_load_and_suffix_needs_arctic() -> None:
    doc = _advise("moe-suffix")
    suffix = next(c for c in doc.candidates if c.method == "suffix")
    assert suffix.verdict == "enable" and "switches it off at low load" in suffix.headline
    assert suffix.schedule[0][2] == 0 and "under load" not in suffix.headline
    assert any("arctic-inference" in w for w in suffix.warnings)  # B3, in the JSON ...
    sat = next(r for r in suffix.rules if r.rule == "high-QPS saturation")
    assert "LOW load" in sat.message and "saturated" not in sat.message  # A10


def test_a_version_without_schedules_gets_no_schedule_promise() -> None:
    doc = _advise("l8-eagle3", "0.20")
    _consistent(doc)
    assert doc.decision == "enable_below" and "schedule" not in doc.headline
    assert "only while the load stays below ~128 QPS" in doc.headline and doc.serve.notes


def test_terminal_prints_candidate_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--scenario", str(SCENARIOS / "moe-suffix.toml"), "--processes", "1", "--wide"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "warning (suffix): vLLM runs suffix only with the arctic-inference package installed" in out  # B3 + C1


def test_saturation_rule_names_where_the_curve_loses() -> None:
    def msg(gains: dict[float, float]) -> str:
        return rules.saturation(rule_input(best_speedup_by_qps=gains)).message

    low = msg({1: 0.78, 8: 1.51, 32: 1.40})
    assert "LOW load (1 QPS)" in low and "saturated" not in low
    assert "saturated GPU" in msg({1: 2.0, 8: 1.5, 32: 0.9}) and "from ~32 QPS" in msg({1: 2.0, 8: 1.5, 32: 0.9})
    both = msg({1: 0.9, 8: 1.5, 32: 0.9})
    assert "LOW load (1 QPS)" in both and "from ~32 QPS" in both


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
