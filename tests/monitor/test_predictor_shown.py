"""What the predicted-slowdown check says about its own predictor (review 11 #1, #3, #11, #14): the predictor and
its band, the same structured ``predictor`` object simulate and advise emit, the hardware warning simulate and
advise give for a calibration from other hardware (or one that does not record it), and a k the scenario does not
model -- in ``--url`` and ``--prometheus`` mode, ``--once`` and loop, terminal and JSON, events and webhook.

Servers are loopback stand-ins answering real recorded pages: vLLM's /metrics (tests/fixtures/vllm_metrics) and
Prometheus' HTTP API (tests/fixtures/prometheus_api/fleet_answers.json, recorded from Prometheus 2.42)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from specwise.cli import main
from specwise.contracts.calibration import CalibratedConfig, CalibrationDoc, CalibrationRow, StepLaw, StepPoint
from tests.monitor.pages import Pages, serve_pages

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BEFORE = (FIXTURES / "vllm_metrics" / "ngram_before.txt").read_text()
AFTER = (FIXTURES / "vllm_metrics" / "ngram_after.txt").read_text()  # 34 drafts of k=4, 103 accepted since BEFORE
FLEET = json.loads((FIXTURES / "prometheus_api" / "fleet_answers.json").read_text())  # windows of 20 s
TARGET = "meta-llama/Llama-3.1-8B-Instruct"
RUNNING = 'vllm:num_requests_running{engine="0",model_name="smollm2"} 0.0'
HARDWARE = "ran on CPU: test, 2 cores, not H100"
UNRECORDED = "does not record the hardware it ran on"


def _busy(page: str) -> str:
    """The page with 200 requests running, and served as the scenario's model."""
    assert RUNNING in page
    return page.replace(RUNNING, RUNNING.replace(" 0.0", " 200.0")).replace('"smollm2"', f'"{TARGET}"')


def _scenario(path: Path, ks: str = "[0, 4]") -> Path:
    path.write_text(
        f"""
[deployment]
target = "{TARGET}"
gpu = "H100"
max_model_len = 4096
[speculation]
method = "ngram"
k = {ks}
acceptance = 0.6
[sweep]
qps = [1, 4]
num_requests = 40
[[workload]]
name = "w"
prompt_tokens = 200
output_tokens = 60
"""
    )
    return path


def _calibration(path: Path, hardware: str | None = "CPU: test, 2 cores", version: str = "0.32.0") -> Path:
    """A CPU server's law: a 0.3 s step, 5 ms per batched token over 48 (an H100 deployment priced by it slows
    down at batch 200); its measured steps reach the deployment's limits (so no range note joins the warning)."""
    widest = StepPoint("baseline", 0, 256, 0.0, 1e6, 8192.0, 0.3, 5)
    cal = CalibrationDoc(
        run_id="toy",
        law=StepLaw(per_kv_token_s=1e-7, per_batched_token_s=5e-3, constant_s=0.3, free_batched_tokens=48),
        fit_points=10,
        fit_relative_rms_error=0.1,
        draft_cost_scale={"spec": 0.04},
        points=(widest,),
        rows=(CalibrationRow("spec", 0, 1.0, 0.3, 0.31, 1.2, 1.1, -0.1),),
        base_config="baseline",
        configs=(CalibratedConfig("baseline", None, None, 0), CalibratedConfig("spec", "ngram", None, 4)),
        engine_version=version,
        hardware=hardware,
        target=TARGET,
    )
    path.write_text(json.dumps(cal.to_json()))
    return path


class _Handler(Pages):
    """Pages (tests/monitor/pages.py), and ``GET /api/v1/query``: the recorded Prometheus answer to that query, with
    200 requests running on every replica."""

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path != "/api/v1/query":
            super().do_GET()
            return
        query = parse_qs(url.query)["query"][0]
        self.send_body(json.dumps(_prometheus_answer(query)).encode(), "application/json")


def _prometheus_answer(query: str) -> dict[str, Any]:
    recorded_answers = [a for a in FLEET["answers"].values() if a["query"] == query]
    if not recorded_answers:  # a series the recorded V1 fleet did not export (vLLM V0's): Prometheus answers none
        return {"status": "success", "data": {"resultType": "vector", "result": []}}
    [recorded] = recorded_answers
    answer: dict[str, Any] = json.loads(json.dumps(recorded["vector"]))
    if "num_requests_running" in query:  # the recording had none running; the same replicas, busy
        drafts = FLEET["answers"]["drafts"]["vector"]["data"]["result"]
        answer["data"]["result"] = [{"metric": r["metric"], "value": [r["value"][0], "200"]} for r in drafts]
    return answer


@pytest.fixture()
def serve() -> Iterator[Any]:
    """``serve(name, *pages)`` -> that sequence's metrics URL; ``serve.base``: Prometheus' URL and the webhook's."""
    yield from serve_pages(_Handler)


def _simulated_predictor(scenario: Path, cal: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    argv = ["simulate", "--scenario", str(scenario), "--calibration", str(cal), "--json", "--processes", "1"]
    assert main(argv) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _monitor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["monitor", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _flat(text: str) -> str:
    return " ".join(text.split())


def _squeezed(text: str) -> str:
    """``text`` without any whitespace: a path longer than the terminal is folded inside a word (``cal.jso`` /
    ``n``), wherever the temporary directory's length puts the break."""
    return "".join(text.split())


def _says_calibration_and_warning(out: str, cal: Path, warning: str) -> None:
    """The terminal's predicted-slowdown line names the calibration file, and its hardware warning is printed."""
    assert _squeezed(f"predicted-slowdown check: calibrated: {cal}") in _squeezed(out)
    assert _squeezed("warning: " + warning) in _squeezed(out)


def _loop_events(out: str) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    """A loop's stdout: its one predictor event, that event's one warning, and the predicted-slowdown alerts."""
    events = [json.loads(line) for line in out.splitlines()]
    [announced] = [e for e in events if e["event"] == "predictor"]
    [warning] = announced["warnings"]
    opened = [e for e in events if e["event"] == "alert" and e["rule"] == "predicted_net_slowdown"]
    return announced, warning, opened


def _slowdown(alerts: list[dict[str, Any]]) -> dict[str, Any]:
    [alert] = [a for a in alerts if a["rule"] == "predicted_net_slowdown"]
    return alert


# #1, #11: --url --once


@pytest.mark.parametrize(("hardware", "said"), [("CPU: test, 2 cores", HARDWARE), (None, UNRECORDED)])
def test_once_url_says_the_hardware_warning_and_the_band_with_the_alert(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], hardware: str | None, said: str
) -> None:
    scenario, cal = _scenario(tmp_path / "s.toml"), _calibration(tmp_path / "cal.json", hardware)
    simulated = _simulated_predictor(scenario, cal, capsys)
    [warning] = [w for w in simulated["warnings"] if said in w]  # simulate's own wording
    url = serve("busy", _busy(BEFORE), _busy(AFTER))
    argv = ["--once", "--interval", "0.1", "--url", url, "--scenario", str(scenario), "--calibration", str(cal)]
    code, out, _ = _monitor(capsys, *argv, "--min-drafts", "10", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["warnings"] == [warning]
    # the same structured predictor simulate emits, plus what the check prices
    assert {k: doc["predictor"].get(k) for k in simulated["predictor"]} == simulated["predictor"]
    assert doc["predictor"]["fallback_k"] == 4 and doc["predictor"]["k"] is None
    message = _slowdown(doc["servers"][0]["alerts"])["message"]
    assert f"TPOT (+-10%, calibrated: {cal}, k=4 from the counters) -- set k=0" in message
    assert message.endswith("; " + warning)  # a webhook consumer reads it with the alert
    again = serve("busy2", _busy(BEFORE), _busy(AFTER))
    code, out, _ = _monitor(capsys, *argv[:4], again, *argv[5:], "--min-drafts", "10")
    assert code == 1 and "speedups +-10%" in _flat(out)
    _says_calibration_and_warning(out, cal, warning)


def test_a_calibration_of_a_v0_vllm_is_said_by_simulate_and_monitor(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 14: a calibration of vLLM 0.6.3 priced a V1 deployment (the scenario names no version: the current
    vLLM) without a word, though V0 schedules speculation otherwise; said like other hardware, wherever it prices."""
    scenario = _scenario(tmp_path / "s.toml")
    cal = _calibration(tmp_path / "cal.json", "1 x NVIDIA H100 80GB HBM3", version="0.6.3")  # the deployment's GPU
    simulated = _simulated_predictor(scenario, cal, capsys)
    [warning] = [w for w in simulated["warnings"] if w.startswith(f"calibration {cal}")]
    assert warning.startswith(f"calibration {cal} ran vLLM 0.6.3 (V0), but this deployment runs the current vLLM (V1)")
    assert "V0 and V1 schedule speculation differently" in warning
    url = serve("busy", _busy(BEFORE), _busy(AFTER))
    argv = ["--once", "--interval", "0.1", "--url", url, "--scenario", str(scenario), "--calibration", str(cal)]
    code, out, _ = _monitor(capsys, *argv, "--min-drafts", "10", "--json")
    assert code == 1 and json.loads(out)["warnings"] == [warning]


# #3, #1, #11: --prometheus --once


def test_once_prometheus_names_the_predictor_its_band_and_the_hardware(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario, cal = _scenario(tmp_path / "s.toml"), _calibration(tmp_path / "cal.json")
    simulated = _simulated_predictor(scenario, cal, capsys)
    [warning] = [w for w in simulated["warnings"] if HARDWARE in w]
    argv = ["--prometheus", serve.base, "--once", "--window", "20", "--scenario", str(scenario)]
    argv += ["--calibration", str(cal), "--min-drafts", "10"]
    code, out, _ = _monitor(capsys, *argv, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["warnings"] == [warning] and HARDWARE in warning
    assert {k: doc["predictor"].get(k) for k in simulated["predictor"]} == simulated["predictor"]
    slow = [a for a in doc["alerts"] if a["rule"] == "predicted_net_slowdown"]
    assert {a["instance"] for a in slow} == set(FLEET["instances"])  # both replicas, batch 200 each
    assert all("(+-10%, calibrated: " in a["message"] and a["message"].endswith(warning) for a in slow)
    code, out, _ = _monitor(capsys, *argv)
    assert code == 1 and "speedups +-10% (" in _flat(out)
    _says_calibration_and_warning(out, cal, warning)


# #1, #11: loop mode, --url and --prometheus: the stderr start, a JSON line, the events and the webhook


def test_loop_announces_the_predictor_and_warning_and_every_alert_carries_them(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario, cal = _scenario(tmp_path / "s.toml"), _calibration(tmp_path / "cal.json")
    url = serve("busy", _busy(BEFORE), _busy(AFTER))
    argv = ["--url", url, "--interval", "0.2", "--duration", "0.5", "--db", str(tmp_path / "m.sqlite")]
    argv += ["--scenario", str(scenario), "--calibration", str(cal), "--min-drafts", "10"]
    code, out, err = _monitor(capsys, *argv, "--webhook", serve.base + "/hook")
    announced, warning, opened = _loop_events(out)
    assert HARDWARE in warning and announced["predictor"]["name"] == f"calibrated: {cal}"
    assert announced["predictor"]["relative_error_p80"] == pytest.approx(0.1)
    lines = err.splitlines()
    assert f"specwise monitor: warning: {warning}" in lines
    assert any(line.startswith(f"specwise monitor: predicted-slowdown check: calibrated: {cal}") for line in lines)
    hooked = [h for h in _Handler.hooked if h.get("rule") == "predicted_net_slowdown" and h["event"] == "alert"]
    assert code in (0, 1) and opened and hooked
    assert all("(+-10%, calibrated: " in e["message"] and e["message"].endswith(warning) for e in opened + hooked)


def test_loop_through_prometheus_announces_the_predictor_and_warning(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario, cal = _scenario(tmp_path / "s.toml"), _calibration(tmp_path / "cal.json", hardware=None)
    argv = ["--prometheus", serve.base, "--window", "20", "--interval", "0.2", "--duration", "0.3"]
    argv += ["--db", str(tmp_path / "m.sqlite"), "--scenario", str(scenario), "--calibration", str(cal)]
    code, out, err = _monitor(capsys, *argv, "--min-drafts", "10")
    _, warning, opened = _loop_events(out)
    assert UNRECORDED in warning and f"specwise monitor: warning: {warning}" in err.splitlines()
    assert code == 1 and len(opened) == 2 and all(e["message"].endswith(warning) for e in opened)


# #14: a k the scenario does not model, live or --k


def test_a_live_k_the_scenario_does_not_model_is_priced_and_said(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario, cal = _scenario(tmp_path / "s.toml", ks="[0, 2, 8]"), _calibration(tmp_path / "cal.json")
    url = serve("busy", _busy(BEFORE), _busy(AFTER))  # the counters show k = 136 / 34 = 4
    argv = ["--once", "--interval", "0.1", "--url", url, "--scenario", str(scenario), "--calibration", str(cal)]
    code, out, _ = _monitor(capsys, *argv, "--min-drafts", "10", "--json")
    server = json.loads(out)["servers"][0]
    assert code == 1
    assert "k=4 from the counters; the scenario models only k = 2, 8)" in _slowdown(server["alerts"])["message"]
    note = (
        "the live draft length 4 (draft tokens / drafts of this window) is not one of the k values the scenario "
        "models (k = 2, 8 in [speculation].k): the predicted-slowdown check prices k=4 with its step-time model all "
        "the same"
    )
    assert note in server["stats"]["notes"]


def test_a_k_flag_the_scenario_does_not_model_is_priced_with_the_same_warning(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 11 #14: `--k 3` was refused (exit 2) while a live k=3 was priced without a word; both are priced now,
    and both say the scenario models other k values. (--k 5 here: at AL 4.03 a k of 5 costs TPOT at batch 200.)"""
    scenario, cal = _scenario(tmp_path / "s.toml", ks="[0, 2, 8]"), _calibration(tmp_path / "cal.json")
    url = serve("busy", _busy(BEFORE), _busy(AFTER))
    argv = ["--once", "--interval", "0.1", "--url", url, "--scenario", str(scenario), "--calibration", str(cal)]
    code, out, _ = _monitor(capsys, *argv, "--min-drafts", "10", "--k", "5", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["predictor"]["k"] == 5 and doc["predictor"]["modelled_k"] == [2, 8]
    said = "--k 5 is not one of the k values the scenario models (k = 2, 8 in [speculation].k)"
    assert any(w.startswith(said) for w in doc["warnings"])
    assert "k=5 from --k; the scenario models only k = 2, 8)" in _slowdown(doc["servers"][0]["alerts"])["message"]
    for bad in ("0", "17"):  # review s60: --k 100000 was priced; k is 1..16 as everywhere else
        code, _, err = _monitor(capsys, *argv, "--k", bad)
        assert code == 2 and "argument --k: expected an integer in 1..16" in err


# the leftover of review 11 #5: the live step, not only the deployment's limits, is checked against the calibration


def test_an_alert_priced_beyond_the_calibrated_steps_names_the_live_step(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario, cal = _scenario(tmp_path / "s.toml"), _calibration(tmp_path / "cal.json")
    step = {"config": "baseline", "level": 0, "prefill_tokens": 0.0, "time_s": 0.3, "samples": 5}
    doc = json.loads(cal.read_text())
    doc["points"] = [{**step, "num_seqs": 7, "kv_tokens": 310.0, "batched_tokens": 52.0}]  # measured at batch <= 7
    cal.write_text(json.dumps(doc))
    url = serve("busy", _busy(BEFORE), _busy(AFTER))  # 200 requests running
    argv = ["--once", "--interval", "0.1", "--url", url, "--scenario", str(scenario), "--calibration", str(cal)]
    code, out, _ = _monitor(capsys, *argv, "--min-drafts", "10", "--json")
    report = json.loads(out)
    message = _slowdown(report["servers"][0]["alerts"])["message"]
    # k=4 from the counters: 200 sequences of 5 tokens over the scenario's context (200 + 60 / 2 tokens)
    live = "batch 200, KV tokens 47,000 and batched tokens 1,000"
    assert code == 1 and f"the step priced at the live batch has {live}" in message, message
    assert f"calibration {cal} was measured at batch <= 7, KV tokens <= 310 and batched tokens <= 52" in message
    assert "full load" not in message  # the deployment's limits are said once, as a warning, not in every alert
    [limits] = [w for w in report["warnings"] if "at full load this deployment's steps reach" in w]
    assert "batch 256" in limits
    # a calibration that measured such steps says nothing in the alert
    doc["points"] = [{**step, "num_seqs": 256, "kv_tokens": 1e6, "batched_tokens": 8192.0}]
    cal.write_text(json.dumps(doc))
    url = serve("busy2", _busy(BEFORE), _busy(AFTER))
    code, out, _ = _monitor(capsys, *argv[:4], url, *argv[5:], "--min-drafts", "10", "--json")
    report = json.loads(out)
    assert code == 1 and "was measured at" not in _slowdown(report["servers"][0]["alerts"])["message"]
    assert not [w for w in report["warnings"] if "was measured at" in w]
