"""Four small CLI defects a review found: ``calibrate --out -`` wrote a file named ``-``; ``profile`` said "needs
torch" before a bad ``--k``; ``drafts`` said its "no" on stdout without the README's ``specwise drafts: no:``;
``monitor --once`` exited 1 without saying why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.monitor.fleet import FleetWindow
from specwise.monitor.report import FleetReport
from specwise.monitor.rules import Finding
from specwise.monitor.summary import once_line
from tests.conftest import mock_with_traffic

DETAILED = (
    Path(__file__).resolve().parents[1] / "fixtures" / "vllm_bench_serve" / "baseline-and-ngram-on-mock-detailed.json"
)


# -- 1. calibrate --out - ------------------------------------------------------------------------------------------


def test_calibrate_out_dash_prints_the_calibration_on_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", str(DETAILED), "--out", "-", "--engine-version", "0.32.0"]) == 0
    captured = capsys.readouterr()
    cal = json.loads(captured.out)  # the calibration file's document, alone on stdout
    assert cal["source"] == "vllm bench serve" and cal["engine_version"] == "0.32.0"
    assert "max_num_seqs 256 (assumed" in captured.err  # what was assumed, said beside it
    assert not list(tmp_path.iterdir())  # no file named '-'
    # the same document a file gets
    assert main(["calibrate", str(DETAILED), "--out", "cal.json", "--engine-version", "0.32.0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calibration"] == cal == json.loads((tmp_path / "cal.json").read_text())


def test_calibrate_out_dash_with_json_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", str(DETAILED), "--out", "-", "--json"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("specwise calibrate: error: --out -") and "--json" in err
    assert not list(tmp_path.iterdir())


# -- 2. profile: the arguments before the torch check --------------------------------------------------------------


@pytest.mark.parametrize("k", ["6-1", "0"])
def test_profile_says_a_bad_k_before_it_needs_torch(
    k: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("torch", "transformers"):  # absent, as without the extra
        monkeypatch.setitem(sys.modules, name, None)
    argv = ["profile", "--target", "m", "--method", "ngram", "--prompts", "builtin:chat", "--k", k]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--k {k!r}" in err and "needs torch" not in err, err
    assert main(argv[:-2]) == 2  # good arguments: then the missing extra
    assert "profile needs torch: pip install 'specwise[profile]'" in capsys.readouterr().err


# -- 3. drafts: a target that does not fit is the README's "no" ----------------------------------------------------

LLAMA405 = "meta-llama/Llama-3.1-405B-Instruct"


def test_drafts_target_that_does_not_fit_says_no_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["drafts", "--target", LLAMA405, "--gpu", "L4"]) == 1
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"specwise drafts: no: {LLAMA405} itself does not fit on 1 x L4: ")
    assert main(["drafts", "--target", LLAMA405, "--gpu", "L4", "--json"]) == 1
    captured = capsys.readouterr()
    doc = json.loads(captured.out)  # stdout stays the document
    assert doc["target_fits"] is False and doc["gpu"] == "L4" and "drafts" not in doc
    assert captured.err.strip() == err


# -- 4. monitor --once: why it exits 1 -----------------------------------------------------------------------------


def test_monitor_once_says_why_it_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    with mock_with_traffic() as server:
        url = server.url + "/metrics"
        argv = ["monitor", "--url", url, "--once", "--interval", "0.5", "--min-drafts", "1"]
        assert main([*argv, "--json"]) == 1
        json_run = capsys.readouterr()
        assert main(argv) == 1
        table_run = capsys.readouterr()
    doc = json.loads(json_run.out)  # stdout stays pure JSON
    assert doc["servers"][0]["alerts"][0]["rule"] == "low_acceptance_rate"
    for run in (json_run, table_run):
        [line] = [x for x in run.err.splitlines() if "exit 1" in x]
        assert line.startswith("specwise monitor: exit 1 (an alert fired): ")
        assert f"low_acceptance_rate on {url}" in line


def test_monitor_once_fleet_says_why_it_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fired = (
        ("b:1", Finding("impossible_counter", "warning", "x")),
        ("a:1", Finding("low_acceptance_rate", "warning", "y")),
    )
    report = FleetReport("http://127.0.0.1:9090", FleetWindow(0.0, 60.0, ()), fired)
    monkeypatch.setattr("specwise.cli.monitor._fleet_once", lambda *a: report)
    assert main(["monitor", "--prometheus", "http://127.0.0.1:9090", "--once", "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["alerts"][0]["instance"] == "b:1"
    assert captured.err.strip() == (
        "specwise monitor: exit 1 (an alert fired): impossible_counter on b:1; low_acceptance_rate on a:1"
    )


def test_once_line_names_the_first_alerts_and_counts_the_rest() -> None:
    fired = [(f"rule_{i}", "http://h:1/metrics") for i in range(7)] + [("rule_0", "http://h:1/metrics")]
    line = once_line(fired)
    assert line.startswith("exit 1 (an alert fired): rule_0 on http://h:1/metrics; rule_1 on")
    assert line.endswith("; and 2 more") and line.count("rule_0") == 1
