"""advise decides at the operating load on the mean of ``[advise].replicates`` seeds and its 90% interval, not on
the sweep's one draw (advisor/decision._verdict, study/replicates.py): bench/seed_sensitivity.py had found
evidence-llama3-70b-qwama-v0 disabled at seed 0 and measure first at seeds 1-4."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from specwise.advisor import decision
from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs, parse_inputs
from specwise.cli import main
from specwise.contracts.advice import SamplingNoise
from specwise.errors import SpecwiseError
from specwise.scenario.toml_loader import read_toml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "advise"
QWAMA = EXAMPLES / "evidence-llama3-70b-qwama-v0.toml"


def _with(path: Path, tmp_path: Path, advise_keys: str = "", seed: int | None = None) -> Path:
    """The example beside a copy of itself with [advise] and [sweep].seed changed."""
    text = path.read_text()
    if advise_keys:
        text = text.replace("[advise]\n", f"[advise]\n{advise_keys}\n", 1)
    if seed is not None:
        text = text.replace("[sweep]\n", f"[sweep]\nseed = {seed}\n", 1)
    out = tmp_path / f"seed-{seed}" / path.name
    out.parent.mkdir(exist_ok=True)
    out.write_text(text)
    return out


def _doc(path: Path, **kw: Any) -> dict[str, Any]:
    return advise(load_inputs(path), processes=1, engine_version="0.9", **kw).to_json()


def test_the_verdict_no_longer_turns_on_the_seed(tmp_path: Path) -> None:
    """Seeds 0 and 1 of the shipped example: one draw each said disable and measure first; the mean of five says
    the same at both, and its interval holds both draws' means."""
    docs = [_doc(_with(QWAMA, tmp_path, seed=s)) for s in (0, 1)]
    assert [d["decision"] for d in docs] == ["measure_first", "measure_first"]
    noises = [d["candidates"][0]["sampling"] for d in docs]
    assert [n["seeds"] for n in noises] == [[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]]
    assert noises[0]["speedups"][1:] == noises[1]["speedups"][:4]  # seed s is the same draw in both
    for doc, n in zip(docs, noises, strict=True):
        band = doc["predictor"]["relative_error_p80"]
        assert n["interval_90"][0] < n["mean"] < 1.0  # a slowdown, as published (0.71x at 10 QPS)
        assert n["interval_90"][1] * (1 + band) >= 1.05  # whose band's high end clears the minimum: measure first


def test_one_replicate_is_the_sweep_s_one_draw(tmp_path: Path) -> None:
    """``replicates = 1``: the verdict as before the replicates -- seed 0's 0.83x, whose band's high end misses
    1.05x: disable, and no sampling in the document."""
    doc = _doc(_with(QWAMA, tmp_path, "replicates = 1"))
    cand = doc["candidates"][0]
    assert doc["decision"] == "disable" and "sampling" not in cand
    assert "speedup 0.83x with k=4 (band" in cand["reason"] and "mean of" not in cand["reason"]


def _injected(monkeypatch: pytest.MonkeyPatch, spread: float) -> None:
    """The replicate seeds replaced by three draws around the sweep's own (fault injection: a spread chosen)."""

    def fake(sc: Any, sim: Any, qps: float, k: int, replicates: int, *_: Any) -> SamplingNoise:
        first = sim.row(qps, k).speedup(sim.decision_metric)
        return SamplingNoise(qps, k, sc.sweep.num_requests, (0, 1, 2), (first, first - spread, first + spread))

    monkeypatch.setattr(decision, "sampling_noise", fake)


def test_noise_that_straddles_the_band_s_edge_is_measure_first_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    """summarize-low-qps enables the 1B draft at ~1.98x. Narrow noise leaves it enabled; noise wide enough that the
    interval's low end times the band misses 1.05x makes it measure first, saying that the noise decided it."""
    inputs = load_inputs(EXAMPLES / "summarize-low-qps.toml")
    label = "draft_model:meta-llama/Llama-3.2-1B-Instruct"
    _injected(monkeypatch, 0.01)
    narrow = next(c for c in advise(inputs, processes=1).candidates if c.candidate == label)
    assert narrow.verdict == "enable" and narrow.sampling is not None
    assert narrow.speedup_at_operating_qps == pytest.approx(narrow.sampling.mean)
    _injected(monkeypatch, 0.6)
    wide = next(c for c in advise(inputs, processes=1).candidates if c.candidate == label)
    assert wide.verdict == "measure_first", wide.reason
    assert "the simulation's own sampling noise decides that (around its mean alone the band says enable)" in (
        wide.reason
    )
    assert "re-run with [sweep].num_requests above 200" in wide.reason
    band = re.search(r"\(band ([\d.]+)-([\d.]+)x", wide.reason)
    assert band is not None and float(band[1]) < 1.05


@pytest.mark.parametrize("value", ["0", "32", "2.5", "true"])
def test_replicates_out_of_range_is_refused_naming_the_field(value: str) -> None:
    data = read_toml(EXAMPLES / "summarize-low-qps.toml")
    data["advise"]["replicates"] = {"0": 0, "32": 32, "2.5": 2.5, "true": True}[value]
    with pytest.raises(SpecwiseError, match=r"\[advise\]\.replicates"):
        parse_inputs(data, "s.toml", EXAMPLES)


def test_the_cli_exits_2_on_a_bad_replicates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _with(EXAMPLES / "summarize-low-qps.toml", tmp_path, "replicates = 0")
    assert main(["advise", "--scenario", str(path)]) == 2
    assert "replicates" in capsys.readouterr().err
