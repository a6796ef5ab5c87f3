"""advise / simulate output review: a sweep too small to decide on, a disabled candidate's row, the JSON's
candidate order, early output checks, --write-launch's line, the band's shown ends and --wide."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs
from specwise.cli import main
from specwise.cli import simulate as simulate_cli
from specwise.report.advise import render_advise
from specwise.scenario.build import FEW_REQUESTS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "advise"
LOW_QPS = EXAMPLES / "summarize-low-qps.toml"


def _low_qps_with(tmp_path: Path, requests: int, qps: str = "[0.5, 1, 2, 4]") -> Path:
    text = LOW_QPS.read_text().replace("num_requests = 200", f"num_requests = {requests}")
    path = tmp_path / "low.toml"
    path.write_text(text.replace("qps = [0.5, 1, 2, 4]", f"qps = {qps}"))
    return path


def test_one_request_per_load_never_enables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One simulated request per load said "Enable ... even at the low end of the band" and turned n-gram's
    "measure first" into "enable": the band is the predictor's error, not the sampling noise of one request."""
    args = ["advise", "--scenario", str(_low_qps_with(tmp_path, 1)), "--processes", "1"]
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["decision"] == "measure_first" and doc["recommended"] is None
    assert doc["vllm"]["speculative_config"] is None
    assert doc["headline"].startswith(f"Re-run with [sweep].num_requests = {FEW_REQUESTS} or more, or measure")
    assert "1 simulated request per load is too few to decide on" in doc["reason"]
    for c in doc["candidates"]:
        assert c["verdict"] in ("measure_first", "disable"), c["candidate"]
        assert any(w.startswith("[sweep].num_requests = 1:") for w in c["warnings"])
    assert doc["measure"] is not None  # what to do instead: measure the top candidate
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "too few to decide on" in text and "Enable " not in text


def test_enough_requests_still_enable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """At the threshold the simulation decides: the 1B draft is enabled, as in the shipped example."""
    args = ["advise", "--scenario", str(_low_qps_with(tmp_path, FEW_REQUESTS, "[0.5]")), "--processes", "1"]
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["decision"] == "enable"
    assert not any("num_requests" in w for c in doc["candidates"] for w in c["warnings"])


def test_simulate_num_requests_override_is_warned_about(capsys: pytest.CaptureFixture[str]) -> None:
    """``--num-requests 5`` ran silently (the file's 500 had been checked, not the override); a larger override of
    a small file's count drops the file's warning."""
    args = ["simulate", "--scenario", str(ROOT / "examples" / "llama70b-ngram.toml"), "--processes", "1"]
    assert main([*args, "--num-requests", "5", "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any(w.startswith("--num-requests 5:") and "noisy" in w for w in warnings)
    assert main([*args, "--num-requests", "5"]) == 0
    assert "warning: --num-requests 5:" in capsys.readouterr().out


def test_an_override_replaces_the_files_warning() -> None:
    from specwise.scenario import load_scenario
    from specwise.scenario.overrides import with_overrides

    sc = load_scenario(ROOT / "examples" / "llama70b-ngram.toml")
    small = with_overrides(sc, "x", 10, None)
    assert (
        [w for w in small.warnings if "num_requests" in w or "num-requests" in w]
        == [w for w in small.warnings if w.startswith("--num-requests 10:")]
        != []
    )
    back = with_overrides(small, "x", 500, None)
    assert not any("num_requests" in w or "num-requests" in w for w in back.warnings)


def test_a_disabled_candidates_row_quotes_no_speedup_of_another_k(capsys: pytest.CaptureFixture[str]) -> None:
    """A candidate disabled by a rule veto: its row showed another k's speedup beside k 0. Now the row says "-" (as
    a load the deployment cannot keep up with does) and the reason keeps the figure. (draft-does-not-fit's n-gram
    was that candidate until its assumed AL 1.26 stopped vetoing a lookup (review s45c): a profile measuring AL 1.02,
    which bounds any speedup under 1.05x, is one now.)"""
    profile = Path(__file__).parent / "data" / "ngram-al-1.02.json"
    argv = ["advise", "--scenario", str(EXAMPLES / "draft-does-not-fit.toml"), "--profile", str(profile)]
    assert main([*argv, "--json", "--processes", "1"]) == 1
    doc = json.loads(capsys.readouterr().out)
    ngram = next(c for c in doc["candidates"] if c["candidate"] == "ngram")
    assert ngram["verdict"] == "disable" and ngram["k"] == 0
    assert ngram["speedup_at_operating_qps"] is None and "with k=" in ngram["reason"]
    for c in doc["candidates"]:
        if c["verdict"] == "disable":
            assert c["k"] == 0 and c["speedup_at_operating_qps"] is None


def test_the_json_lists_candidates_in_rank_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """summarize-low-qps lists n-gram first, but the 1B draft ranks first: candidates[0] is the top one."""
    args = ["advise", "--scenario", str(_low_qps_with(tmp_path, FEW_REQUESTS, "[0.5]")), "--processes", "1", "--json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranking"] == ["draft_model:meta-llama/Llama-3.2-1B-Instruct", "ngram"]
    assert [c["candidate"] for c in doc["candidates"]] == doc["ranking"]


def _never(*_: Any, **__: Any) -> Any:
    raise AssertionError("simulated before the output path was checked")


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc")
@pytest.mark.parametrize("flag", ["--report", "--write-launch"])
def test_an_output_path_that_cannot_be_created_is_refused_before_simulating(
    flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``/proc`` passes ``os.access`` for root but takes no new file: the run went ~11 s and lost the advice."""
    from specwise.cli import advise as advise_cli

    monkeypatch.setattr(advise_cli, "advise", _never)
    name = "a.html" if flag == "--report" else "a.toml"
    assert main(["advise", "--scenario", str(LOW_QPS), flag, f"/proc/nope/{name}", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "/proc: not writable" in captured.err


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc")
def test_a_plot_directory_that_cannot_be_created_is_refused_before_simulating(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(simulate_cli, "run_sweep", _never)
    args = ["simulate", "--scenario", str(ROOT / "examples" / "llama70b-ngram.toml"), "--plot", "/proc/nope/plots"]
    assert main(args) == 2
    assert "/proc: not writable" in capsys.readouterr().err


def test_a_writable_directory_is_left_as_it_was(tmp_path: Path) -> None:
    from specwise.fileio import check_output_dir, check_output_file

    check_output_file(tmp_path / "sub" / "a.html")
    check_output_dir(tmp_path / "plots")
    assert os.listdir(tmp_path) == []  # the probe file is gone, nothing created


def _measure_doc(tmp_path: Path) -> Any:
    text = LOW_QPS.read_text().replace("min_speedup = 1.05", "min_speedup = 1.1")  # n-gram's band straddles 1.1
    scenario = tmp_path / "ngram-only.toml"
    scenario.write_text(text[: text.index('[[candidate]]\nmethod = "draft_model"')].replace("[0.5, 1, 2, 4]", "[0.5]"))
    return scenario


def test_write_launch_says_where_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After writing the launch file the text said "save this launch file as the command names it"."""
    launch = tmp_path / "launch.toml"
    args = ["advise", "--scenario", str(_measure_doc(tmp_path)), "--processes", "1", "--wide"]
    assert main([*args, "--write-launch", str(launch)]) == 0
    text = capsys.readouterr().out
    assert launch.exists() and f"this launch file is written to {launch}, as the command names it" in text
    assert "save this launch file" not in text
    assert main(args) == 0
    assert "save this launch file as the command names it" in capsys.readouterr().out


def test_fmt_ratio_shows_the_side_of_the_edge() -> None:
    from specwise.units import fmt_ratio

    assert fmt_ratio(0.9979) == "0.998" and fmt_ratio(1.0014) == "1.001" and fmt_ratio(1.0) == "1.00"
    assert fmt_ratio(1.37) == "1.37" and fmt_ratio(1.049, 1.05) == "1.049" and fmt_ratio(1.049) == "1.05"


def test_the_reports_band_says_below_1x_with_a_number_below_1(tmp_path: Path) -> None:
    """The HTML said n-gram's band "is below 1x at 2 QPS" and printed its low end as 1.00 (0.998 rounded)."""
    pytest.importorskip("matplotlib")
    from specwise.report.advise_html import _band_cell
    from specwise.units import fmt_ratio

    assert _band_cell(1.3676703372768961, 0.27) == "1.37 (0.998-1.74)"
    doc = advise(load_inputs(LOW_QPS), processes=1)
    ngram = doc.candidate("ngram").sim
    assert ngram is not None
    report = tmp_path / "r.html"
    from specwise.report.advise_html import write_report

    write_report(doc, report)
    page = report.read_text()
    for q, s in ngram.best_speedup_by_qps.items():
        low = s * (1 - ngram.band)
        if round(s, 2) > 1.0 and low < 1.0:  # said to be below 1x: shown below 1
            assert f"({fmt_ratio(low)}-" in page and float(fmt_ratio(low)) < 1.0, q


def test_wide_does_not_wrap_the_title_or_the_panel(tmp_path: Path) -> None:
    doc = advise(load_inputs(_low_qps_with(tmp_path, FEW_REQUESTS, "[0.5]")), processes=1)
    out = Console(width=80, record=True, highlight=False, soft_wrap=False, color_system=None)
    render_advise(doc, out, wide=True)
    lines = out.export_text().splitlines()
    title = f"specwise advise: {doc.scenario} ({doc.target} on {doc.tp} x {doc.gpu})"
    assert lines[0].rstrip() == title and len(title) > 80
    assert any(line.startswith("│ " + doc.headline) for line in lines)
    assert any(doc.reason in line for line in lines)  # the panel's reason on one line
    narrow = Console(width=80, record=True, highlight=False, soft_wrap=False, color_system=None)
    render_advise(doc, narrow)
    assert narrow.export_text().splitlines()[0].rstrip() != title  # without --wide: folded to the terminal
