"""``specwise calibrate`` refuses, in one line naming the file, runs it cannot calibrate from (two models, no
baseline or no speculative run, an unknown method, a speculative rate without a baseline at it, no successful
request) and impossible numbers (negative, non-finite, missing latencies); its printed output says what it
assumed and words a lookup method's fitted cost as overhead, not a draft pass."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.calibration.test_from_vllm import DETAILED

from specwise.calibration.fit import proposer_cost_text
from specwise.cli import main

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


def _set(path: tuple[str | int, ...], value: object) -> Callable[[Run], None]:
    def change(run: Run) -> None:
        node: Any = run
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

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
    (_set(("duration",), 0.0), "duration = 0.0: a run's duration must be a finite number of seconds > 0"),
    (_set(("duration",), -1.6), "duration = -1.6"),
    (_set(("start_times", 0), math.nan), "start_times[0] = nan"),
    (_set(("output_lens", 0), -16), "output_lens[0] = -16"),
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
    assert f"error: {rates}[2]: ngram at --request-rate 5 has no baseline run at that rate" in err
    assert "(baseline rates: 8, 32): run the baseline and each speculative config at the same --request-rate" in err


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
    out = tmp_path / "cal.json"
    assert main(["calibrate", str(DETAILED), "--out", str(out), "--max-num-seqs", "8"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert text.startswith(
        "target: meta-llama/Llama-3.1-8B-Instruct; vLLM version: unknown (not in the result files; give "
        "--engine-version); max_num_seqs 8 (given), max_num_batched_tokens 8192 (assumed: vLLM's default; give "
        "--max-num-batched-tokens)"
    )
    assert "ngram (lookup, no draft pass): speculation overhead per step = 0.38 x the target's verify step" in text
    assert "draft pass =" not in text and f"calibration file: {out}" in text
    assert main(["calibrate", str(DETAILED), "--out", str(tmp_path / "v.json"), "--engine-version", "0.32.0"]) == 0
    assert "vLLM version: 0.32.0; max_num_seqs 256 (assumed" in " ".join(capsys.readouterr().out.split())


def test_proposer_cost_wording() -> None:
    assert proposer_cost_text("eagle3-k3", "eagle3", 0.125) == "eagle3-k3: draft pass = 0.12 x target pass"
    assert proposer_cost_text("sfx", "suffix", 0.05).startswith("sfx (lookup, no draft pass): speculation overhead")
