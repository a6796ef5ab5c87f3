"""``validate --like``: the published measurements nearest a deployment (validate/nearest.py). The score is pure
and tested on the shipped records with made-up predictions; the command is run on one held-back family."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import pytest
from rich.console import Console

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.evidence.records import EvidenceRecord, all_records
from specwise.report.validate import render_nearest
from specwise.validate.nearest import (
    ENGINE_POINTS,
    METHOD_POINTS,
    SAME_TARGET_POINTS,
    Query,
    nearest,
    query_for,
    query_from_scenario,
    score,
)
from specwise.validate.predict import Prediction

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FULL = 8.0 + 4.0 + 2.0 + 6.0 + 4.0 + 1.0  # every part of the setup matching


def _predicted(r: EvidenceRecord, speedup: float = 1.2) -> Prediction:
    return Prediction(r, "predicted", predicted_speedup=speedup, k=r.k)


def _speculative() -> list[EvidenceRecord]:
    return [r for r in all_records() if r.speculative and r.speedup is not None]


def _query_of(r: EvidenceRecord) -> Query:
    return query_for(r.engine, r.gpu, r.target, r.tp, [r.method])


def test_a_record_is_nearest_its_own_setup() -> None:
    r = next(x for x in _speculative() if x.id == "vllm-blog-2024-llama3-70b-ngram-k4-cnndm-qps8")
    assert score(_predicted(r), _query_of(r)) == FULL


def test_each_part_of_the_setup_counts() -> None:
    r = next(x for x in _speculative() if x.id == "vllm-blog-2024-llama3-70b-ngram-k4-cnndm-qps8")
    p, q = _predicted(r), _query_of(r)
    assert score(p, dataclasses.replace(q, engine="sglang")) == FULL - ENGINE_POINTS
    assert score(p, dataclasses.replace(q, methods=("suffix",))) == FULL - METHOD_POINTS + 2.0  # both lookups
    assert score(p, dataclasses.replace(q, methods=("eagle3",))) == FULL - METHOD_POINTS
    assert score(p, dataclasses.replace(q, tp=8)) == FULL - 1.0
    # another card of the same segment keeps the segment's points, a consumer card loses both
    assert score(p, query_for("vllm", "H200-SXM-141GB", r.target, 4, ["ngram"])) == FULL - 2.0
    assert score(p, query_for("vllm", "RTX-4090", r.target, 4, ["ngram"])) == FULL - 6.0
    # another target: up to 3 points at the same active parameters, none at 10x
    same_size = query_for("vllm", r.gpu, "meta-llama/Llama-3.1-70B-Instruct", 4, ["ngram"])
    assert FULL - SAME_TARGET_POINTS < score(p, same_size) <= FULL - 3.0
    small = query_for("vllm", r.gpu, "Qwen/Qwen2.5-0.5B-Instruct", 4, ["ngram"])
    assert score(p, small) == FULL - SAME_TARGET_POINTS


def test_nearest_splits_the_roles_and_keeps_the_best() -> None:
    records = _speculative()
    preds = [_predicted(r) for r in records]
    preds.append(Prediction(records[0], "anchor"))  # not predicted: never a neighbour
    q = query_for("vllm", "H100-SXM-80GB", "meta-llama/Llama-3.1-70B-Instruct", 4, ["draft_model"])
    n = nearest(preds, q, ("specdecode-bench", "plain-decoding-vllm"), n=5)
    assert len(n.held_back_neighbours) == 5 and len(n.fit_neighbours) == 5
    assert all(nb.prediction.record.family == "specdecode-bench" for nb in n.fit_neighbours)
    assert all(nb.prediction.record.family != "specdecode-bench" for nb in n.held_back_neighbours)
    scores = [nb.score for nb in n.held_back_neighbours]
    assert scores == sorted(scores, reverse=True)
    best_left = max(
        score(p, q) or 0.0
        for p in preds
        if p.status == "predicted"
        and p.record.family != "specdecode-bench"
        and p not in [nb.prediction for nb in n.held_back_neighbours]
    )
    assert best_left <= scores[-1]
    # the vLLM blog's Llama-3-70B draft-model series on 4 x H100 is the nearest held-back evidence
    assert n.held_back_neighbours[0].prediction.record.family == "vllm-blog-2024"
    errors = sorted(abs(1.2 / (nb.prediction.record.speedup or 1.0) - 1) for nb in n.held_back_neighbours)
    assert n.held_back.records == 5 and n.held_back.median_abs_rel_error == pytest.approx(errors[2], rel=1e-12)
    with pytest.raises(SpecwiseError, match="at least 1"):
        nearest(preds, q, (), n=0)


def test_another_engine_or_kind_of_gpu_is_never_near() -> None:
    preds = [_predicted(r) for r in _speculative()]
    consumer_sglang = query_for("sglang", "RTX-4090", "meta-llama/Llama-3.1-8B-Instruct", 1, ["eagle3"])
    n = nearest(preds, consumer_sglang, ("specdecode-bench",))
    assert n.held_back_neighbours == () and n.fit_neighbours == ()  # no SGLang record ran on a consumer card
    q = query_for("vllm", "RTX-4090", "meta-llama/Llama-3.1-8B-Instruct", 1, ["eagle"])
    listed = nearest(preds, q, ("specdecode-bench",), n=50).held_back_neighbours
    assert listed and all(nb.score >= 12 and nb.prediction.record.engine == "vllm" for nb in listed)
    assert {nb.prediction.record.gpu for nb in listed} <= {"RTX-3090", "RTX-4060-Laptop"}
    assert all("card" in nb.differs for nb in listed)  # no record ran on an RTX 4090


def test_ties_put_the_heavier_load_first_within_each_kind_of_load() -> None:
    preds = [_predicted(r) for r in _speculative()]
    q = query_for("vllm", "H100-SXM-80GB", "meta-llama/Llama-3.1-70B-Instruct", 4, ["ngram", "draft_model"])
    listed = nearest(preds, q, (), n=200).held_back_neighbours
    for a, b in itertools.pairwise(listed):
        ra, rb = a.prediction.record, b.prediction.record
        if a.score == b.score and ra.load.kind == rb.load.kind:
            assert ra.load.value >= rb.load.value


def test_the_query_of_an_advise_and_of_a_simulate_scenario() -> None:
    adv = query_from_scenario(EXAMPLES / "advise" / "summarize-low-qps.toml")
    assert adv.engine == "vllm" and adv.tp == 4 and set(adv.methods) == {"ngram", "draft_model"}
    sim = query_from_scenario(EXAMPLES / "llama70b-ngram.toml")
    assert sim.methods == ("ngram",) and sim.gpu == "H100-SXM-80GB" and sim.segment == "datacenter"


def test_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = str(EXAMPLES / "advise" / "schedule-llama3-70b-qwama.toml")
    args = ["validate", "--like", scenario, "--family", "vllm-blog-2024", "--nearest", "4", "--json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["predictor"] == "published-fit" and doc["fit_neighbours"] == []
    assert doc["families_selected"] == ["vllm-blog-2024"] and doc["nearness"]["load_compared"] is False
    rows = doc["held_back_neighbours"]
    assert len(rows) == 4 and {r["family"] for r in rows} == {"vllm-blog-2024"}
    assert all(r["method"] == "draft_model" for r in rows)  # the scenario's method first
    assert [r["load"]["value"] for r in rows] == [10, 8, 4, 2]  # equally near: the heavier load first
    assert all(r["ratio"] == pytest.approx(r["predicted_speedup"] / r["published_speedup"], abs=1e-3) for r in rows)
    assert doc["held_back"]["records"] == 4 and doc["fit"]["records"] == 0


def test_the_text_names_the_query_and_the_summaries() -> None:
    records = _speculative()
    preds = [_predicted(r, 0.8 * (r.speedup or 1.0)) for r in records]
    q = query_for("vllm", "H100-SXM-80GB", "meta-llama/Llama-3.1-70B-Instruct", 4, ["ngram"])
    out = Console(width=200, record=True, highlight=False, color_system=None)
    render_nearest(nearest(preds, q, ("specdecode-bench",), n=3), "published-fit", out=out)
    text = out.export_text()
    assert "nearest meta-llama/Llama-3.1-70B-Instruct on 4 x H100-SXM-80GB (datacenter), vllm, ngram" in text
    assert "held back: 3 records, median error 20%, 80th percentile 20%, within +-25% 100%" in text
    assert "the published fit's training families (fitted on: not an estimate of the error): 3 records" in text
    assert "another engine or kind of GPU is not listed; the load is not compared" in " ".join(text.split())


def test_input_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--nearest", "3"]) == 2
    assert "--nearest: goes with --like" in capsys.readouterr().err
    assert main(["validate", "--nearest", "8"]) == 2  # the default's value, given, is refused as well
    assert main(["validate", "--like", str(tmp_path / "none.toml")]) == 2
    like = str(EXAMPLES / "llama70b-ngram.toml")
    assert main(["validate", "--like", like, "--check"]) == 2
    assert main(["validate", "--like", like, "--all"]) == 2
    bad = tmp_path / "bad.toml"
    good = (EXAMPLES / "llama70b-ngram.toml").read_text()
    assert 'target = "meta-llama/Llama-3.1-70B-Instruct"' in good
    bad.write_text(good.replace('target = "meta-llama/Llama-3.1-70B-Instruct"', 'target = "no/such-model"'))
    assert main(["validate", "--like", str(bad)]) == 2
    assert f"{bad}: [deployment].target: unknown model 'no/such-model'" in capsys.readouterr().err
    bad.write_text(good.replace('gpu = "H100-SXM-80GB"', 'gpu = "H100-XYZ"'))
    assert 'gpu = "H100-SXM-80GB"' in good
    assert main(["validate", "--like", str(bad)]) == 2
    assert f"{bad}: [deployment].gpu: unknown GPU 'H100-XYZ'" in capsys.readouterr().err


@pytest.fixture(scope="module")
def held_back_replay() -> tuple[Prediction, ...]:
    from specwise.perfmodel.profiles import published_fit
    from specwise.validate.run import validate

    fit = set(published_fit().training_families)
    return validate("published-fit", [r for r in all_records() if r.family not in fit]).predictions


def test_the_readme_quotes_the_nearest_records(held_back_replay: tuple[Prediction, ...]) -> None:
    readme = " ".join((EXAMPLES.parent / "README.md").read_text().split())
    q = query_from_scenario(EXAMPLES / "advise" / "evidence-llama31-8b-eagle-rtx3090.toml")
    rtx = nearest(held_back_replay, q, (), n=5)
    rows = [nb.prediction for nb in rtx.held_back_neighbours]
    assert {p.record.family for p in rows} == {"eagle3-paper"}
    first, last = rows[-1], rows[0]  # batch 16 and 56: the heavier load first
    quoted = (
        f"({first.record.speedup:.2f}x to {last.record.speedup:.2f}x published, {first.predicted_speedup:.2f}x to "
        f"{last.predicted_speedup:.2f}x predicted: median error {rtx.held_back.median_abs_rel_error:.0%}, its "
        f"{rtx.held_back.slowdowns_predicted} slowdowns predicted below 1)"
    )
    assert rtx.held_back.slowdowns == rtx.held_back.slowdowns_predicted == 3
    assert quoted.replace("3 slowdowns", "three slowdowns") in readme
    q = query_from_scenario(EXAMPLES / "advise" / "schedule-llama31-70b-1b.toml")
    near = nearest(held_back_replay, q, ()).held_back_neighbours
    blog = [nb.prediction for nb in near if nb.prediction.record.family == "vllm-blog-2024"]
    amd = [nb.prediction for nb in near if nb.prediction.record.family == "amd-rocm-spec-decode-2025"]
    # since the AMD blog's MI300X records (2026-12-07): its 70B + 8B series is as near as the vLLM blog's
    assert len(near) == 8 and len(blog) == 4 and len(amd) == 4
    assert "four of the eight are the vLLM blog's Llama-3-70B draft-model series" in readme
    assert {p.record.method for p in blog} == {"draft_model"}
    misses = {p.record.id: p for p in blog if p.ratio is not None and abs(p.ratio - 1) > 0.25}
    draft8 = misses.pop("vllm-blog-2024-llama3-70b-qwama-k4-sharegpt-qps8")
    draft = misses.pop("vllm-blog-2024-llama3-70b-qwama-k4-sharegpt-qps10")
    assert not misses
    quoted = (
        f"two errors over 25% (the draft model at 8 and 10 QPS, {draft8.record.speedup:.2f}x and "
        f"{draft.record.speedup:.2f}x published and {draft8.predicted_speedup:.2f}x and "
        f"{draft.predicted_speedup:.2f}x predicted)"
    )
    assert quoted in readme, quoted
    published = sorted(p.record.speedup or 0.0 for p in amd)
    predicted = sorted(p.predicted_speedup or 0.0 for p in amd)
    quoted = (
        f"({published[0]:.2f}x to {published[-1]:.2f}x published, {predicted[0]:.2f}x to {predicted[-1]:.2f}x "
        "predicted)"
    )
    assert quoted in readme, quoted
    q = query_from_scenario(EXAMPLES / "advise" / "evidence-qwen3-8b-draft-batch128.toml")
    qwen = nearest(held_back_replay, q, ()).held_back_neighbours
    assert {round(nb.score) for nb in qwen} == {18} and "nearness 18 of 25" in readme
    assert all("target" in nb.differs and ("TP" in nb.differs or "method" in nb.differs) for nb in qwen)
    assert "other targets, at another TP or with another method" in readme


def test_the_stored_predictions_are_the_replays(held_back_replay: tuple[Prediction, ...]) -> None:
    """advise summarises the nearest evidence from the fit file's stored replay (no replay at advise time): it must
    be what a replay gives today (``python scripts/fit_published.py --evaluate`` rewrites it)."""
    from specwise.perfmodel.profiles import published_fit

    live = {
        p.record.id: (p.predicted_speedup, p.k)
        for p in held_back_replay
        if p.status == "predicted" and p.record.speculative and p.predicted_speedup is not None
    }
    stored = published_fit().held_back_predictions
    assert set(stored) == set(live) and len(stored) > 100
    for rid, (speedup, k) in stored.items():
        assert speedup == pytest.approx(live[rid][0], rel=1e-9), rid
        assert k == live[rid][1], rid


def test_nearby_evidence_summarises_the_nearest_held_back_records(held_back_replay: tuple[Prediction, ...]) -> None:
    from specwise.perfmodel.profiles import published_fit
    from specwise.validate.nearest import nearby_evidence

    q = query_from_scenario(EXAMPLES / "advise" / "evidence-llama31-8b-eagle-rtx3090.toml")
    e = nearby_evidence(q, published_fit(), "specwise validate --like X")
    live = nearest(held_back_replay, q, ())
    assert e is not None and e.command == "specwise validate --like X"
    assert e.record_ids == tuple(nb.prediction.record.id for nb in live.held_back_neighbours)
    assert (e.records, e.slowdowns, e.slowdowns_predicted) == (8, 3, 3)
    assert e.median_abs_rel_error == pytest.approx(live.held_back.median_abs_rel_error)
    assert e.within_25pct == live.held_back.within_25pct


def test_a_stale_or_mislabelled_stored_replay_is_not_trusted() -> None:
    from specwise.perfmodel.profiles import published_fit
    from specwise.validate.nearest import StaleFit, nearby_evidence, stored_predictions

    fit = published_fit()
    fit_record = "sdb-fig1-llama3-70b-gsm8k-draftmodel-bs128"  # a training record: never held back
    doctored = dataclasses.replace(fit, held_back_predictions={**fit.held_back_predictions, fit_record: (0.5, 3)})
    assert fit_record not in {p.record.id for p in stored_predictions(doctored)}
    gone = dataclasses.replace(fit, held_back_predictions={**fit.held_back_predictions, "no-such-record": (1.0, 3)})
    with pytest.raises(StaleFit, match=r"no-such-record.*fit_published\.py --evaluate"):
        stored_predictions(gone)
    empty = dataclasses.replace(fit, held_back_predictions={})
    q = query_for("vllm", "H100-SXM-80GB", "meta-llama/Llama-3.1-70B-Instruct", 4, ["ngram"])
    none = nearby_evidence(q, empty, "cmd")
    assert none.records == 0 and none.record_ids == () and none.nearness is None


def test_the_setup_says_a_tree_and_whose_k() -> None:
    from specwise.validate.nearest import Neighbour, setup_words

    by_id = {r.id: r for r in _speculative()}
    tree = by_id["sdb-fig2-qwen3-8b-gsm8k-eagle3-tree-k21-bs64"]
    assert setup_words(Neighbour(_predicted(tree), 25.0, "fit", ())) == f"eagle3 tree of 21 (depth {tree.tree_depth})"
    chain = by_id["vllm-blog-2024-llama3-70b-ngram-k4-cnndm-qps8"]
    assert setup_words(Neighbour(_predicted(chain), 25.0, "held-back", ())) == "ngram k=4"
    unknown_k = next(r for r in _speculative() if r.k is None and r.verification == "chain")
    replayed = Prediction(unknown_k, "predicted", predicted_speedup=1.1, k=5)
    assert setup_words(Neighbour(replayed, 20.0, "held-back", ())).endswith("k=5 (not published; the replay's)")
