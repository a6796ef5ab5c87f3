"""Monitor core on real vLLM /metrics text, rules with hysteresis, and `specwise monitor --once`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specwise.cli import main
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.metrics import parse_exposition
from specwise.monitor.rules import AlertState, Finding, Thresholds, check
from specwise.monitor.window import WindowStats, window_stats
from tests.conftest import mock_with_traffic

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_metrics"


def _scrape(name: str):  # type: ignore[no-untyped-def]
    return parse_exposition((FIXTURES / name).read_text(), name)


def test_window_on_real_vllm_metrics() -> None:
    stats = window_stats(_scrape("ngram_before.txt"), _scrape("ngram_after.txt"), 10.0)
    assert stats.acceptance_rate == pytest.approx(103 / 136)  # the counters' own ratio
    assert stats.mean_acceptance_length == pytest.approx(1 + 103 / 34)
    assert stats.per_position_acceptance == pytest.approx((27 / 34, 26 / 34, 25 / 34, 25 / 34))
    assert stats.draft_tokens_per_s == pytest.approx(13.6) and stats.accepted_tokens_per_s == pytest.approx(10.3)
    assert stats.requests_per_s == pytest.approx(0.3)  # 3 requests in the window
    assert stats.generation_tokens_per_s is not None and stats.generation_tokens_per_s > 0
    assert stats.latency["tpot_s"]["count"] == 3 and stats.latency["ttft_s"]["p50"] is not None
    assert not stats.counter_reset and stats.running == 0


def test_window_across_a_restart_never_goes_negative() -> None:
    stats = window_stats(_scrape("ngram_after.txt"), _scrape("ngram_after_restart.txt"), 10.0)
    assert stats.counter_reset and any("restarted" in n for n in stats.notes)
    for value in (stats.draft_tokens_per_s, stats.requests_per_s, stats.generation_tokens_per_s):
        assert value is None or value >= 0
    assert stats.acceptance_rate is not None and 0 <= stats.acceptance_rate <= 1


def _stats(rate: float, al: float, per_pos: tuple[float, ...] = (), drafts: float = 100.0) -> WindowStats:
    return WindowStats(10.0, drafts, rate, al, per_pos, None, None, None, None, None, None, None, None)


def test_rules() -> None:
    t = Thresholds()
    assert check(_stats(0.8, 3.0), t) == []
    assert [f.rule for f in check(_stats(0.3, 1.3), t)] == ["low_acceptance_rate", "low_acceptance_length"]
    assert check(_stats(0.3, 1.3, drafts=10), t) == []  # too few drafts to judge
    collapse = check(_stats(0.6, 2.0, (0.9, 0.6, 0.02, 0.01)), t)
    assert [f.rule for f in collapse] == ["position_collapse"] and "set k=2" in collapse[0].message


def test_hysteresis_reports_each_transition_once() -> None:
    state = AlertState(clear_after=2)
    low = [Finding("low_acceptance_rate", "warning", "x")]
    assert state.update(low) == (low, [])
    assert state.update(low) == ([], [])  # still firing: not reported again
    assert state.update([]) == ([], [])  # one clean evaluation: not cleared yet
    assert state.update(low) == ([], [])  # flapped back: still the same open alert
    assert state.update([]) == ([], [])
    assert state.update([]) == ([], ["low_acceptance_rate"])


def test_monitor_once_against_the_mock(capsys: pytest.CaptureFixture[str]) -> None:

    with mock_with_traffic() as server:
        code = main(
            ["monitor", "--url", server.url + "/metrics", "--once", "--interval", "0.5", "--json", "--min-drafts", "1"]
        )
    doc = json.loads(capsys.readouterr().out)
    stats = doc["servers"][0]["stats"]
    assert stats["acceptance_rate"] == pytest.approx(0.25)  # 1 of 4 drafts accepted per step
    assert code == 1 and doc["servers"][0]["alerts"][0]["rule"] == "low_acceptance_rate"


def test_once_takes_its_two_scrapes_a_window_apart(capsys: pytest.CaptureFixture[str]) -> None:
    """Review E: ``--once --window 20`` reported "over the last 5.0 s": the scrapes were --interval apart."""
    with mock_with_traffic() as server:
        argv = ["monitor", "--url", server.url + "/metrics", "--once", "--interval", "0.2", "--window", "0.9"]
        main([*argv, "--json", "--min-drafts", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert 0.9 <= doc["window_s"] < 3.0


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["monitor", "--url", "localhost:8000", "--once"], "expected http://HOST:PORT"),
        (["monitor", "--url", "http://127.0.0.1:9/metrics", "--once", "--interval", "0.1"], "scrape failed"),
        (["monitor", "--url", "http://127.0.0.1:9/metrics", "--interval", "-1"], "expected a number > 0"),
    ],
)
def test_monitor_bad_input(capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1


def test_monitor_garbage_metrics_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(MockBehaviour(metrics_mode="garbage")) as bad, MockServer(MockBehaviour()) as good:
        code = main(
            [
                "monitor",
                "--url",
                bad.url + "/metrics",
                "--url",
                good.url + "/metrics",
                "--once",
                "--interval",
                "0.1",
                "--json",
            ]
        )
    doc = json.loads(capsys.readouterr().out)
    assert code == 1  # a server that cannot be read while another answers is an alert (target down)
    assert "not valid Prometheus" in doc["servers"][0]["error"] and "stats" in doc["servers"][1]
    assert [a["rule"] for a in doc["servers"][0]["alerts"]] == ["target_down"]


def _two_models(a: tuple[int, int], b: tuple[int, int]) -> str:
    lines = []
    for n, idx in (("drafts", 0), ("draft_tokens", None), ("accepted_tokens", 1)):
        lines.append(f"# TYPE vllm:spec_decode_num_{n}_total counter")
        for model, (drafts, accepted) in (("chat-lora", a), ("code-lora", b)):
            v = drafts * 4 if idx is None else (drafts, accepted)[idx]
            lines.append(f'vllm:spec_decode_num_{n}_total{{engine="0",model_name="{model}"}} {v}')
    return "\n".join(lines) + "\n"


def test_a_labelled_class_dragging_acceptance_down_is_named() -> None:
    before = parse_exposition(_two_models((0, 0), (0, 0)))
    after = parse_exposition(_two_models((100, 60), (400, 1400)))  # chat: 0.15, code: 0.875
    stats = window_stats(before, after, 10.0)
    assert stats.by_model["chat-lora"]["acceptance_rate"] == pytest.approx(0.15)
    assert stats.acceptance_rate == pytest.approx(1460 / 2000)
    found = {f.rule: f for f in check(stats, Thresholds())}
    assert "class_drag:chat-lora" in found and "code-lora" not in str(list(found))
    assert "model_name='chat-lora' accepts 0.15 vs 0.73" in found["class_drag:chat-lora"].message


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--webhook", "http://127.0.0.1:9/x"], "--webhook"),
        (["--serve", "127.0.0.1:0"], "--serve"),
        (["--serve-metrics", "127.0.0.1:0"], "--serve-metrics"),
        (["--live"], "--live"),
        (["--duration", "5"], "--duration"),
        (["--db", "x.sqlite"], "--db"),
        (["--retention", "60"], "--retention"),
        (["--live", "--duration", "5"], "--live and --duration"),
    ],
)
def test_once_refuses_loop_only_flags(capsys: pytest.CaptureFixture[str], extra: list[str], named: str) -> None:
    """--once would silently ignore these (a cron job's --webhook never posting): exit 2 naming the flag, before
    any scrape (the URL below answers nothing). Review 7 #6."""
    assert main(["monitor", "--url", "http://127.0.0.1:9/metrics", "--once", "--interval", "0.1", *extra]) == 2
    err = capsys.readouterr().err
    assert f"{named}: loop mode only; drop" in err and "--once" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("flag", ["--serve", "--serve-metrics"])
def test_a_bind_port_out_of_range_is_bad_input(capsys: pytest.CaptureFixture[str], flag: str) -> None:
    """Exit 2 with one line, not an internal error (review 7 #7)."""
    argv = ["monitor", "--url", "http://127.0.0.1:9/metrics", "--interval", "0.1", "--duration", "0.2", flag]
    argv.append("127.0.0.1:99999")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{flag} 127.0.0.1:99999: port must be 0-65535" in err and len(err.strip().splitlines()) == 1


def test_a_url_without_a_path_scrapes_metrics_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """``--url http://HOST:PORT`` (what the error text used to ask for) scrapes /metrics, said once on stderr
    (review 7 #10); a bad URL's error names the metrics form."""
    with mock_with_traffic() as server:
        assert server.url.count("/") == 2  # no path
        argv = ["monitor", "--url", server.url, "--once", "--interval", "0.3", "--json", "--min-drafts", "1"]
        code = main(argv)
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 1 and doc["servers"][0]["url"] == server.url + "/metrics" and "stats" in doc["servers"][0]
    assert captured.err.count(f"--url {server.url} has no path: scraping {server.url}/metrics") == 1
    assert main(["monitor", "--url", "127.0.0.1:8000/metrics", "--once"]) == 2
    assert "expected http://HOST:PORT/metrics" in capsys.readouterr().err
    # one server given twice (once without its path) is refused before any scrape (review s60: scraped twice)
    assert main(["monitor", "--url", "http://127.0.0.1:9/metrics", "--url", "http://127.0.0.1:9", "--once"]) == 2
    err = capsys.readouterr().err
    assert err.endswith("error: --url http://127.0.0.1:9/metrics is given twice: give each server once\n")


def test_a_ctrl_c_while_the_webhook_drains_still_closes_the_rest() -> None:
    """A second Ctrl-C during the up-to-10-s webhook drain used to escape the loop's handler: exit 130, no closing
    line, the history database and sockets left to the interpreter (review 7 #20). Now the drain is cut short, the
    rest is closed, and the loop says what was dropped."""
    from specwise.cli.common import Terminated
    from specwise.cli.monitor import _close

    closed: list[str] = []

    class Part:
        def __init__(self, name: str, interrupt: type[BaseException] | None = None) -> None:
            self.name, self.interrupt = name, interrupt

        def close(self) -> None:
            closed.append(self.name)
            if self.interrupt is not None:
                raise self.interrupt

        def stop(self) -> None:
            closed.append(self.name)

    parts: Any = [Part("live"), Part("hook", KeyboardInterrupt), Part("store"), Part("scraper"), Part("exp"), Part("b")]
    assert _close(*parts) == "Ctrl-C"
    assert closed == ["live", "hook", "store", "scraper", "exp", "b"]
    closed.clear()
    parts[1] = Part("hook", Terminated)  # review s60: a SIGTERM there was called Ctrl-C
    assert _close(*parts) == "SIGTERM"
    closed.clear()
    parts[1] = Part("hook")
    assert _close(*parts) is None and closed == ["live", "hook", "store", "scraper", "exp", "b"]


def test_a_loop_shorter_than_one_window_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 11 leftover: a loop that ends before its second scrape judges nothing, yet closed with "exit 0: no
    alert open". It is refused before any scrape (the URL answers nothing), naming both flags."""
    argv = ["monitor", "--url", "http://127.0.0.1:9/metrics", "--interval", "5", "--duration", "2"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--duration 2 s ends before the second scrape (5 s, --interval)" in err and "--once" in err
    assert len(err.strip().splitlines()) == 1
