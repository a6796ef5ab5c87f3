"""advise's "measure first" closes its loop (review: the follow-up advise got the run's acceptance but not the
calibration the same run wrote, so it stayed on the published fit's band and came back "measure first"): the bench
command sends the scenario's traffic (temperature, reply length), calibrates, and the follow-up advise it prints
reads both back from the run's JSON; quoted for a shell; for an engine whose /metrics give no calibration (SGLang)
the command is the bench alone, and says why."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from specwise.acceptance.counts import SpecDecodeCounts
from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs
from specwise.cli import main
from specwise.contracts.bench import BenchConfig, BenchDoc, BenchLevel, SpecDecodeReading
from specwise.contracts.calibration import CalibratedConfig, CalibrationDoc, CalibrationRow, StepLaw
from specwise.latency import LevelSummary
from specwise.stats import Percentiles

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "advise"
TARGET = "meta-llama/Llama-3.1-70B-Instruct"
RATES = (0.5, 1.0)
PER_POSITION = (0.7, 0.5, 0.38, 0.3, 0.24, 0.19)


def _ngram_only(tmp_path: Path, name: str = "ngram only.toml", edit: tuple[str, str] | None = None) -> Path:
    """summarize-low-qps with only its n-gram candidate, at min_speedup 1.1: measure first under the published fit
    (its band, 1.05-1.75x, straddles that); ``name`` has a space, as a user's directory may."""
    text = (EXAMPLES / "summarize-low-qps.toml").read_text().replace("min_speedup = 1.05", "min_speedup = 1.1")
    text = text[: text.index('[[candidate]]\nmethod = "draft_model"')]
    if edit is not None:
        assert edit[0] in text
        text = text.replace(*edit)
    path = tmp_path / name
    path.write_text(text)
    return path


def _level(level: int, rate: float, counts: SpecDecodeCounts | None) -> BenchLevel:
    p = Percentiles(0.05, 0.05, 0.06, 0.07)
    summary = LevelSummary(
        requests=200,
        ttft_s=p,
        tpot_s=p,
        itl_s=p,
        e2e_s=Percentiles(10.0, 10.0, 12.0, 14.0),
        output_tokens_per_s=200 * rate,
        request_rate_per_s=rate,
        goodput_per_s=None,
        level=level,
        target_rate_per_s=rate,
    )
    return BenchLevel(summary, SpecDecodeReading("vllm", counts) if counts is not None else None)


def _bench_json(spec_name: str, temperature: float = 0.0) -> dict[str, Any]:
    """What ``specwise bench --launch F.measure.toml --calibrate --json`` writes for the advised comparison on the
    scenario's server: the run's acceptance (vLLM's counters) and a calibration of its steps (a tight fit)."""
    drafts = 5000.0  # a match in ~18% of decode steps, as the prior assumes: the published fit stays unsure
    counts = SpecDecodeCounts(drafts, drafts * 6, drafts * sum(PER_POSITION), tuple(drafts * r for r in PER_POSITION))
    spec = {"method": "ngram", "num_speculative_tokens": 6, "prompt_lookup_min": 2, "prompt_lookup_max": 4}
    configs = (
        BenchConfig("baseline", "run-baseline", None, "b.log", tuple(_level(i, r, None) for i, r in enumerate(RATES))),
        BenchConfig(
            spec_name, f"run-{spec_name}", spec, "s.log", tuple(_level(i, r, counts) for i, r in enumerate(RATES))
        ),
    )
    calibration = CalibrationDoc(
        run_id="run",
        law=StepLaw(per_kv_token_s=2e-9, per_batched_token_s=4e-5, constant_s=0.025, free_batched_tokens=64.0),
        fit_points=40,
        fit_relative_rms_error=0.02,
        draft_cost_scale={spec_name: 0.02},
        rows=tuple(CalibrationRow(spec_name, i, r, 0.02, 0.02, 1.5, 1.51, 0.01) for i, r in enumerate(RATES)),
        base_config="baseline",
        configs=(CalibratedConfig("baseline", None, None, 0), CalibratedConfig(spec_name, "ngram", None, 6)),
        engine_version="0.32.0",
        hardware="4 x NVIDIA H100 80GB HBM3",
        target=TARGET,
    )
    doc = BenchDoc("run", "b.sqlite", TARGET, configs=configs, calibration=calibration, temperatures=(temperature,))
    return doc.to_json()


def _advise_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main([*argv, "--processes", "1", "--json"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def test_the_follow_up_advise_uses_the_runs_calibration_and_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    scenario = _ngram_only(tmp_path)
    first = _advise_json(["advise", "--scenario", str(scenario)], capsys)
    assert first["decision"] == "measure_first"
    measure = first["measure"]
    bench_part, follow_up = measure["command"].split(" && ")
    bench_words, out_file = (shlex.split(part) for part in bench_part.split(" > "))
    assert bench_words[:4] == ["specwise", "bench", "--launch", "ngram only.measure.toml"]
    assert "--calibrate" in bench_words and out_file == ["ngram only.bench.json"]
    spec_name = next(line for line in measure["launch_toml"].splitlines() if line.startswith('name = "ngram'))
    # the run the command asks for, as bench would write it
    Path(out_file[0]).write_text(json.dumps(_bench_json(spec_name.split('"')[1])))
    words = shlex.split(follow_up)  # pasted into a shell: the quoted paths come back whole
    assert words[:2] == ["specwise", "advise"] and words.count("ngram only.bench.json") == 2
    second = _advise_json(words[1:], capsys)
    assert second["predictor"]["name"] == "calibrated: ngram only.bench.json"
    assert second["decision"] != "measure_first", second["reason"]  # the tight calibrated band settles it
    evidence = second["candidates"][0]["evidence"][0]
    assert evidence["kind"] == "measured"
    # the run's acceptance alone leaves the step times on the published fit, whose band still straddles
    only_bench = _advise_json(["advise", "--scenario", str(scenario), "--bench", out_file[0]], capsys)
    assert only_bench["decision"] == "measure_first"


def test_a_predictor_given_on_the_command_line_is_not_swapped_for_the_scenarios_calibration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review: with --predictor roofline on a scenario that names a calibration, the follow-up had no --calibration
    and fell back to the scenario's file; it now prices with the run's own calibration, and keeps --vllm-version."""
    (tmp_path / "cal.json").write_text(json.dumps(_bench_json("ngram-k6")["calibration"]))
    scenario = _ngram_only(tmp_path, "withcal.toml", ("tp = 4\n", 'tp = 4\ncalibration = "cal.json"\n'))
    doc = _advise_json(["advise", "--scenario", str(scenario), "--predictor", "roofline"], capsys)
    assert doc["decision"] == "measure_first" and doc["predictor"]["name"] == "roofline"
    follow_up = shlex.split(doc["measure"]["command"].split(" && ")[1])
    assert follow_up[follow_up.index("--calibration") + 1] == "withcal.bench.json"
    versioned = _advise_json(["advise", "--scenario", str(_ngram_only(tmp_path)), "--vllm-version", "0.20"], capsys)
    follow_up = shlex.split(versioned["measure"]["command"].split(" && ")[1])
    assert follow_up[follow_up.index("--vllm-version") + 1] == "0.20"


def test_the_bench_sends_the_workloads_temperature_and_reply_length(tmp_path: Path) -> None:
    """Review: the command ran at bench's defaults (--max-tokens 64, T=0): greedy acceptance for a T=0.7 workload."""
    scenario = _ngram_only(tmp_path, edit=("temperature = 0.0\n", "temperature = 0.2\n"))
    doc = advise(load_inputs(scenario), processes=1)
    assert doc.decision == "measure_first" and doc.measure is not None
    words = shlex.split(doc.measure.command.split(" > ")[0])
    assert words[words.index("--temperature") + 1] == "0.2"
    assert words[words.index("--max-tokens") + 1] == "200"  # the workload's mean reply (lognormal, mean 200)
    assert doc.measure.notes == ()  # one workload: nothing left out


def test_several_temperatures_bench_at_the_busiest_one_and_name_the_others() -> None:
    from specwise.advisor.measure import bench_traffic
    from specwise.scenario.model import WorkloadSpec
    from specwise.traffic import LengthDist

    chat = WorkloadSpec("chat", 3.0, LengthDist("fixed", 100), LengthDist("fixed", 300), temperature=0.7)
    code = WorkloadSpec("code", 1.0, LengthDist("fixed", 100), LengthDist("uniform", 0.0, 0.0, 20, 80), 0.0)
    near = WorkloadSpec("near", 1.0, LengthDist("fixed", 100), LengthDist("fixed", 100), temperature=0.8)
    traffic = bench_traffic((code, chat, near))
    assert traffic.temperature == 0.7  # 4 of 5 shares sample at 0.7-0.8; the busiest temperature is 0.7
    assert traffic.max_tokens == round((3 * 300 + 1 * 50 + 1 * 100) / 5)  # uniform 20-80: its middle, 50
    (note,) = traffic.notes
    assert "T=0.7, the temperature of 80% of the traffic" in note and "'code' (T=0)" in note and "near" not in note
    assert bench_traffic((code,)).notes == ()


def test_sglang_measures_without_calibrate_and_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SGLang exports its acceptance as gauges: --calibrate would fail after every level had run, and advise --bench
    would refuse the run; the command is the bench alone, and the note says what to read."""
    text = (EXAMPLES / "summarize-low-qps.toml").read_text().replace("tp = 4\n", 'tp = 4\nengine = "sglang"\n', 1)
    scenario = tmp_path / "sglang.toml"
    scenario.write_text(text.replace("min_speedup = 1.05\n", "min_speedup = 1.5\n", 1))
    doc = _advise_json(["advise", "--scenario", str(scenario)], capsys)
    assert doc["decision"] == "measure_first"
    measure = doc["measure"]
    words = shlex.split(measure["command"])
    assert words[:2] == ["specwise", "bench"] and "--calibrate" not in words and "advise" not in words
    assert "&&" not in measure["command"] and ">" not in measure["command"]
    (note,) = measure["notes"]
    assert "sglang exports its speculation as gauges only (sglang:spec_accept_rate" in note
    assert "at 0.5 req/s clears 1.5x" in note
    assert main(["advise", "--scenario", str(scenario), "--processes", "1"]) == 0
    assert "gauges only" in capsys.readouterr().out  # the text report prints the note under the command
