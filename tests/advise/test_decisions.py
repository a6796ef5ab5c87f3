"""The decision flips sensibly on the shipped examples (examples/advise/), and every reason names evidence."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from specwise.advisor.band_rule import DEFAULT_MIN_SPEEDUP
from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs
from specwise.advisor.schedule import k_schedule
from specwise.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "advise"


def _run(name: str, **kw: Any) -> dict[str, Any]:
    return advise(load_inputs(EXAMPLES / f"{name}.toml"), processes=1, **kw).to_json()


def _cand(doc: dict[str, Any], label: str) -> dict[str, Any]:
    return next(c for c in doc["candidates"] if c["candidate"] == label)


def test_low_qps_summarisation_enables_the_draft_and_ranks_ngram_below_it() -> None:
    """With n-gram's prior taken from SpecDecode-Bench's measured CNN/DailyMail rates (AL ~1.4 at k = 5), the 1B
    draft wins at 0.5 QPS; n-gram's smaller gain sits at the band's edge (its low end 1.054x under the multi-start
    fit, which enabled it, 1.02x under the anchor-grid refit of 2026-12-06: measure first), and the reason says
    where only the point estimate clears 1.05x."""
    doc = _run("summarize-low-qps")
    assert doc["decision"] == "enable" and doc["recommended"] == "draft_model:meta-llama/Llama-3.2-1B-Instruct"
    spec = doc["vllm"]["speculative_config"]
    assert spec["method"] == "draft_model" and spec["num_speculative_tokens"] >= 2
    assert "--speculative-config" in doc["vllm"]["serve_argv"]
    assert doc["assumed_acceptance_for"] == ["summarize"]  # said loudly: nothing was measured
    assert _cand(doc, "draft_model:meta-llama/Llama-3.2-1B-Instruct")["speedup_at_operating_qps"] > 1.5
    ngram = _cand(doc, "ngram")
    assert 1.0 < ngram["speedup_at_operating_qps"] < 1.6
    low = float(ngram["reason"].split("(band ")[1].split("-")[0])  # the band's low end, as the reason prints it
    assert ngram["verdict"] == ("enable" if low >= 1.05 else "measure_first")
    said = "only the point estimate clears 1.05x"
    if low < 1.05:
        said = "it clears 1.05x, the low end of its band does not"
    assert said in ngram["reason"], ngram["reason"]


def test_same_workload_at_high_qps_is_a_load_the_deployment_cannot_serve() -> None:
    """64 QPS of 2000-token summaries is ~10x what 4 x H100 serve once saturated (~6 req/s): the queue grows
    without bound, so no latency speedup is quoted; the advice is about capacity (add replicas), with what
    speculation does to it."""
    doc = _run("summarize-high-qps")
    assert doc["decision"] == "disable"
    assert doc["vllm"]["speculative_config"] is None
    ngram = _cand(doc, "ngram")
    assert ngram["speedup_at_operating_qps"] is None
    reason = ngram["reason"]
    assert "at 64 QPS this deployment cannot keep up" in reason and "add replicas" in reason
    sim = ngram["sim"]
    assert sim["overloaded_qps"] == [16.0, 64.0]
    assert 1.0 < sim["sustainable_qps"] < 16.0 and f"~{sim['sustainable_qps']:.1f} req/s" in reason
    assert doc["predictor"]["name"].startswith("published-fit") and 0 < doc["predictor"]["relative_error_p80"] < 1


def test_the_blog_s_slowdown_at_10_qps_is_predicted_and_not_enabled() -> None:
    """vLLM blog 2024 (V0, 0.6.x; the config is for 0.9, the last vLLM that runs this draft on one GPU): 0.71x at
    10 QPS, a load the deployment still served. The simulated deployment serves it too (with the serving benchmark's
    ShareGPT lengths), and the draft is predicted to slow it down. Until the anchor-grid refit of 2026-12-06 the
    whole band missed 1.05x (0.80x, band 0.60-1.01x: disable); after it, 0.83x with a band whose high end cleared
    1.05x (measure first); from 2026-12-07 the band is 25.5% and the shipped seed's 0.83x disabled it, while seeds
    1-4 (0.89-0.96x) said measure first (bench/seed_sensitivity.py). Since advise decides on the mean of five runs
    ([advise].replicates) the band's high end clears 1.05x: measure first, at every seed the bench tried. Either
    way never enable -- while it pays at light load."""
    doc = _run("evidence-llama3-70b-qwama-v0", engine_version="0.9")
    assert doc["decision"] in ("disable", "measure_first"), doc["reason"]
    cand = doc["candidates"][0]
    noise = cand["sampling"]
    assert noise["qps"] == 10.0 and noise["seed"] == 0 and noise["replicates"] == [0, 1, 2, 3, 4]
    row = next(r for r in cand["sim"]["results"] if r["qps"] == 10.0 and r["k"] == 4)
    assert noise["speedups"][0] == row["speedup_e2e"]  # the sweep's own draw is replicate 0
    mean = noise["mean"]
    assert next(v for q, v in cand["sim"]["best_speedup_by_qps"].items() if float(q) == 10.0) == mean
    assert mean < 1.0 and f"speedup {mean:.2f}x (mean of 5 runs of 400 requests" in cand["reason"], cand["reason"]
    high = float(cand["reason"].split("(band ")[1].split("-")[1].split("x")[0])  # the band's high end, as printed
    if high < 1.05:
        assert cand["verdict"] == "disable" and "even at the high end of its band" in cand["reason"]
        assert cand["speedup_at_operating_qps"] is None  # a disabled row runs k = 0: its best k's is in the sim
    else:
        assert cand["verdict"] == "measure_first" and "the high end of its band clears it" in cand["reason"]
        assert cand["speedup_at_operating_qps"] == mean
    assert "cannot keep up" not in cand["reason"]
    low = min(cand["sim"]["best_speedup_by_qps"].items(), key=lambda kv: float(kv[0]))
    assert low[1] > 1.2  # while it pays at light load


def test_a_batch_where_the_evidence_shows_a_slowdown_is_disabled() -> None:
    """SpecDecode-Bench Fig. 1: 0.91x at batch 128. The operating load is above what the deployment serves once
    saturated (the simulated capacity): the published slowdown shows as speculation's loss of capacity, and no
    latency speedup is quoted."""
    doc = _run("evidence-qwen3-8b-draft-batch128")
    assert doc["decision"] == "disable", doc["reason"]
    cand = doc["candidates"][0]
    assert cand["speedup_at_operating_qps"] is None and "cannot keep up" in cand["reason"]
    capacity = cand["sim"]["capacity_per_s_by_k"]
    assert max(v for k, v in capacity.items() if k != "0") < capacity["0"], capacity
    low = min(cand["sim"]["best_speedup_by_qps"].items(), key=lambda kv: float(kv[0]))
    # while it pays at light load: it clears advise's default min_speedup (1.15x at 0.5 QPS since the 2026-12-06
    # full-k refit; the test asked for > 1.2 when the prediction there was higher)
    assert low[1] > DEFAULT_MIN_SPEEDUP
    assert "re-run advise at the load per replica" in cand["reason"]  # where a schedule would be judged


def test_a_held_back_slowdown_on_a_consumer_card_is_not_enabled() -> None:
    """The EAGLE-3 paper's Table 5 (held back): vLLM EAGLE on an RTX 3090 is 0.93x at batch 32 and 0.82x at 48. At
    4 QPS (~36 running without speculation) the simulated speedup is a slowdown in every run, while it pays at light
    load; and 4 QPS sits at the k=2 capacity (one saturated run put it on either side of 4 req/s with the seed; the
    mean of five is 4.10 req/s at the shipped seed, 3.93-4.00 at seeds 1-4). The load is inside that mean's 90%
    interval, so whether k=2 keeps up is the simulation's noise: measure first, at every seed
    (bench/seed_sensitivity.py), where the capacity mean below 4 used to disable it. Never enable."""
    doc = _run("evidence-llama31-8b-eagle-rtx3090")
    assert doc["decision"] == "measure_first", doc["reason"]
    cand = doc["candidates"][0]
    speedups = {float(q): s for q, s in cand["sim"]["best_speedup_by_qps"].items()}
    assert speedups[0.25] > 1.2 and speedups[4.0] < 1.0, speedups
    capacity = cand["sim"]["capacity_per_s_by_k"]
    assert abs(capacity["2"] / 4.0 - 1) < 0.05 < capacity["0"] / 4.0 - 1  # k=2's near the load, plain decoding's not:
    assert cand["sim"]["capacity_runs_by_k"] == {"2": 5}  # only k=2's saturated run is repeated
    low, high = cand["sim"]["capacity_interval_90_by_k"]["2"]
    assert low <= 4.0 <= high
    said = f"4 QPS is inside the 90% interval of k=2's capacity (~4.1 req/s, the mean of 5 saturated runs: {low:.2f}"
    assert f"{said}-{high:.2f})" in cand["reason"]
    assert cand["sampling"]["interval_90"][1] < 1.0 and "the high end of its band clears it" in cand["reason"]


def test_draft_that_does_not_fit_is_not_recommended_for_memory() -> None:
    doc = _run("draft-does-not-fit")
    draft = _cand(doc, "draft_model:meta-llama/Llama-3.1-8B-Instruct")
    assert draft["verdict"] == "does_not_fit"
    assert "GiB" in draft["reason"] and "does not fit" in draft["reason"]
    assert any(r["rule"] == "VRAM for both models" and r["status"] == "fail" for r in draft["rules"])
    assert doc["recommended"] != draft["candidate"]


def test_int4_target_warns_about_acceptance() -> None:
    doc = _run("int4-target")
    rules = {r["rule"]: r for r in doc["candidates"][0]["rules"]}
    assert rules["quantisation"]["status"] == "warn" and "INT4 target" in rules["quantisation"]["message"]
    # INT4/INT8 need quantised checkpoints (auto-detected by vLLM): no invalid --quantization flag is emitted
    assert "--quantization" not in doc["vllm"]["serve_argv"]
    assert "quantization" not in (doc["vllm"]["speculative_config"] or {})


def test_profile_evidence_replaces_the_prior(tmp_path: Path) -> None:
    profile = {
        "schema": "specwise.profile/1",
        "method": "ngram",
        "target": "meta-llama/Llama-3.1-70B-Instruct",
        "draft": None,
        "results": [
            {
                "temperature": 0.0,
                "drafting": "greedy",
                "quantization": {},
                "class": None,
                "alpha_mean": 0.1,
                "per_position_acceptance": [0.08, 0.03, 0.01, 0.0, 0.0, 0.0],
                "by_k": [{"k": 6, "per_position_acceptance": [0.08, 0.03, 0.01, 0.0, 0.0, 0.0]}],
            },
        ],
    }
    path = tmp_path / "ngram-profile.json"
    path.write_text(json.dumps(profile))
    doc = _run("summarize-low-qps", profile_paths=[path])
    ngram = _cand(doc, "ngram")
    assert ngram["evidence"][0]["kind"] == "profiled" and path.name in ngram["evidence"][0]["source"]
    assert ngram["verdict"] == "disable"  # measured: nothing to copy -> AL ~1.1, the prior was wrong
    assert doc["recommended"] == "draft_model:meta-llama/Llama-3.2-1B-Instruct"


def test_k_schedule_goes_to_zero_where_speculation_stops_paying() -> None:
    batches = {1.0: 4.0, 8.0: 64.0, 32.0: 192.0}  # Little's law: QPS x E2E p50 (4 s, 8 s, 6 s)
    best_k = {1.0: 4, 8.0: 2, 32.0: 2}
    best_speedup = {1.0: 1.8, 8.0: 1.2, 32.0: 1.01}
    assert k_schedule(batches, best_k, best_speedup, 256, 1.05) == [(1, 34, 4), (35, 128, 2), (129, 256, 0)]


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("[[candidate]]\nmethod = 'medusa2'", "[[candidate]] #3.method: expected one of"),
        ("[[candidate]]\nmethod = 'draft_model'", "[[candidate]] #3.draft: method draft_model needs"),
        ("[[candidate]]\nmethod = 'ngram'\nprompt_lookup_min = 5\nprompt_lookup_max = 2", "prompt_lookup_min"),
        ("[[candidate]]\nmethod = 'ngram'\nspeed = 3", "unknown key(s): speed"),
        ("[advise]\noperating_qps = -1", "[advise].operating_qps"),
    ],
)
def test_bad_scenarios_name_the_field(
    patch: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (EXAMPLES / "summarize-low-qps.toml").read_text()
    if patch.startswith("[advise]"):
        text = text.replace("[advise]\noperating_qps = 0.5", patch)
    else:
        text += "\n" + patch + "\n"
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    report = tmp_path / "report.html"
    assert main(["advise", "--scenario", str(bad), "--report", str(report)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not report.exists() and not list(tmp_path.glob(".*tmp"))  # nothing half-written


def test_workload_acceptance_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        (EXAMPLES / "summarize-low-qps.toml")
        .read_text()
        .replace('task = "summarization"', 'task = "summarization"\nacceptance = 0.7')
    )
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    assert main(["advise", "--scenario", str(bad)]) == 2
    assert "depends on the candidate" in capsys.readouterr().err


def test_cli_json_and_html_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "out" / "advise.html"
    code = main(
        [
            "advise",
            "--scenario",
            str(EXAMPLES / "summarize-low-qps.toml"),
            "--processes",
            "1",
            "--report",
            str(report),
            "--json",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["decision"] == "enable" and doc["report"] == str(report)
    page = report.read_text()
    assert "<script" not in page and "http://" not in page.replace("http://HOST:PORT", "")
    assert page.count("data:image/png;base64,") >= 5
    assert "Enable draft_model" in page and "ASSUMED acceptance" in page
    assert not re.search(r"\+-\d", page) and "&plusmn;" in page  # one way to write a band on the page


def test_write_launch_names_the_file_it_wrote_in_the_bench_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bench command of a 'measure first' names the file --write-launch wrote, not SCENARIO.measure.toml."""
    text = (EXAMPLES / "summarize-low-qps.toml").read_text().replace("min_speedup = 1.05", "min_speedup = 1.1")
    scenario = tmp_path / "ngram-only.toml"  # n-gram's band straddles 1.1: measure first
    scenario.write_text(text[: text.index('[[candidate]]\nmethod = "draft_model"')])
    launch = tmp_path / "my_launch.toml"
    args = ["advise", "--scenario", str(scenario), "--processes", "1", "--json", "--write-launch", str(launch)]
    assert main(args) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["decision"] == "measure_first" and f"wrote {launch}" in captured.err
    assert f"specwise bench --launch {launch} " in doc["measure"]["command"]
    assert launch.read_text() == doc["measure"]["launch_toml"]


def test_a_report_that_is_not_html_is_refused_before_simulating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.md"
    assert main(["advise", "--scenario", str(EXAMPLES / "summarize-low-qps.toml"), "--report", str(out)]) == 2
    assert "the report is HTML; give a .html file name" in capsys.readouterr().err and not out.exists()


def test_a_lookups_temperature_curve_says_it_is_per_match() -> None:
    """n-gram's first-position rate is per match (vLLM counts its drafts only on a match): not a draft's per-step
    rate, and its series says so."""
    from specwise.advisor.temperature import temperature_curves

    series = {p.series for p in temperature_curves(load_inputs(EXAMPLES / "summarize-low-qps.toml"), [])}
    assert "ngram / summarize (assumed, per match)" in series
    assert "draft_model:meta-llama/Llama-3.2-1B-Instruct / summarize (assumed)" in series


def test_the_temperature_curves_name_the_workload_as_the_per_position_plot_does() -> None:
    """Before: "summarization" (the task) here and "summarize" (the workload) in the per-position plot. The prior
    is the task's: workloads sharing a task share one curve, named by all of them."""
    from dataclasses import replace

    from specwise.advisor.temperature import temperature_curves

    inputs = load_inputs(EXAMPLES / "summarize-low-qps.toml")
    (w,) = inputs.workloads
    assert (w.name, w.task) == ("summarize", "summarization")
    two = replace(inputs, workloads=(w, replace(w, name="digest"), replace(w, name="chat", task="chat")))
    series = {p.series.split(" / ")[1] for p in temperature_curves(two, [])}
    assert series == {"summarize, digest (assumed)", "summarize, digest (assumed, per match)", "chat (assumed)",
                      "chat (assumed, per match)"}  # fmt: skip
