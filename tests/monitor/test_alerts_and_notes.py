"""What the monitor says about windows it cannot judge plainly: impossible counters (never a restart when vLLM's
``_created`` is unchanged, never an acceptance rate above 1), a target down while another answers, a server restart,
a window with too few drafts, a server without spec-decode counters. Real vLLM pages (tests/fixtures/vllm_metrics),
some edited, served in order on loopback; every run is bounded (--once, or --duration)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.metrics import parse_exposition
from specwise.metrics.exposition import Scrape
from specwise.metrics.spec_decode import NO_DRAFTS_NOTE, V0_NOTE
from specwise.monitor.loop import Target, evaluate_once, server_window
from specwise.monitor.rules import Thresholds
from specwise.monitor.sinks import json_lines
from specwise.monitor.store import MonitorStore
from tests.monitor.pages import Pages, serve_pages, v0_page

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_metrics"
BEFORE = (FIXTURES / "ngram_before.txt").read_text()
AFTER = (FIXTURES / "ngram_after.txt").read_text()  # 34 drafts, 136 draft tokens, 103 accepted since BEFORE
RESTARTED = (FIXTURES / "ngram_after_restart.txt").read_text()  # new _created timestamps: a restart after AFTER
DOWN = "http://127.0.0.1:9/metrics"  # nothing listens on the discard port


def edited(text: str, **totals: float) -> str:
    """``text`` with some ``vllm:spec_decode_num_<name>_total`` values replaced; ``_created`` left as it is."""
    for name, value in totals.items():
        prefix = f'vllm:spec_decode_num_{name}_total{{engine="0",model_name="smollm2"}} '
        head, sep, rest = text.partition(prefix)
        assert sep, name
        text = head + prefix + f"{value}\n" + rest.split("\n", 1)[1]
    return text


def without_spec_decode(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if "spec_decode" not in line)


@pytest.fixture()
def serve() -> Iterator[Any]:
    """``serve(name, *pages)`` -> that sequence's metrics URL; the base URL takes webhook POSTs."""
    yield from serve_pages(Pages)


def once(capsys: pytest.CaptureFixture[str], *urls: str, json_out: bool = True) -> tuple[int, Any]:
    argv = ["monitor", "--once", "--interval", "0.1", *(a for u in urls for a in ("--url", u))]
    code = main([*argv, "--json"] if json_out else argv)
    out = capsys.readouterr().out
    return code, json.loads(out) if json_out else out


# 1. impossible counters


def test_more_accepted_than_drafted_is_an_impossible_counter_not_a_restart(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    url = serve("bad", BEFORE, edited(AFTER, accepted_tokens=500.0))  # 500 accepted of 136 drafted
    code, doc = once(capsys, url)
    (server,) = doc["servers"]
    stats = server["stats"]
    assert stats["acceptance_rate"] is None and stats["mean_acceptance_length"] is None
    assert stats["drafts"] is None and stats["per_position_acceptance"] == []
    assert not stats["counter_reset"] and not any("restart" in n for n in stats["notes"])
    assert [a["rule"] for a in server["alerts"]] == ["impossible_counter"]
    assert "500 tokens accepted of 136 drafted" in server["alerts"][0]["message"]
    assert code == 1
    code, text = once(capsys, serve("bad2", BEFORE, edited(AFTER, accepted_tokens=500.0)), json_out=False)
    assert code == 1 and "3.68" not in text and "15.71" not in text and "restarted" not in text
    assert "impossible counter" in text


def test_counters_going_back_with_created_unchanged_are_no_restart(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    url = serve("back", AFTER, edited(AFTER, drafts=5.0, draft_tokens=20.0, accepted_tokens=20.0))
    code, doc = once(capsys, url)
    (server,) = doc["servers"]
    assert code == 1 and server["stats"]["acceptance_rate"] is None and not server["stats"]["counter_reset"]
    assert [a["rule"] for a in server["alerts"]] == ["impossible_counter"]
    assert "went back (34 -> 5) with _created unchanged" in server["alerts"][0]["message"]


def _parsed(*pages: str) -> list[Scrape]:
    return [parse_exposition(p) for p in pages]


def _two_counters_back(text: str) -> str:
    """``text`` with the generation-token and request counters gone back, ``_created`` unchanged: two faults of
    one kind (``impossible_counter``) in one window."""
    for old, new in (
        ('vllm:generation_tokens_total{engine="0",model_name="smollm2"} 192.0', "10.0"),
        ('vllm:request_success_total{engine="0",finished_reason="length",model_name="smollm2"} 3.0', "0.0"),
    ):
        assert old in text
        text = text.replace(old, old.rsplit(" ", 1)[0] + " " + new)
    return text


def test_two_faults_of_one_kind_in_a_once_window_are_one_alert(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Review: --once judged a window with its own copy of the loop's logic and raised impossible_counter once per
    counter gone back; the loop and a fleet raise each fault kind once."""
    before, after = _parsed(AFTER, _two_counters_back(AFTER))
    window = server_window("http://t/metrics", before, after, 5.0, Thresholds())
    assert window.stats is not None and [k for k, _ in window.stats.faults] == ["impossible_counter"] * 2
    assert [a.rule for a in window.alerts] == ["impossible_counter"]
    assert "vllm:generation_tokens_total went back" in window.alerts[0].message
    code, doc = once(capsys, serve("back2", AFTER, _two_counters_back(AFTER)))
    (server,) = doc["servers"]
    assert code == 1 and [a["rule"] for a in server["alerts"]] == ["impossible_counter"]


def test_loop_stores_no_impossible_acceptance_and_reports_the_fault_once(tmp_path: Path) -> None:
    bad = edited(AFTER, accepted_tokens=500.0)
    script = iter(_parsed(BEFORE, bad, bad))
    clock = iter([0.0, 5.0, 10.0])
    log = io.StringIO()
    store = MonitorStore(tmp_path / "m.sqlite", retention_s=3600)
    target = Target("http://t/metrics")
    for _ in range(3):
        evaluate_once(
            [target], Thresholds(), store, json_lines(log), clock=lambda: next(clock), fetch=lambda u: next(script)
        )
    events = [json.loads(line) for line in log.getvalue().splitlines()]
    assert [(e["event"], e.get("fault")) for e in events] == [("fault", "impossible_counter")]
    windows = store.windows("http://t/metrics")
    assert windows and windows[0][1]["acceptance_rate"] is None and windows[0][1]["mean_acceptance_length"] is None
    assert windows[1][1]["drafts"] == 0  # the bad page against itself: nothing new, nothing impossible
    assert [a[2:4] for a in store.alerts()] == [("fault", "impossible_counter")]
    assert target.alerting  # the fault is still open: an alert for the exit status


# 2. a target down while another answers


def test_a_down_target_is_an_alert_in_once_mode(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ok = serve("ok", BEFORE, AFTER)
    code, doc = once(capsys, ok, DOWN)
    assert code == 1
    assert doc["servers"][0]["alerts"] == []
    down = doc["servers"][1]
    assert "scrape failed" in down["error"] and [a["rule"] for a in down["alerts"]] == ["target_down"]
    assert down["alerts"][0]["severity"] == "critical"


def test_a_down_target_is_an_alert_in_loop_mode(serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = serve("ok", BEFORE, AFTER)
    argv = ["monitor", "--url", ok, "--url", DOWN, "--interval", "0.2", "--duration", "0.8"]
    code = main([*argv, "--db", str(tmp_path / "m.sqlite")])
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["url"] for e in events if e["event"] == "target_down"] == [DOWN]
    assert code == 1
    store = MonitorStore(tmp_path / "m.sqlite", retention_s=3600)
    assert [(a[0], a[2], a[3]) for a in store.alerts()] == [(DOWN, "down", "target_down")]


# 3. a restart


def test_a_restart_is_an_alert_in_once_mode(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = once(capsys, serve("restart", AFTER, RESTARTED))
    (server,) = doc["servers"]
    assert server["stats"]["counter_reset"] and server["stats"]["acceptance_rate"] == pytest.approx(20 / 20)
    assert [a["rule"] for a in server["alerts"]] == ["server_restart"]
    assert code == 1


def test_a_restart_is_reported_once_stored_and_sent_to_the_webhook(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = serve("restart", AFTER, AFTER, RESTARTED)
    argv = ["monitor", "--url", url, "--interval", "0.2", "--window", "0.4", "--duration", "1.4"]
    code = main([*argv, "--webhook", serve.base + "/hook", "--db", str(tmp_path / "m.sqlite")])
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    restarts = [e for e in events if e["event"] == "server_restart"]
    assert len(restarts) == 1 and restarts[0]["url"] == url and "restarted" in restarts[0]["detail"]
    assert code == 1
    assert [h["event"] for h in Pages.hooked].count("server_restart") == 1
    store = MonitorStore(tmp_path / "m.sqlite", retention_s=3600)
    assert [a[2:4] for a in store.alerts()] == [("restart", "server_restart")]


def test_without_created_a_counter_going_back_is_still_a_restart() -> None:
    no_created = [
        "".join(line for line in p.splitlines(keepends=True) if "_created" not in line) for p in (AFTER, RESTARTED)
    ]
    script = iter(_parsed(*no_created))
    clock = iter([0.0, 5.0])
    log = io.StringIO()
    target = Target("http://t/metrics")
    for _ in range(2):
        evaluate_once(
            [target], Thresholds(), None, json_lines(log), clock=lambda: next(clock), fetch=lambda u: next(script)
        )
    assert [json.loads(line)["event"] for line in log.getvalue().splitlines()] == ["server_restart"]
    assert target.restarts == 1 and target.last is not None and target.last.acceptance_rate == 1.0


# 4. too few drafts; 5. no spec-decode counters; 6. the error line


def test_a_window_under_min_drafts_says_the_rules_did_not_judge_it(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    low = edited(AFTER, accepted_tokens=20.0)  # 34 drafts accepting 0.15: under the default --min-drafts 50
    code, doc = once(capsys, serve("low", BEFORE, low))
    (server,) = doc["servers"]
    assert code == 0 and server["alerts"] == [] and server["stats"]["acceptance_rate"] == pytest.approx(20 / 136)
    note = "acceptance rules not evaluated: the window had 34 drafts, fewer than the minimum 50 (--min-drafts)"
    assert note in server["stats"]["notes"]
    code, text = once(capsys, serve("low2", BEFORE, low), json_out=False)
    assert code == 0 and "acceptance rules not evaluated" in " ".join(text.split())
    with pytest.raises(SystemExit):
        main(["monitor", "--help"])
    assert "default 50" in " ".join(capsys.readouterr().out.split())


def test_a_server_without_spec_decode_counters_says_so(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    url = serve("nospec", without_spec_decode(BEFORE), without_spec_decode(AFTER))
    code, doc = once(capsys, url)
    (server,) = doc["servers"]
    assert code == 0 and server["stats"]["acceptance_rate"] is None
    assert "no spec-decode counters on this server (speculation off?)" in server["stats"]["notes"]
    code, text = once(capsys, serve("nospec2", without_spec_decode(BEFORE)), json_out=False)
    assert code == 0 and "speculation off?" in text


def test_a_page_with_no_drafts_counter_is_judged_on_its_acceptance_rate_not_called_speculation_off(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 17-B finding 4: vLLM V1 before 0.8.5 exports draft and accepted token counters but no drafts counter.
    The rate is 500 / 1200 = 0.42 < 0.5: an alert, exit 1; AL and per-position are unknown (never made up), said in
    a note."""
    before = v0_page(BEFORE, 4000.0, 2000.0, 3000.0, v0=False)
    after = v0_page(BEFORE, 5200.0, 2500.0, 3800.0, v0=False)
    code, doc = once(capsys, serve("v0", before, after))
    (server,) = doc["servers"]
    stats = server["stats"]
    assert code == 1 and [a["rule"] for a in server["alerts"]] == ["low_acceptance_rate"]
    assert "over 1200 draft tokens" in server["alerts"][0]["message"]
    assert stats["acceptance_rate"] == pytest.approx(500 / 1200) and stats["draft_tokens"] == 1200
    assert (
        stats["drafts"] is None and stats["mean_acceptance_length"] is None and stats["per_position_acceptance"] == []
    )
    assert NO_DRAFTS_NOTE in stats["notes"] and not any("speculation off?" in n for n in stats["notes"])
    code, text = once(capsys, serve("v0text", before, after), json_out=False)
    assert code == 1 and "acceptance rate 0.42 < 0.5" in text and "before 0.8.5" in text
    # a V0 window under --min-drafts (counted in draft tokens there) is not judged, and says so
    code, doc = once(capsys, serve("v0few", before, v0_page(BEFORE, 4030.0, 2001.0, 3010.0, v0=False)))
    notes = doc["servers"][0]["stats"]["notes"]
    assert code == 0 and any("30 draft tokens, fewer than the minimum 50" in n for n in notes)


def test_a_vllm_v0_page_reads_no_window_acceptance_and_says_why(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM V0 adds lifetime totals to its spec-decode counters at every log interval (vllm/engine/metrics.py): a
    window's delta is no count, so no acceptance and no alert is read from them (review s47a F1: this window
    "accepted" 500 / 1200 = 0.42 and alerted, whatever the server did). The note says why, with the lifetime gauge;
    a NaN gauge (V0's before any draft) is no fault (review s47c F2)."""
    before = v0_page(BEFORE, 4000.0, 2000.0, 3000.0, rate=0.5)
    after = v0_page(BEFORE, 5200.0, 2500.0, 3800.0, rate=0.48)
    code, doc = once(capsys, serve("v0", before, after))
    (server,) = doc["servers"]
    stats = server["stats"]
    assert code == 0 and server["alerts"] == [] and stats["faults"] == []
    assert stats["acceptance_rate"] is None and stats["drafts"] is None and stats["mean_acceptance_length"] is None
    since = "; its acceptance rate since the server started (vllm:spec_decode_draft_acceptance_rate): 0.480"
    assert stats["notes"] == [V0_NOTE + since]
    code, text = once(capsys, serve("v0text", before, after), json_out=False)
    assert code == 0 and "V0" in text and "0.480" in text and "speculation off?" not in text
    nan = v0_page(BEFORE, 4000.0, 2000.0, 3000.0, rate=float("nan"))
    code, doc = once(capsys, serve("v0nan", nan, nan))
    assert code == 0 and doc["servers"][0]["stats"]["faults"] == [] and doc["servers"][0]["alerts"] == []


def test_a_page_with_no_vllm_series_is_said_to_be_no_vllm_page(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Review 7: the node exporter's port by mistake read as 'speculation off?'."""
    node = '# TYPE node_cpu_seconds_total counter\nnode_cpu_seconds_total{cpu="0"} 123\n'
    code, doc = once(capsys, serve("node", node, node))
    notes = doc["servers"][0]["stats"]["notes"]
    assert code == 0 and "not a vLLM /metrics page (no vllm:* series at all): wrong port or path?" in notes
    assert not any("speculation off?" in n for n in notes)


def test_the_error_line_names_the_url_once(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = once(capsys, serve("ok", BEFORE, AFTER), DOWN, json_out=False)
    lines = [line for line in text.splitlines() if "scrape failed" in line]
    assert code == 1 and len(lines) == 1 and lines[0].count(DOWN) == 1, text
    assert "target down" in lines[0]


def test_a_down_target_in_a_fetch_script_is_recorded_and_alerting() -> None:
    def fetch(url: str) -> Scrape:
        raise SpecwiseError(f"{url}: scrape failed: ConnectError")

    target = Target("http://t/metrics")
    evaluate_once([target], Thresholds(), None, None, clock=lambda: 1.0, fetch=fetch)
    assert target.failing and target.alerting


# the predicted-slowdown check names its predictor and error; scenario-only flags need --scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_slowdown_check_names_its_predictor_and_error(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    url = serve("ok", BEFORE, AFTER)
    scenario = str(EXAMPLES / "llama70b-ngram.toml")
    argv = ["monitor", "--once", "--interval", "0.1", "--url", url, "--scenario", scenario]
    main([*argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    predictor = doc["predictor"]  # the object simulate and advise emit (review 11 #11)
    assert predictor["name"].startswith("published-fit") and predictor["relative_error_p80"] > 0
    assert predictor["source"] and "speedups +-" in predictor["description"]
    main(argv)
    text = " ".join(capsys.readouterr().out.split())
    assert "predicted-slowdown check: published-fit" in text
    # the fixture server serves 'smollm2', the scenario prices Llama-3.1-70B: said, not silently applied
    assert "this server serves smollm2; the predicted-slowdown check is priced for meta-llama/Llama-3.1-70B" in text


def test_the_model_note_knows_one_model_by_two_names() -> None:
    from specwise.monitor.predicted import SlowdownModel
    from specwise.specs.model import same_model

    assert same_model("/models/SmolLM2-135M/", "HuggingFaceTB/SmolLM2-135M-Instruct")
    assert not same_model("Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct")
    model = SlowdownModel(None, None, 4, 100, 8, target_model="meta-llama/Llama-3.1-8B-Instruct")  # type: ignore[arg-type]
    assert model.model_note(("Llama-3.1-8B-Instruct",)) is None
    assert model.model_note(()) is None  # no spec-decode series: nothing to compare
    assert "serves qwen3" in (model.model_note(("qwen3",)) or "")


@pytest.mark.parametrize(
    "extra", [["--k", "4"], ["--predictor", "roofline"], ["--calibration", str(FIXTURES / "ngram_after.txt")]]
)
def test_scenario_only_flags_without_a_scenario_are_refused(
    serve: Any, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    url = serve("ok", BEFORE, AFTER)
    assert main(["monitor", "--once", "--interval", "0.1", "--url", url, *extra]) == 2
    assert "needs --scenario" in capsys.readouterr().err


def test_a_k_the_scenario_does_not_model_is_priced_with_a_warning(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """As a live k the scenario does not model is (review 11 #14): the step-time model prices any k."""
    url = serve("ok", BEFORE, AFTER)
    scenario = str(EXAMPLES / "llama70b-ngram.toml")
    argv = ["monitor", "--once", "--interval", "0.1", "--url", url, "--scenario", scenario, "--k", "13", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any(w.startswith("--k 13 is not one of the k values the scenario models (k = ") for w in doc["warnings"])


def test_a_restart_across_an_outage_is_reported_and_fails_the_loop() -> None:
    """A real restart takes tens of seconds of failed scrapes: the first answer after them is compared with the
    last one before (review 7 #5), so the restart is reported and the loop exits 1 as its help says."""
    pages: Iterator[Scrape | None] = iter([*_parsed(AFTER, AFTER), None, None, *_parsed(RESTARTED, RESTARTED)])
    clock = iter(float(i) for i in range(10))

    def fetch(url: str) -> Scrape:
        page = next(pages)
        if page is None:
            raise SpecwiseError(f"{url}: scrape failed: connection refused")
        return page

    log = io.StringIO()
    target = Target("http://t/metrics")
    for _ in range(6):
        evaluate_once([target], Thresholds(), None, json_lines(log), clock=lambda: next(clock), fetch=fetch)
    events = [json.loads(line)["event"] for line in log.getvalue().splitlines()]
    assert events == ["target_down", "target_up", "server_restart"]
    assert target.restarts == 1 and target.alerting
    # the same server answering again after an outage is no restart
    pages = iter([*_parsed(BEFORE, AFTER), None, *_parsed(AFTER)])
    log, target = io.StringIO(), Target("http://t/metrics")
    for _ in range(4):
        evaluate_once([target], Thresholds(), None, json_lines(log), clock=lambda: next(clock), fetch=fetch)
    assert [json.loads(line)["event"] for line in log.getvalue().splitlines()] == ["target_down", "target_up"]
    assert target.restarts == 0
