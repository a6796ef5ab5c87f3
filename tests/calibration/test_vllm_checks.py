"""``specwise calibrate`` refuses, in one line naming the file, runs it cannot calibrate from (two models, no
baseline or no speculative run, an unknown method or a k specwise does not simulate, a speculative rate without a
baseline at it, no successful request, a speculative run without spec-decode counts) and impossible numbers
(negative, non-finite, missing latencies or token counts, requests longer than the replay holds, draft-token
counts no vLLM writes for the run's k), and batch limits vLLM or a scenario refuses; its printed output says what
it assumed and words a lookup method's fitted cost as overhead, not a draft pass."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.calibration.test_from_vllm import DETAILED

from specwise.calibration.fit import proposer_cost_text
from specwise.calibration.from_vllm import VllmCalibrationInput
from specwise.cli import main
from specwise.contracts.vllm_detailed import detailed_run
from specwise.errors import SpecwiseError

Run = dict[str, Any]


def _runs() -> list[Run]:
    """The fixture's four runs: baseline at 8 and 32 req/s, then n-gram (k = 4) at 8 and 32."""
    return [json.loads(line) for line in DETAILED.read_text().splitlines() if line.strip()]


def _write(tmp_path: Path, runs: list[Run], name: str = "runs.json") -> str:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in runs) + "\n")  # NaN / Infinity as Python's json writes them
    return str(path)


def _refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str], *files: str) -> str:
    out = tmp_path / "cal.json"
    assert main(["calibrate", *files, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert not out.exists()
    return err


def test_runs_of_two_models_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _runs()
    base, spec = _write(tmp_path, runs[:2], "base.json"), _write(tmp_path, runs[2:], "spec.json")
    for r in runs[2:]:
        r["model_id"] = "Qwen/Qwen3-8B"
    qwen = _write(tmp_path, runs[2:], "qwen.json")
    err = _refusal(tmp_path, capsys, base, qwen)
    assert err.startswith("specwise calibrate: error: runs of different models: ")
    assert f"meta-llama/Llama-3.1-8B-Instruct ({base}[0], {base}[1])" in err
    assert f"Qwen/Qwen3-8B ({qwen}[0], {qwen}[1])" in err
    assert main(["calibrate", base, spec, "--out", str(tmp_path / "ok.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calibration"]["target"] == "meta-llama/Llama-3.1-8B-Instruct"


def test_runs_that_name_no_model_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The calibration would carry no target, which every --calibration reader refuses (it would price any model)."""
    runs = [{**r, "model_id": ""} for r in _runs()]
    path = _write(tmp_path, runs)
    err = _refusal(tmp_path, capsys, path)
    assert f"error: no model_id in {path}[0], {path}[1], {path}[2], {path}[3]: vllm bench serve writes" in err


def _set(path: tuple[str | int, ...], value: object) -> Callable[[Run], None]:
    def change(run: Run) -> None:
        node: Any = run
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


def _sets(*changes: Callable[[Run], None]) -> Callable[[Run], None]:
    def change(run: Run) -> None:
        for c in changes:
            c(run)

    return change


IMPOSSIBLE = [
    (_set(("itls", 0, 0), -1.0), "itls[0][0] = -1.0: a latency must be a finite number of seconds >= 0"),
    (_set(("itls", 3, 2), math.nan), "itls[3][2] = nan"),
    (_set(("itls", 3, 2), "0.01"), "itls[3][2] = '0.01'"),
    (_set(("itls", 1), 0.01), "itls[1] = 0.01: each request's inter-chunk gaps must be a list"),
    (_set(("ttfts", 1), -0.5), "ttfts[1] = -0.5"),
    (_set(("ttfts", 1), math.inf), "ttfts[1] = inf"),
    (_set(("ttfts", 1), 0.0), "ttfts[1] = 0.0: zero for a request that produced tokens"),
    (_set(("ttfts", 1), None), "ttfts[1] = None: missing for a request that produced tokens"),
    (_set(("latencies", 2), -math.inf), "latencies[2] (E2E) = -inf"),
    (_set(("latencies", 2), 0), "latencies[2] (E2E) = 0: zero"),
    (_set(("itls", 3, 2), 1e300), "itls[3][2] = 1e+300: longer than the whole run (duration = 0.553545 s)"),
    (_set(("ttfts", 4), 0.6), "ttfts[4] = 0.6: longer than the whole run"),
    (_set(("duration",), 0.0), "duration = 0.0: a run's duration must be a finite number of seconds > 0"),
    (_set(("duration",), -1.6), "duration = -1.6"),
    (_set(("start_times", 0), math.nan), "start_times[0] = nan"),
    (_set(("output_lens", 0), -16), "output_lens[0] = -16"),
    (_set(("input_lens", 0), -4), "input_lens[0] = -4: a token count must be an integer >= 0"),
    (_set(("input_lens", 5), 31.5), "input_lens[5] = 31.5: a token count must be an integer >= 0"),
    (_set(("input_lens", 5), None), "input_lens[5] = None"),
    (
        _set(("output_lens", 0), 10**9),
        "input_lens[0] + output_lens[0] = 32 + 1,000,000,000 tokens: more than the 10,000,000 tokens of context",
    ),
    # an impossible load is said where it is read, not as a load no baseline ran at
    (_set(("request_rate",), -1), 'request_rate: must be > 0 (or "inf"), got -1'),
    (_set(("request_rate",), 0), 'request_rate: must be > 0 (or "inf"), got 0'),
    (_set(("max_concurrency",), -8), "max_concurrency: must be an integer >= 1 (null or 0: no cap), got -8"),
    (_set(("completed",), -1), "completed: -1: must be at least 0 (a count)"),
    (_set(("completed",), 0), "completed + failed = 0 + 0, but the per-request lists hold 12 requests"),
    (
        _sets(_set(("completed",), 11), _set(("failed",), 1)),
        "completed = 11, but 12 requests produced tokens (output_lens > 0)",
    ),
    (_set(("errors",), "x"), "errors = 'x': expected a list, one entry per request"),
    (_set(("errors",), ["", ""]), "per-request lists of different lengths (start_times 12, ttfts 12, itls 12, "),
    (_set(("errors", 3), 5), "errors[3] = 5: an error must be a string ('' for success)"),
    (_set(("latencies",), "x"), "latencies = 'x': expected a list, one entry per request"),
    (_set(("ttfts",), "x"), "ttfts = 'x': expected a list"),  # not "no per-request timings": it has them
    (_set(("start_times",), {"a": 1}), "start_times = {'a': 1}: expected a list"),  # not "predates start_times"
    (_set(("model_id",), 5), "model_id: expected a string, got 5"),
]


@pytest.mark.parametrize(("change", "field"), IMPOSSIBLE, ids=[field.split(":")[0] for _, field in IMPOSSIBLE])
def test_impossible_numbers_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Callable[[Run], None], field: str
) -> None:
    runs = _runs()
    change(runs[1])
    path = _write(tmp_path, runs)
    assert f"error: {path}[1]: {field}" in _refusal(tmp_path, capsys, path)


def test_a_failed_request_and_a_zero_gap_are_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM writes a failed request as ttft 0, no gaps, output_len 0 (and latency 0): not an impossible number."""
    runs = _runs()
    for field, value in (("ttfts", 0.0), ("itls", []), ("output_lens", 0), ("latencies", 0.0), ("errors", "boom")):
        runs[0][field][0] = value
    runs[0]["itls"][1][3] = 0.0  # two chunks in one clock tick
    assert main(["calibrate", _write(tmp_path, runs), "--out", str(tmp_path / "cal.json"), "--json"]) == 0


def _spec(run: Run, method: str, **extra: object) -> Run:
    return {**run, "speculative_config": json.dumps({"method": method, **extra})}


def test_runs_that_cannot_be_calibrated_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _runs()
    spec_only = _write(tmp_path, runs[2:], "spec.json")
    assert f"error: no baseline run in {spec_only}[0], {spec_only}[1]: " in _refusal(tmp_path, capsys, spec_only)
    base_only = _write(tmp_path, runs[:2], "base.json")
    assert f"error: only baseline runs in {base_only}[0], {base_only}[1]: " in _refusal(tmp_path, capsys, base_only)
    warp = _write(tmp_path, [*runs[:2], *(_spec(r, "warp", num_speculative_tokens=4) for r in runs[2:])], "w.json")
    err = _refusal(tmp_path, capsys, warp)
    assert f"error: {warp}[2]: speculative_config: unknown speculative method 'warp' (known: draft_model," in err
    no_k = _write(tmp_path, [*runs[:2], *(_spec(r, "ngram") for r in runs[2:])], "nok.json")
    assert f"error: {no_k}[2]: speculative_config has no num_speculative_tokens" in _refusal(tmp_path, capsys, no_k)
    runs[2]["request_rate"], runs[3]["request_rate"] = 5.0, 50.0
    rates = _write(tmp_path, runs, "rates.json")
    err = _refusal(tmp_path, capsys, rates)
    assert f"error: {rates}[2]: ngram at --request-rate 5 --max-concurrency 8 has no baseline run at that load" in err
    assert (
        "(baseline runs: --request-rate 8 --max-concurrency 8, --request-rate 32 --max-concurrency 8): run the "
        "baseline and each speculative config at the same --request-rate and --max-concurrency"
    ) in err


def test_a_speculative_run_without_counts_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without them the fit would take one query token per sequence and the replay zero acceptance: the
    reviewer's synthetic n-gram runs (10 % overhead, x2.7-3.0 measured) were fitted at 17 % and replayed at
    x0.6-0.8, with exit 0."""
    runs = _runs()
    for r in runs[3:]:
        for key in [k for k in r if k.startswith("spec_decode_")]:
            del r[key]
    path = _write(tmp_path, runs)
    err = _refusal(tmp_path, capsys, path)
    assert f"error: {path}[3]: the ngram run has no spec_decode counts (vLLM wrote none: " in err
    assert "calibrate needs them to know the tokens per step -- re-run the bench against a vLLM that exposes" in err


COUNTS = [
    (
        {"spec_decode_draft_tokens": 1e30},
        "spec_decode_draft_tokens = 1e+30 with spec_decode_num_drafts = 60 and "
        "num_speculative_tokens = 4: vLLM counts 1..4 draft tokens per draft, so between 60 and 240",
    ),
    ({"spec_decode_draft_tokens": 241}, "spec_decode_draft_tokens = 241 with spec_decode_num_drafts = 60"),
    ({"spec_decode_draft_tokens": 59, "spec_decode_accepted_tokens": 59}, "spec_decode_draft_tokens = 59 with"),
    (
        {"spec_decode_per_position_acceptance_rates": [1.0, 1.0, 0.0, 0.0, 0.0]},
        "spec_decode_per_position_acceptance_rates has 5 positions but the speculative_config's "
        "num_speculative_tokens is 4",
    ),
    (
        {"speculative_config": json.dumps({"method": "ngram", "num_speculative_tokens": 1000})},
        "speculative_config num_speculative_tokens = 1000: specwise simulates at most 16 draft tokens per step",
    ),
]


@pytest.mark.parametrize(("change", "message"), COUNTS, ids=[m.split(" ")[0] for _, m in COUNTS])
def test_counts_impossible_for_the_runs_k_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, object], message: str
) -> None:
    runs = _runs()
    runs[2].update(change)
    path = _write(tmp_path, runs)
    assert f"error: {path}[2]: {message}" in _refusal(tmp_path, capsys, path)


def test_fewer_draft_tokens_than_k_per_draft_are_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM counts the draft tokens it scheduled, which the token budget or a lookup can make fewer than k."""
    runs = _runs()
    runs[2].update(spec_decode_draft_tokens=200)
    assert main(["calibrate", _write(tmp_path, runs), "--out", str(tmp_path / "cal.json"), "--json"]) == 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-num-seqs", "100000000"], "argument --max-num-seqs: expected an integer in 1..1,000,000, got"),
        (["--max-num-seqs", "99999999999999999999"], "argument --max-num-seqs: expected an integer in 1..1,000,000"),
        (["--max-num-batched-tokens", str(2**31 + 1)], "argument --max-num-batched-tokens: expected an integer in"),
        (
            ["--max-num-batched-tokens", "10"],
            "error: --max-num-batched-tokens 10 must be at least --max-num-seqs 256 (vLLM's default): vLLM's "
            "SchedulerConfig refuses less (vllm/config/scheduler.py)",
        ),
        (
            ["--max-num-seqs", "9000"],
            "error: --max-num-batched-tokens 8,192 (vLLM's default) must be at least --max-num-seqs 9,000: ",
        ),
    ],
)
def test_batch_limits_a_scenario_refuses_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    out = tmp_path / "cal.json"
    assert main(["calibrate", str(DETAILED), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_the_library_checks_batch_limits_too() -> None:
    with pytest.raises(SpecwiseError, match=r"^--max-num-seqs 100,000,000: must be in 1\.\.1,000,000$"):
        VllmCalibrationInput((DETAILED,), max_num_seqs=10**8, max_num_batched_tokens=10**9, assumed=())
    with pytest.raises(SpecwiseError, match=r"^--max-num-batched-tokens 10 must be at least --max-num-seqs 256 \("):
        VllmCalibrationInput((DETAILED,), max_num_batched_tokens=10, assumed=("max_num_seqs",))


def test_the_largest_batch_limits_are_taken(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    limits = ["--max-num-seqs", "1000000", "--max-num-batched-tokens", "1000000"]
    assert main(["calibrate", str(DETAILED), "--out", str(tmp_path / "cal.json"), "--json", *limits]) == 0
    assert json.loads(capsys.readouterr().out)["calibration"]["rows"]


def test_no_successful_requests_is_worded_for_calibrate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _runs()
    for r in runs[2:]:
        n = len(r["ttfts"])
        r.update(ttfts=[0.0] * n, itls=[[]] * n, output_lens=[0] * n, latencies=[0.0] * n, errors=["boom"] * n)
    path = _write(tmp_path, runs)
    err = _refusal(tmp_path, capsys, path)
    assert f"error: no successful requests in {path}[2]" in err and "launch file" not in err
    for r in runs:  # every request streamed one chunk: no engine step anywhere
        n = len(r["ttfts"])
        r.update(itls=[[]] * n, output_lens=[1] * n, errors=[""] * n, ttfts=[0.01] * n, latencies=[0.01] * n)
    path = _write(tmp_path, runs, "one-chunk.json")
    err = _refusal(tmp_path, capsys, path)
    assert f"error: no engine steps in the baseline runs ({path}[0], {path}[1])" in err and "launch" not in err


def test_the_printed_calibration_says_what_it_assumed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / ("long-directory-name-" * 4) / "cal.json"  # longer than a console line
    out.parent.mkdir()
    assert main(["calibrate", str(DETAILED), "--out", str(out), "--max-num-seqs", "8"]) == 0
    raw = capsys.readouterr().out
    # the path and the command to use it stay on one line, whole, whatever the console width
    assert f"calibration file: {out} (use it: specwise simulate|advise|monitor --calibration {out})\n" in raw
    text = " ".join(raw.split())  # the console wraps long prose lines
    assert text.startswith(
        "target: meta-llama/Llama-3.1-8B-Instruct; vLLM version: unknown (not in the result files; give "
        "--engine-version); max_num_seqs 8 (given), max_num_batched_tokens 8192 (assumed: vLLM's default; give "
        "--max-num-batched-tokens)"
    )
    assert "ngram (lookup, no draft pass): speculation overhead per step = 0.39 x the target's verify step" in text
    assert "draft pass =" not in text and f"calibration file: {out}" in text
    assert main(["calibrate", str(DETAILED), "--out", str(tmp_path / "v.json"), "--engine-version", "0.32.0"]) == 0
    assert "vLLM version: 0.32.0; max_num_seqs 256 (assumed" in " ".join(capsys.readouterr().out.split())


def test_proposer_cost_wording() -> None:
    assert proposer_cost_text("eagle3-k3", "eagle3", 0.125) == "eagle3-k3: draft pass = 0.12 x target pass"
    assert proposer_cost_text("sfx", "suffix", 0.05).startswith("sfx (lookup, no draft pass): speculation overhead")


def _capped(run: Run, concurrency: int) -> Run:
    return {**run, "request_rate": "inf", "max_concurrency": concurrency}


def test_runs_are_paired_by_rate_and_concurrency(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A `--request-rate inf --max-concurrency N` sweep: a speculative run is compared with the baseline at its own
    concurrency, never at another (a baseline at 4 and n-gram at 16 were one level: a 'measured' speedup of the
    two loads, exit 0), and one configuration at two concurrencies is two levels (it was refused as 'a second run
    ... at request_rate None')."""
    runs = _runs()
    mismatched = _write(tmp_path, [_capped(runs[0], 4), _capped(runs[2], 16)], "mismatch.json")
    err = _refusal(tmp_path, capsys, mismatched)
    assert f"{mismatched}[1]: ngram at --request-rate inf --max-concurrency 16 has no baseline run at that load" in err
    assert "(baseline runs: --request-rate inf --max-concurrency 4)" in err
    sweep = [_capped(runs[0], 4), _capped(runs[1], 16), _capped(runs[2], 4), _capped(runs[3], 16)]
    out = tmp_path / "sweep-cal.json"
    assert main(["calibrate", _write(tmp_path, sweep, "sweep.json"), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "c=4" in said and "c=16" in said
    rows = json.loads(out.read_text())["rows"]
    assert [(r["config"], r["level"], r["concurrency"]) for r in rows] == [
        ("baseline", 0, 4),
        ("baseline", 1, 16),
        ("ngram", 0, 4),
        ("ngram", 1, 16),
    ]
    twice = _write(tmp_path, [_capped(runs[0], 4), _capped(runs[1], 4), _capped(runs[2], 4)], "twice.json")
    err = _refusal(tmp_path, capsys, twice)
    assert f"{twice}[1]: a second run of one configuration at --request-rate inf --max-concurrency 4" in err


def test_a_baseline_that_timed_no_step_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The law is the baseline's: with every gap 0, or every output one token, it was fitted to the n-gram run's
    steps without a word, and (all gaps 0) a measured speedup of 0.00 was written."""
    runs = _runs()
    zero = [dict(r) for r in runs]
    zero[0] = {**runs[0], "itls": [[0.0] * len(x) for x in runs[0]["itls"]]}
    path = _write(tmp_path, zero, "zero.json")
    assert f"{path}[0]: itls: all " in _refusal(tmp_path, capsys, path)
    assert "inter-chunk gaps are 0: no engine step was timed" in _refusal(tmp_path, capsys, path)
    one = [dict(r) for r in runs]
    for n in (0, 1):
        count = len(runs[n]["itls"])
        one[n] = {**runs[n], "itls": [[] for _ in range(count)], "output_lens": [1] * count}
    path = _write(tmp_path, one, "one.json")
    assert f"error: no engine steps in the baseline runs ({path}[0], {path}[1]): " in _refusal(tmp_path, capsys, path)


def test_a_file_from_a_bench_without_start_times_is_told_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = _runs()
    for r in runs:
        del r["start_times"]
    path = _write(tmp_path, runs)
    err = _refusal(tmp_path, capsys, path)
    assert "no start_times (when each request was sent): the file has the other per-request timings" in err
    assert "PR #32667" in err and "--save-detailed" not in err  # the user gave it; their vLLM saves no send times


def test_the_server_limits_are_recorded_and_a_smaller_cap_than_measured_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = _runs()
    spec_first = _write(tmp_path, [*runs[2:], *runs[:2]], "ngram-then-base.json")
    out = tmp_path / "cal.json"
    assert main(["calibrate", spec_first, "--out", str(out), "--max-num-seqs", "2"]) == 0
    said = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["server"] == {"max_num_seqs": 2, "max_num_batched_tokens": 8192}
    assert doc["assumed"]["max_num_batched_tokens"] == 8192 and "max_num_seqs" not in doc["assumed"]
    peak = max(p["num_seqs"] for p in doc["points"])
    assert peak > 2 and doc["warnings"] == [
        f"the runs show {peak} requests decoding in one engine step, more than --max-num-seqs 2 the replay caps its "
        "batch at: give the server's --max-num-seqs (its simulated TPOT and speedups assume the smaller batch)"
    ]
    assert "warning: the runs show" in " ".join(said.split())
    assert doc["run_id"] == "ngram-then-base"  # the file the baseline came from (here the one file)
    assert main(["calibrate", spec_first, "--out", str(tmp_path / "ok.json"), "--max-num-seqs", "64"]) == 0
    assert "warnings" not in json.loads((tmp_path / "ok.json").read_text()) and "warning" not in capsys.readouterr().out


def test_a_model_specific_mtp_name_is_read_as_mtp() -> None:
    """vLLM runs deepseek_mtp (MTP's only name before 0.11) and qwen3_next_mtp, ... as mtp."""
    run = _spec(_runs()[2], "deepseek_mtp", num_speculative_tokens=1)
    assert detailed_run(run, "r.json").method == "mtp"


def test_a_drafting_run_without_its_speculative_config_is_not_a_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review s60: a speculating server's run whose --metadata speculative_config was left out was fitted as a
    baseline (exit 0, and a replay warning that blamed --max-num-seqs)."""
    runs = _runs()
    del runs[3]["speculative_config"]  # the n-gram run at 32 req/s, its counts kept
    drafted = runs[3]["spec_decode_num_drafts"]
    assert drafted > 0
    path = _write(tmp_path, runs, "lost.json")
    err = _refusal(tmp_path, capsys, path)
    assert f"error: {path}[3]: the server drafted ({drafted:g} spec_decode drafts) but the run has no " in err
    assert "speculative_config='{...}'" in err


def test_out_rewrites_a_calibration_but_not_another_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review s60: ``calibrate --out foo.txt`` replaced an unrelated file without a word (export --out refuses)."""
    runs = _write(tmp_path, _runs())
    notes = tmp_path / "notes.txt"
    notes.write_text("hi\n")
    assert main(["calibrate", runs, "--out", str(notes)]) == 2
    err = capsys.readouterr().err
    assert f"error: --out {notes}: exists and is not a file this command wrote" in err
    assert notes.read_text() == "hi\n"
    cal = tmp_path / "cal.json"
    assert main(["calibrate", runs, "--out", str(cal), "--json"]) == 0
    first = cal.read_text()
    assert main(["calibrate", runs, "--out", str(cal), "--json"]) == 0  # its own file: written again
    assert cal.read_text() == first


def test_what_counts_as_a_calibration_file_to_write_again() -> None:
    from specwise.contracts.calibration import is_calibration_text

    assert is_calibration_text('{"schema": "specwise.calibration/1"}')
    assert is_calibration_text('{"predictor": {}, "points": []}')  # an older specwise's, without a schema
    assert not is_calibration_text('{"schema": "specwise.advise/1"}')
    assert not is_calibration_text('{"name": "x"}') and not is_calibration_text("hi") and not is_calibration_text("[]")
