"""A review fed ``monitor`` pages no vLLM writes: a ``position`` label of 20,000,000 built a table that long (5 GB,
defeating the page cap), ``position="²"`` and ``le="abc"`` ended the whole loop with exit 3, two series differing
only in an ``instance`` label overwrote each other (a false low-acceptance alert), and a non-finite gauge was an
alert in the loop but a note with ``--once``. Each is now a ``malformed_series`` fault (or, for the federated page,
a pooled count), the same in both modes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specwise.cli import main
from specwise.metrics import parse_exposition
from specwise.metrics.exposition import MAX_DRAFT_POSITIONS, bucket_bound, draft_position
from specwise.metrics.histogram import HistogramSnapshot
from specwise.metrics.spec_decode import spec_decode_counters, total_delta
from specwise.monitor.vet import MALFORMED_SERIES, NON_FINITE, vet
from tests.monitor.pages import Pages, serve_pages

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_metrics"
BEFORE = (FIXTURES / "ngram_before.txt").read_text()
AFTER = (FIXTURES / "ngram_after.txt").read_text()
POS3 = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="smollm2",position="3"} 25.0\n'
BUCKET = 'vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.01",model_name="smollm2"} 0.0\n'


def _after_with(line: str, after: str = POS3) -> str:
    """The recorded page with ``line`` added after the line ``after`` (inside its family, as a server writes it)."""
    assert after in AFTER
    return AFTER.replace(after, after + line, 1)


def _pos(label: str, value: float = 1.0) -> str:
    labels = f'engine="0",model_name="smollm2",position="{label}"'
    return f"vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels}}} {value}\n"


@pytest.mark.parametrize(
    "label", ["20000000", "999999999999", "²", "1.5", "-1", " 2", "01", "", str(MAX_DRAFT_POSITIONS)]
)
def test_a_position_no_vllm_writes_is_a_malformed_series_and_builds_no_table(label: str) -> None:
    scrape = parse_exposition(_after_with(_pos(label)))
    counters = spec_decode_counters(scrape)  # never raises, never allocates the label's length
    assert len(counters[("smollm2", "0", ())].accepted_per_position) == 4
    vetted = vet(scrape)
    assert vetted.scrape is None  # not windowed: which positions the server drafts is unknown
    (fault,) = vetted.faults
    assert fault[0] == MALFORMED_SERIES and "is not a draft position" in fault[1], fault


def test_draft_positions_up_to_the_bound_are_read() -> None:
    assert [draft_position(t) for t in ("0", "7", str(MAX_DRAFT_POSITIONS - 1))] == [0, 7, MAX_DRAFT_POSITIONS - 1]
    assert draft_position(None) is None


@given(st.text(max_size=30))
def test_any_label_text_is_a_position_or_none_never_an_error(text: str) -> None:
    p = draft_position(text)
    assert p is None or (0 <= p < MAX_DRAFT_POSITIONS and text == str(p))
    b = bucket_bound(text)
    assert b is None or b == b  # never NaN


def test_a_bucket_bound_that_is_not_a_number_is_malformed_and_read_as_no_bucket() -> None:
    line = 'vllm:request_time_per_output_token_seconds_bucket{engine="0",le="abc",model_name="smollm2"} 1.0\n'
    scrape = parse_exposition(_after_with(line, BUCKET))
    good = HistogramSnapshot.from_scrape(parse_exposition(AFTER), "vllm:request_time_per_output_token_seconds")
    assert HistogramSnapshot.from_scrape(scrape, "vllm:request_time_per_output_token_seconds") == good
    vetted = vet(scrape)
    assert vetted.scrape is None and vetted.faults[0][0] == MALFORMED_SERIES
    assert "le 'abc' is not a bucket bound" in vetted.faults[0][1]
    assert bucket_bound("+Inf") == float("inf") and bucket_bound("0.025") == 0.025


def test_a_series_the_page_repeats_is_malformed() -> None:
    vetted = vet(parse_exposition(_after_with(_pos("3", 2.0))))  # position 3 twice: 25 and 2
    assert vetted.scrape is None
    assert vetted.faults == (
        (
            MALFORMED_SERIES,
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="smollm2",position="3"} '
            "appears twice on the page (Prometheus refuses a scrape with duplicate series): scrape not windowed; "
            "the next good scrape is windowed against the last good one",
        ),
    )


def test_the_recorded_vllm_pages_are_not_malformed() -> None:
    for text in (BEFORE, AFTER, (FIXTURES / "ngram_after_restart.txt").read_text()):
        vetted = vet(parse_exposition(text))
        assert vetted.scrape is not None and vetted.faults == ()


def _federated(page: str, drafts: int, accepted: tuple[int, int]) -> str:
    """Two servers' spec-decode counters on one page (a federating Prometheus adds ``instance``): ``drafts`` drafts
    of 4 tokens each, ``accepted`` tokens; every other series of the recorded page once."""
    lines = []
    for line in page.splitlines():
        if not line.startswith("vllm:spec_decode_num_"):
            lines.append(line)
            continue
        if "_per_pos_" in line:
            continue
        name, rest = line.split("{", 1)
        labels = rest.split("}", 1)[0]
        for instance, acc in zip(("a", "b"), accepted, strict=True):
            value = {"drafts_total": drafts, "draft_tokens_total": 4 * drafts, "accepted_tokens_total": acc}
            v = next((x for key, x in value.items() if name.endswith(key)), None)
            lines.append(f'{name}{{{labels},instance="{instance}"}} {v if v is not None else 1.7e9}')
    return "\n".join(lines) + "\n"


def test_a_federated_page_pools_its_servers_instead_of_keeping_the_last() -> None:
    before = spec_decode_counters(parse_exposition(_federated(BEFORE, 0, (0, 0))))
    after = spec_decode_counters(parse_exposition(_federated(AFTER, 100, (380, 40))))
    assert len(after) == 2  # one series per instance, none overwritten
    delta = total_delta(before, after)
    assert delta is not None and delta.impossible is None
    # the review's page: specwise said 0.10 (the last series) where the pooled truth is 420 / 800
    assert delta.stats.acceptance_rate == pytest.approx(420 / 800)


class _Routes(Pages):
    pass


@pytest.fixture
def serve() -> Iterator[Any]:
    yield from serve_pages(_Routes)


def test_once_a_malformed_page_is_an_alert_in_one_line_never_exit_3(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    url = serve("sup", BEFORE, _after_with(_pos("²")))
    assert main(["monitor", "--url", url, "--once", "--interval", "0.2"]) == 1
    out, err = capsys.readouterr()
    assert "malformed series" in out and "Traceback" not in out + err, (out, err)


def test_the_loop_keeps_watching_the_other_targets(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = 'vllm:request_time_per_output_token_seconds_bucket{engine="0",le="abc",model_name="smollm2"} 1.0\n'
    bad = serve("badle", BEFORE, _after_with(line, BUCKET))
    good = serve("good", BEFORE, AFTER)
    argv = ["monitor", "--url", good, "--url", bad, "--interval", "0.3", "--duration", "1.2", "--json"]
    code = main([*argv, "--db", str(tmp_path / "m.sqlite")])
    out, err = capsys.readouterr()
    assert code == 1 and "internal error" not in err, err  # the fault is still reported when the loop stops
    assert '"fault": "malformed_series"' in out
    assert "malformed series on " + bad in err


def test_once_a_non_finite_gauge_is_an_alert_as_in_the_loop(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    running = 'vllm:num_requests_running{engine="0",model_name="smollm2"} 0.0\n'
    url = serve("inf", BEFORE, AFTER.replace(running, running.replace("0.0", "+Inf")))
    assert main(["monitor", "--url", url, "--once", "--interval", "0.2", "--json"]) == 1
    assert NON_FINITE in capsys.readouterr().out


def test_the_loop_says_when_it_watched_no_vllm_page(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 12 #6: a wrong port (another exporter's page) watched in loop mode closed with "no alert open" and
    nothing else; the closing line now names it, as --once's window notes do."""
    other = "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n"
    url = serve("notvllm", other, other.replace("1.5", "2.5"))
    argv = ["monitor", "--url", url, "--interval", "0.3", "--duration", "1.0", "--db", str(tmp_path / "m.sqlite")]
    assert main(argv) == 0
    closing = capsys.readouterr().err.strip().splitlines()[-1]
    assert closing.endswith(f"{url}: not a vLLM /metrics page (no vllm:* series at all): wrong port or path?")


def _before_0_11(page: str) -> str:
    """The recorded page as a vLLM before 0.11 writes it: ITL under its old name, no per-request TPOT histogram."""
    kept = [line for line in page.splitlines() if "request_time_per_output_token" not in line]
    return "\n".join(kept).replace("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds") + "\n"


def test_itl_is_read_under_its_name_before_vllm_0_11() -> None:
    """Review 12 #5: on vLLM before 0.11 the ITL histogram is ``vllm:time_per_output_token_seconds`` (renamed in
    0.11, vllm/v1/metrics/loggers.py) and per-request TPOT does not exist: ITL was blank, TPOT blank without a
    word. ITL is read from the old name and the window says TPOT is not exported."""
    from specwise.monitor.window import NO_TPOT_BEFORE_0_11, window_stats

    now = window_stats(parse_exposition(BEFORE), parse_exposition(AFTER), 10.0)
    old = window_stats(parse_exposition(_before_0_11(BEFORE)), parse_exposition(_before_0_11(AFTER)), 10.0)
    assert old.latency["itl_s"] == now.latency["itl_s"] and "tpot_s" in now.latency
    assert "tpot_s" not in old.latency and NO_TPOT_BEFORE_0_11 in old.notes
    assert NO_TPOT_BEFORE_0_11 not in now.notes
    assert vet(parse_exposition(_before_0_11(AFTER))).scrape is not None  # its samples are kept by the parser too


def _fleet_page(servers: dict[str, tuple[int, float, float, int]]) -> str:
    """A page federating vLLM servers (``instance`` label): per server (drafts, _created, generated tokens, running);
    4 draft tokens per draft, half of them accepted."""
    lines = []
    for instance, (drafts, born, generated, running) in servers.items():
        labels = f'engine="0",instance="{instance}",model_name="m"'
        lines += [
            f"vllm:spec_decode_num_drafts_total{{{labels}}} {drafts}",
            f"vllm:spec_decode_num_drafts_created{{{labels}}} {born}",
            f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {4 * drafts}",
            f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {2 * drafts}",
            f"vllm:generation_tokens_total{{{labels}}} {generated}",
            f"vllm:num_requests_running{{{labels}}} {running}",
        ]
    return "\n".join(lines) + "\n"


def test_a_federated_page_counts_each_server_on_its_own() -> None:
    """The review's second federated page: one server restarting inside the window counts from its restart while
    the other counts its increase (generation 15 tokens/s, not 65: the page's sum went 1000 -> 650, read as one
    restart of everything), and the batch the step-time model prices is one server's (10, not 20)."""
    from specwise.monitor.window import window_stats

    before = parse_exposition(_fleet_page({"a": (10, 100.0, 500, 10), "b": (10, 200.0, 500, 10)}))
    after = parse_exposition(_fleet_page({"a": (20, 100.0, 600, 10), "b": (5, 300.0, 50, 10)}))  # b restarted
    w = window_stats(before, after, 10.0)
    assert w.counter_reset and w.generation_tokens_per_s == pytest.approx((100 + 50) / 10)
    assert w.running == 20 and w.running_per_engine == 10
    steady = window_stats(
        before, parse_exposition(_fleet_page({"a": (20, 100.0, 600, 9), "b": (20, 200.0, 700, 10)})), 10.0
    )
    assert not steady.counter_reset and steady.generation_tokens_per_s == pytest.approx(30.0)
    assert steady.acceptance_rate == pytest.approx(0.5)


def test_kv_cache_usage_is_the_fullest_engines_not_a_sum_past_one() -> None:
    """vllm:kv_cache_usage_perc is a fraction per engine: two servers at 0.7 and 0.6 read 1.3 (130% of a cache)."""
    from specwise.monitor.window import window_stats

    page = _fleet_page({"a": (10, 100.0, 500, 10), "b": (10, 200.0, 500, 10)})
    usage = 'vllm:kv_cache_usage_perc{{engine="0",instance="{}",model_name="m"}} {}\n'
    after = parse_exposition(page + usage.format("a", 0.7) + usage.format("b", 0.6))
    w = window_stats(parse_exposition(page), after, 10.0)
    assert w.kv_cache_usage == pytest.approx(0.7) and w.running == 20  # requests are still the page's total


def test_kv_cache_usage_is_read_under_its_name_before_vllm_0_10() -> None:
    """vLLM 0.8.5 (vllm/v1/metrics/loggers.py) exports only vllm:gpu_cache_usage_perc; 0.10 and 0.11 both names,
    0.16 only the new one (review s47a F3: the monitor showed no KV usage on 0.8/0.9 pages)."""
    from specwise.monitor.window import window_stats

    page = _fleet_page({"a": (10, 100.0, 500, 10)})
    old = 'vllm:gpu_cache_usage_perc{engine="0",instance="a",model_name="m"} 0.93\n'
    new = 'vllm:kv_cache_usage_perc{engine="0",instance="a",model_name="m"} 0.5\n'
    assert window_stats(parse_exposition(page), parse_exposition(page + old), 10.0).kv_cache_usage == 0.93
    both = window_stats(parse_exposition(page), parse_exposition(page + old + new), 10.0)
    assert both.kv_cache_usage == 0.5  # the current name wins where a page has both


def _page(drafts: int, born: float, generated: float, ttft_count: int) -> str:
    """One server: (spec-decode drafts, every counter's _created, generated tokens, TTFT samples: all 0.05 s)."""
    return (
        f'vllm:spec_decode_num_drafts_total{{model_name="m"}} {drafts}\n'
        f'vllm:spec_decode_num_drafts_created{{model_name="m"}} {born}\n'
        f'vllm:spec_decode_num_draft_tokens_total{{model_name="m"}} {4 * drafts}\n'
        f'vllm:spec_decode_num_draft_tokens_created{{model_name="m"}} {born}\n'
        f'vllm:spec_decode_num_accepted_tokens_total{{model_name="m"}} {2 * drafts}\n'
        f'vllm:spec_decode_num_accepted_tokens_created{{model_name="m"}} {born}\n'
        f'vllm:generation_tokens_total{{model_name="m"}} {generated}\n'
        f'vllm:generation_tokens_created{{model_name="m"}} {born}\n'
        f'vllm:time_to_first_token_seconds_bucket{{le="0.1",model_name="m"}} {ttft_count}\n'
        f'vllm:time_to_first_token_seconds_bucket{{le="+Inf",model_name="m"}} {ttft_count}\n'
        f'vllm:time_to_first_token_seconds_count{{model_name="m"}} {ttft_count}\n'
        f'vllm:time_to_first_token_seconds_sum{{model_name="m"}} {0.05 * ttft_count}\n'
        f'vllm:time_to_first_token_seconds_created{{model_name="m"}} {born}\n'
    )


def test_a_restart_dated_by_created_rates_since_the_restart() -> None:
    """A 60 s window in which the server restarted 20 s before the second scrape (its _created says when): 600
    tokens since then are 30 tokens/s, not 600 / 60 = 10 (review s45a: rates read ~6x low); without the scrape's time
    the rate is over the window, as Prometheus' rate() does, and the note says it reads low. A restart dated under
    5 s ago is the hosts' clocks disagreeing (vLLM dates _created before loading the model): 5 s at least."""
    from specwise.monitor.window import MIN_RESTART_SPAN_S, window_stats

    before = parse_exposition(_page(1000, 1_000.0, 50_000, 900))
    after = parse_exposition(_page(100, 1_986.0, 600, 30))  # born at 1986, scraped at 2006
    dated = window_stats(before, after, 60.0, after_at=2_006.0)
    assert dated.counter_reset and dated.generation_tokens_per_s == pytest.approx(600 / 20)
    assert dated.draft_tokens_per_s == pytest.approx(400 / 20)
    assert dated.acceptance_rate == pytest.approx(0.5)
    undated = window_stats(before, after, 60.0)
    assert undated.generation_tokens_per_s == pytest.approx(600 / 60.0)
    assert any("then they read low" in n for n in undated.notes)
    skewed = window_stats(before, after, 60.0, after_at=1_987.5)  # 1.5 s: a clock ahead, not a restart that young
    assert skewed.generation_tokens_per_s == pytest.approx(600 / MIN_RESTART_SPAN_S)


def test_a_restart_whose_counts_passed_the_old_ones_counts_from_the_restart() -> None:
    """The new server has already generated more than the old one had when the window began: _created says it is
    another server life, so its counts start at 0, never at the old value (they were 700 - 500 = 200 tokens)."""
    from specwise.monitor.window import window_stats

    before = parse_exposition(_page(10, 1_000.0, 500, 20))
    after = parse_exposition(_page(60, 2_000.0, 700, 50))
    w = window_stats(before, after, 10.0)
    assert w.counter_reset and w.generation_tokens_per_s == pytest.approx(700 / 10)
    assert w.latency["ttft_s"]["count"] == 50  # the histogram from the restart too: not 50 - 20


def _ttft_series(instance: str, born: float, fast: int, slow: int) -> str:
    """One server's TTFT histogram on a federated page: ``fast`` samples under 0.1 s, ``slow`` between 0.1 and 1."""
    labels = f'instance="{instance}",model_name="m"'
    return (
        f'vllm:time_to_first_token_seconds_bucket{{le="0.1",{labels}}} {fast}\n'
        f'vllm:time_to_first_token_seconds_bucket{{le="1.0",{labels}}} {fast + slow}\n'
        f'vllm:time_to_first_token_seconds_bucket{{le="+Inf",{labels}}} {fast + slow}\n'
        f"vllm:time_to_first_token_seconds_count{{{labels}}} {fast + slow}\n"
        f"vllm:time_to_first_token_seconds_sum{{{labels}}} {0.05 * fast + 0.5 * slow}\n"
        f"vllm:time_to_first_token_seconds_created{{{labels}}} {born}\n"
    )


def test_a_server_joining_a_federated_page_is_no_restart() -> None:
    """Server b appears on the page inside the window: a new series, not a restart of a -- a's quantiles stay the
    window's (review s45d: the whole-page _created comparison read it as a restart and gave a's lifetime p50)."""
    from specwise.monitor.window import window_stats

    before = parse_exposition(_ttft_series("a", 100.0, 0, 10_000))
    after = parse_exposition(_ttft_series("a", 100.0, 100, 10_000) + _ttft_series("b", 5_000.0, 10, 0))
    w = window_stats(before, after, 10.0)
    assert not w.counter_reset and w.latency["ttft_s"]["count"] == 110
    assert w.latency["ttft_s"]["p50"] is not None and w.latency["ttft_s"]["p50"] < 0.1
    reborn = parse_exposition(_ttft_series("a", 200.0, 50, 10_100))  # a started again, already past its old count
    assert window_stats(before, reborn, 10.0).counter_reset
