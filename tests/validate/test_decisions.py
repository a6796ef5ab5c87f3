"""``validate``'s decision score (validate/decisions.py): advise's verdict rule at each record's load, against the
published speedup, a held-back record's band set without its own source family. Pure parts on made-up predictions;
the fit records' bands checked against the fit file's; the command's flag and output."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from specwise.cli import main
from specwise.evidence.records import EvidenceRecord, all_records
from specwise.perfmodel.profiles import MIN_SEGMENT_RECORDS, UNMEASURED_BAND, published_fit
from specwise.validate.decisions import DecisionScore, score_decisions
from specwise.validate.predict import Prediction
from specwise.validate.run import score_with_shipped_bands
from specwise.validate.stats import catalog_segment

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "validate"
FIT = ("fitted",)
SHIPPED = 0.33  # the made-up fit file's band for a fit record


def _shipped(engine: str, segment: str | None) -> tuple[float, bool]:
    return SHIPPED, False


def _score(preds: list[Prediction], minimum: float = 1.05, band_engine: str | None = None) -> DecisionScore:
    return score_decisions(preds, FIT, _segment_of, minimum, _shipped, band_engine)


def _base() -> EvidenceRecord:
    return next(r for r in all_records() if r.id == "sdb-fig1-qwen3-8b-gsm8k-ngram-bs16")


def _pred(i: int, family: str, published: float, predicted: float, **extra: object) -> Prediction:
    r = replace(_base(), id=f"{family}-{i}", family=family, value=published, **extra)  # type: ignore[arg-type]
    return Prediction(r, "predicted", predicted_speedup=predicted)


def _segment_of(gpu: str) -> str | None:
    return {"H100-SXM-80GB": "datacenter", "RTX-3090": "consumer"}.get(gpu)


def _family(name: str, n: int, error: float, published: float = 1.5, **extra: object) -> list[Prediction]:
    """``n`` records of one family, each predicted ``error`` above its published speedup."""
    return [_pred(i, name, published, published * (1 + error), **extra) for i in range(n)]


def test_a_held_back_records_band_comes_from_the_other_families() -> None:
    tight, loose = _family("tight", MIN_SEGMENT_RECORDS, 0.05), _family("loose", MIN_SEGMENT_RECORDS, 0.40)
    score = _score(tight + loose)
    by_family = {d.family: d for d in score.decisions}
    assert by_family["tight"].band == pytest.approx(0.40)  # its own 5% never narrows its band
    assert by_family["loose"].band == pytest.approx(0.05)
    assert by_family["tight"].band_from == "vllm on datacenter GPUs"
    # judged with the other family's error: 1.575 predicted with +-40% straddles 1.05 (low end 0.945), 2.1 with
    # +-5% clears it
    assert (by_family["tight"].verdict, by_family["loose"].verdict) == ("measure_first", "enable")
    assert score.count("held-back", "pays", "enable") == MIN_SEGMENT_RECORDS


def test_too_few_on_the_segment_takes_the_engines_records() -> None:
    consumer = _family("laptop", 3, 0.10, gpu="RTX-3090")
    others = _family("dc", MIN_SEGMENT_RECORDS, 0.30) + _family("card", MIN_SEGMENT_RECORDS - 1, 0.02, gpu="RTX-3090")
    d = next(x for x in _score(consumer + others).decisions if x.family == "laptop")
    assert d.band_from == "vllm"  # 9 other consumer speedups: under MIN_SEGMENT_RECORDS
    combined = [0.30] * MIN_SEGMENT_RECORDS + [0.02] * (MIN_SEGMENT_RECORDS - 1)
    assert d.band == pytest.approx(float(np.percentile(combined, 80)))  # both segments' records, its own out


def test_a_lone_family_has_the_unmeasured_band() -> None:
    (d,) = _score(_family("alone", 1, 0.0)).decisions
    assert (d.band, d.band_from, d.direction_caveat) == (UNMEASURED_BAND, "no held-back record", False)


def test_a_wrong_side_record_forbids_enable() -> None:
    """Other families predicted speedups where slowdowns were measured: sign agreement 0, so even a prediction whose
    band clears the minimum is measure_first."""
    wrong = [_pred(i, "wrong", 0.8, 1.2) for i in range(MIN_SEGMENT_RECORDS)]
    (d,) = [x for x in _score(wrong + _family("me", 1, 0.0, published=3.0)).decisions if x.family == "me"]
    assert d.direction_caveat and d.verdict == "measure_first"  # 3.0 * (1 - 0.5) = 1.5 would clear 1.05


def test_outcomes_and_the_two_errors_that_matter() -> None:
    others = _family("others", MIN_SEGMENT_RECORDS, 0.10)
    mine = [
        _pred(0, "mine", 0.90, 1.60),  # slowdown, predicted to pay: enable on a slowdown
        _pred(1, "mine", 0.995, 1.0),  # a tie: short of the minimum, never a slowdown
        _pred(2, "mine", 1.04, 1.0),  # short
        _pred(3, "mine", 1.50, 0.80),  # pays, predicted a slowdown: disable on a gain
    ]
    score = _score(others + mine)
    got = {d.record_id: (d.outcome, d.verdict) for d in score.decisions if d.family == "mine"}
    assert got == {
        "mine-0": ("slowdown", "enable"),
        "mine-1": ("short", "measure_first"),
        "mine-2": ("short", "measure_first"),
        "mine-3": ("pays", "disable"),
    }
    assert [d.record_id for d in score.harmful("held-back")] == ["mine-0"]
    assert [d.record_id for d in score.missed("held-back")] == ["mine-3"]


@pytest.mark.parametrize(
    ("minimum", "published", "outcome"),
    [
        (1.05, 1.05, "pays"),  # the minimum itself pays
        (1.05, 1.0499, "short"),
        (1.05, 0.99, "slowdown"),  # 0.99 is a slowdown, not a tie
        (1.05, 0.9901, "short"),  # a tie
        (1.0, 1.005, "short"),  # a tie never pays, whatever the minimum
        (1.0, 1.01, "pays"),
    ],
)
def test_outcome_boundaries(minimum: float, published: float, outcome: str) -> None:
    mine = _pred(0, "mine", published, 1.2)
    (d,) = [x for x in _score([*_family("others", 3, 0.1), mine], minimum).decisions if x.family == "mine"]
    assert d.outcome == outcome


def test_a_k0_record_gets_no_verdict() -> None:
    """k = 0 measures an idle proposer's overhead, not speculation: nothing for a verdict to be right about."""
    idle = _pred(0, "idle", 0.94, 1.2, k=0)
    assert idle.record.proposes_nothing
    assert [d.family for d in _score([*_family("others", 3, 0.1), idle]).decisions] == ["others"] * 3


def test_the_json_has_both_roles_even_with_one_replayed() -> None:
    doc = _score(_family("held", 3, 0.1)).to_json()
    for key in ("by_role_outcome_verdict", "enable_on_slowdown", "disable_on_paying"):
        assert set(doc[key]) == {"held-back", "fit"}, key  # type: ignore[arg-type]
    assert doc["enable_on_slowdown"] == {"held-back": [], "fit": []}


def test_a_fit_record_on_sglang_takes_vllms_shipped_band_under_the_roofline() -> None:
    def shipped(engine: str, segment: str | None) -> tuple[float, bool]:
        return {"vllm": 0.2, "sglang": 0.4}[engine], False

    fitted = [_pred(0, "fitted", 1.5, 1.6, engine="sglang")]
    own = score_decisions(fitted, FIT, _segment_of, 1.05, shipped).decisions[0]
    as_roofline = score_decisions(fitted, FIT, _segment_of, 1.05, shipped, band_engine="vllm").decisions[0]
    assert (own.band, as_roofline.band) == (0.4, 0.2)


def test_fit_records_take_the_shipped_band_and_set_none() -> None:
    held = _family("held", MIN_SEGMENT_RECORDS, 0.20) + _family("also", MIN_SEGMENT_RECORDS, 0.20)
    fitted = [_pred(i, "fitted", 1.5, 3.0) for i in range(50)]  # 100% error: would widen any band it were in
    score = _score(held + fitted)
    assert {(d.band, d.band_from) for d in score.decisions if d.role == "fit"} == {(SHIPPED, "shipped")}
    assert all(d.band == pytest.approx(0.20) for d in score.decisions if d.role == "held-back")
    assert score.count("fit") == 50 and score.count("held-back") == 2 * MIN_SEGMENT_RECORDS


def test_the_roofline_takes_vllms_band_whatever_the_engine() -> None:
    """advise's roofline carries vLLM's band on an SGLang deployment too (perfmodel/factory.roofline_models)."""
    sglang = _family("sg", 1, 0.0, engine="sglang")
    vllm = _family("v", MIN_SEGMENT_RECORDS, 0.30)
    other_sglang = _family("sg2", MIN_SEGMENT_RECORDS, 0.02, engine="sglang")
    own = {d.family: d for d in _score(sglang + vllm + other_sglang).decisions}["sg"]
    as_roofline = {d.family: d for d in _score(sglang + vllm + other_sglang, band_engine="vllm").decisions}["sg"]
    assert (own.band, own.band_from) == (pytest.approx(0.02), "sglang on datacenter GPUs")
    assert (as_roofline.band, as_roofline.band_from) == (pytest.approx(0.30), "vllm on datacenter GPUs")


def test_a_fit_family_alone_keeps_the_shipped_band() -> None:
    """``--family specdecode-bench`` replays no held-back record; its records still carry the fit file's band."""
    base = _base()
    preds = [Prediction(replace(base, id=f"f{i}"), "predicted", predicted_speedup=1.3) for i in range(3)]
    fit = published_fit()
    for predictor, roofline in (("published-fit", False), ("roofline", True)):
        score = score_with_shipped_bands(preds, predictor, 1.05)
        assert {d.band for d in score.decisions} == {fit.band("vllm", "datacenter", roofline=roofline)}
        assert {d.role for d in score.decisions} == {"fit"}


def test_anchors_plain_decoding_and_unpredicted_records_are_not_scored() -> None:
    plain = replace(_base(), id="plain", method="none", metric="tpot_s", value=0.01)
    preds = [
        Prediction(plain, "predicted", predicted_value=0.011),
        Prediction(replace(_base(), id="anchor"), "anchor", predicted_speedup=1.1),
        Prediction(replace(_base(), id="skipped"), "skipped"),
    ]
    assert _score(preds).decisions == ()


@pytest.mark.parametrize(("predictor", "roofline"), [("published-fit", False), ("roofline", True)])
def test_fit_records_carry_the_shipped_band(predictor: str, roofline: bool) -> None:
    """A fit record's band is the fit file's for its engine (vLLM's under the roofline) and GPU segment, as advise
    has it; and in a whole replay, what the held-back records' left-out bands fall back to is never needed."""
    doc = json.loads((GOLDEN / f"{predictor}.json").read_text())
    records = {r.id: r for r in all_records()}
    fit = published_fit()
    decided = doc["decisions"]["records"]
    fitted = [d for d in decided if d["role"] == "fit"]
    assert len(fitted) > 100
    for d in fitted:
        r = records[d["id"]]
        engine = "vllm" if roofline else r.engine
        assert d["band"] == pytest.approx(fit.band(engine, catalog_segment(r.gpu), roofline=roofline)), d["id"]
    assert {d["band_from"] for d in decided if d["role"] == "held-back"} <= {
        "vllm on datacenter GPUs",
        "vllm on consumer GPUs",
        "sglang on datacenter GPUs",
        "vllm",
        "sglang",
    }


def test_min_speedup_is_checked_as_advise_checks_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--min-speedup", "0.9"]) == 2
    assert "--min-speedup" in capsys.readouterr().err


def test_the_command_prints_and_writes_the_score(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--family", "vllm-blog-2024,vllm-issues", "--min-speedup", "1.1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["decisions"]
    assert doc["min_speedup"] == 1.1
    table = doc["by_role_outcome_verdict"]["held-back"]
    assert sum(n for by_verdict in table.values() for n in by_verdict.values()) == len(doc["records"]) > 0
    assert {r["band_from"] for r in doc["records"]} <= {"vllm on datacenter GPUs", "vllm", "every engine", "shipped"}
    assert main(["validate", "--family", "vllm-blog-2024,vllm-issues", "--min-speedup", "1.1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "advise's verdict at each record's load (min_speedup 1.1)" in text
    assert "(those replayed: the --family selection)" in text
    assert "enable on a published slowdown:" in text and "disable where the published speedup is 1.1 or more" in text
