"""The bench harness against the local mock server: metrics, faults, nothing lost, resume after kill -9."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.latency import LevelSummary
from specwise.loadgen.client import ClientConfig, RequestSpec
from specwise.loadgen.mock_server import MockBehaviour, MockServer
from specwise.loadgen.records import RequestRecord, summarize_level
from specwise.loadgen.runner import BenchPlan, LevelPlan, run_plan
from specwise.loadgen.sse import MalformedStream, parse_sse_line
from specwise.loadgen.store import ResultStore
from specwise.traffic import Arrivals


def _plan(url: str, rates: list[float], n: int, *, timeout: float = 10.0, max_tokens: int = 16) -> BenchPlan:
    client = ClientConfig(base_url=url, model="mock", request_timeout_s=timeout, read_timeout_s=timeout)
    levels = tuple(
        LevelPlan(i, r, tuple(RequestSpec(f"L{i}-{j}", "hello " * 8, max_tokens) for j in range(n)))
        for i, r in enumerate(rates)
    )
    return BenchPlan(
        client=client, levels=levels, arrivals=Arrivals("poisson", rates[0]), seed=1, metrics_url=url + "/metrics"
    )


def test_acceptance_from_metrics_matches_the_streams(tmp_path: Path) -> None:
    with MockServer(MockBehaviour(tokens_per_chunk=3, num_speculative_tokens=4)) as server:
        store = ResultStore(tmp_path / "r.sqlite")
        results = asyncio.run(run_plan(_plan(server.url, [50.0, 100.0], 10), store, "run1"))
    assert [r.summary.requests for r in results] == [10, 10] and all(r.summary.failed == 0 for r in results)
    for r in results:
        assert r.spec_decode is not None and not r.counter_reset
        spec = r.spec_decode.to_json()
        # Each request: 16 tokens = 1 first + 5 verification chunks of 3 (2 accepted + bonus).
        assert spec["spec_decode_num_drafts"] == 10 * 5
        assert spec["spec_decode_acceptance_rate"] == pytest.approx(2 / 4)
        assert spec["spec_decode_acceptance_length"] == pytest.approx(3.0)
        assert spec["spec_decode_per_position_acceptance_rates"] == pytest.approx([1.0, 1.0, 0.0, 0.0])
        s = r.summary
        assert s.ttft_s.p50 >= 0.01 and s.tpot_s.p50 > 0 and s.output_tokens_per_s > 0
        # Token-normalised ITL: a 3-token chunk after gap g counts as three gaps of g/3.
        assert s.itl_s.p50 < s.tpot_s.p50 * 1.5
    records = store.records("run1")
    assert all(rec.output_tokens == 16 and rec.tokens_exact for rec in records)
    assert sum(n for rec in records for _, n in rec.chunks) == 20 * 16


@pytest.mark.parametrize(
    ("behaviour", "error_prefix"),
    [
        (MockBehaviour(fail_500_every=3), "http 500"),
        (MockBehaviour(fail_429_every=3), "http 429"),
        (MockBehaviour(drop_every=3), "connection"),
        (MockBehaviour(malformed_every=3), "malformed"),
        (MockBehaviour(hang_every=3, hang_s=5.0), "timeout"),
    ],
    ids=["500", "429", "drop", "malformed", "hang"],
)
def test_faults_are_counted_and_nothing_is_lost(tmp_path: Path, behaviour: MockBehaviour, error_prefix: str) -> None:
    with MockServer(behaviour) as server:
        store = ResultStore(tmp_path / "r.sqlite")
        t0 = time.monotonic()
        results = asyncio.run(run_plan(_plan(server.url, [40.0], 9, timeout=1.0), store, "f"))
        assert time.monotonic() - t0 < 20
    s = results[0].summary
    assert s.requests == 9 and s.failed == 3
    assert list(s.errors) == [error_prefix]
    failed = [r for r in store.records("f") if not r.ok]
    assert all(r.error and r.error.startswith(error_prefix) for r in failed)


def test_garbage_and_reset_metrics_are_reported_not_fatal(tmp_path: Path) -> None:
    with MockServer(MockBehaviour(metrics_mode="garbage")) as server:
        results = asyncio.run(run_plan(_plan(server.url, [50.0], 4), ResultStore(tmp_path / "a.sqlite"), "g"))
    assert results[0].spec_decode is None and any("not valid Prometheus" in e for e in results[0].scrape_errors)
    with MockServer(MockBehaviour()) as server:
        store = ResultStore(tmp_path / "b.sqlite")
        asyncio.run(run_plan(_plan(server.url, [50.0], 4), store, "warm"))
        server.behaviour.reset_at_scrape = server.state.scrapes + 2  # restart between the next two scrapes
        results = asyncio.run(run_plan(_plan(server.url, [50.0], 4), store, "r"))
    assert results[0].counter_reset and any("restarted" in e for e in results[0].scrape_errors)
    spec = results[0].spec_decode
    assert spec is not None and spec.to_json()["spec_decode_num_drafts"] >= 0


def test_sse_parsing() -> None:
    assert parse_sse_line("") is None and parse_sse_line(": keepalive") is None
    ev = parse_sse_line('data: {"choices": [{"text": "a"}]}')
    assert ev is not None and not ev.done and ev.payload == {"choices": [{"text": "a"}]}
    done = parse_sse_line("data: [DONE]")
    assert done is not None and done.done
    for bad in ("data: {oops", "data: [1, 2]", "garbage line", 'data: {"error": {"message": "boom"}}'):
        with pytest.raises(MalformedStream):
            parse_sse_line(bad)


def test_level_summary_definitions() -> None:
    rec = RequestRecord(
        "r",
        0,
        "a",
        None,
        0.0,
        start_s=0.0,
        end_s=1.0,
        first_token_s=0.2,
        output_tokens=5,
        chunks=((0.2, 1), (0.4, 2), (0.6, 2)),
    )
    assert rec.ttft_s == pytest.approx(0.2) and rec.tpot_s == pytest.approx(0.4 / 4)
    gaps, weights = rec.itl_samples()
    assert gaps == pytest.approx([0.1, 0.1]) and weights == [2, 2]
    s = summarize_level([rec], 0, 1.0, slo_ttft_s=0.1)
    assert s.goodput_per_s == 0.0 and s.tpot_s.p50 == pytest.approx(0.1)
    assert RequestRecord.from_json(rec.to_json()) == rec


def test_cli_bench_json_and_resume_after_kill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "bench.sqlite"
    with MockServer(MockBehaviour(ttft_s=0.02, chunk_interval_s=0.01)) as server:
        argv = [
            sys.executable,
            "-m",
            "specwise.cli",
            "bench",
            "--url",
            server.url,
            "--model",
            "mock",
            "--rates",
            "4,8",
            "--requests-per-level",
            "12",
            "--max-tokens",
            "16",
            "--db",
            str(db),
            "--run-id",
            "killme",
            "--json",
        ]
        env = {**os.environ, "OPENAI_API_KEY": "sk-secret-test-key"}
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until some, not all, records are in
            time.sleep(0.2)
            if db.exists():
                with _Open(db) as st:
                    if 3 <= len(st.done_ids("killme")) < 24:
                        break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        with _Open(db) as st:
            before = len(st.done_ids("killme"))
        assert 0 < before < 24
        monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-test-key")  # the run sent it: its resume sends it too
        code = main(
            ["bench", "--resume", "killme", "--db", str(db), "--json", "--export-jsonl", str(tmp_path / "r.jsonl")]
        )
        assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert [lv["requests"] for lv in doc["levels"]] == [12, 12]
    # the level the kill cut counts the requests the resuming process sent, from its own before-scrape: not the
    # ones the killed process lost in flight (review s45a: 273 drafts where 252 were sent)
    notes = [(lv, re.search(r"the (\d+) of its 12 requests", " ".join(lv["scrape_errors"]))) for lv in doc["levels"]]
    ((cut, said),) = [(lv, m) for lv, m in notes if m]
    (whole,) = [lv for lv, m in notes if not m]
    per_request = whole["spec_decode"]["spec_decode_num_drafts"] / 12
    assert cut["spec_decode"]["spec_decode_num_drafts"] == per_request * int(said.group(1))
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    ids = [json.loads(line)["request_id"] for line in lines]
    assert len(ids) == 24 == len(set(ids))  # every request exactly once
    assert "sk-secret-test-key" not in db.read_bytes().decode("latin-1")
    assert "sk-secret-test-key" not in (tmp_path / "r.jsonl").read_text()


class _Open:
    def __init__(self, path: Path) -> None:
        self.store = ResultStore(path)

    def __enter__(self) -> ResultStore:
        return self.store

    def __exit__(self, *exc: object) -> None:
        self.store.close()


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["bench", "--model", "m"], "--url and --model are required"),
        (["bench", "--url", "localhost:8000", "--model", "m"], "expected http://HOST:PORT"),
        (["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--rates", "1,-2"], "rates must be > 0"),
        (
            ["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--prompts", "/nonexistent.jsonl"],
            "no such prompt file",
        ),
        (["bench", "--resume", "nope"], "no run 'nope' to resume"),
        (["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--calibrate"], "--calibrate needs --launch"),
        (["bench", "--calibrate-run", "r1"], "no results database"),
    ],
)
def test_bench_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str) -> None:
    assert main([*argv, "--db", str(tmp_path / "x.sqlite")]) == 2
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1


def test_closed_loop_concurrency_and_chat_endpoint(tmp_path: Path) -> None:
    with MockServer(MockBehaviour(ttft_s=0.02, chunk_interval_s=0.005)) as server:
        client = ClientConfig(base_url=server.url, model="mock", endpoint="chat", request_timeout_s=10)
        levels = (LevelPlan(0, None, tuple(RequestSpec(f"c{j}", "hi", 8) for j in range(12)), concurrency=3),)
        plan = BenchPlan(client=client, levels=levels, arrivals=Arrivals("poisson", 1.0), metrics_url=None)
        results = asyncio.run(run_plan(plan, ResultStore(tmp_path / "c.sqlite"), "c"))
        assert server.state.max_in_flight == 3
    lv = results[0].to_json()
    assert lv["concurrency"] == 3 and lv["requests"] == 12 and lv["failed"] == 0
    assert lv["target_rate_per_s"] is None and lv["request_rate_per_s"] > 0
    records = ResultStore(tmp_path / "c.sqlite").records("c")
    assert all(r.output_tokens == 8 and r.tokens_exact for r in records)  # chat deltas counted like text


def test_cli_concurrency_levels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(MockBehaviour(ttft_s=0.005, chunk_interval_s=0.001)) as server:
        code = main(
            [
                "bench",
                "--url",
                server.url,
                "--model",
                "mock",
                "--concurrency",
                "1,4",
                "--requests-per-level",
                "8",
                "--max-tokens",
                "8",
                "--db",
                str(tmp_path / "x.sqlite"),
            ]
        )
    assert code == 0
    out = capsys.readouterr().out
    assert "c=1" in out and "c=4" in out


def test_prompt_files(tmp_path: Path) -> None:
    from specwise.errors import SpecwiseError
    from specwise.loadgen.workload import load_prompts

    he = load_prompts(Path("builtin:humaneval"))
    assert len(he) == 164 and he[0].workload_class == "code" and he[0].prompt.startswith("from typing import")
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "hi", "class": "chat", "max_tokens": 5}\n\n{"prompt": "yo", "temperature": 0.7}\n')
    items = load_prompts(f)
    assert [(i.prompt, i.workload_class, i.max_tokens, i.temperature) for i in items] == [
        ("hi", "chat", 5, None),
        ("yo", None, None, 0.7),
    ]
    for text, fragment in (
        ("", "no prompts"),
        ("{bad\n", "not JSON"),
        ('{"prompt": ""}\n', "non-empty string"),
        ('{"prompt": "x", "max_tokens": 0}\n', "positive integer"),
        ('{"prompt": "x", "temperature": -1}\n', ">= 0"),
    ):
        f.write_text(text)
        with pytest.raises(SpecwiseError, match=fragment):
            load_prompts(f)
    with pytest.raises(SpecwiseError, match="unknown built-in"):
        load_prompts(Path("builtin:nope"))


def test_sweep_probes_then_spreads_rates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(MockBehaviour(ttft_s=0.01, chunk_interval_s=0.002)) as server:
        code = main(
            [
                "bench",
                "--url",
                server.url,
                "--model",
                "mock",
                "--sweep",
                "2",
                "--requests-per-level",
                "8",
                "--max-tokens",
                "8",
                "--db",
                str(tmp_path / "s.sqlite"),
                "--run-id",
                "sw",
                "--json",
            ]
        )
    assert code == 0
    levels = json.loads(capsys.readouterr().out)["levels"]
    assert [lv["concurrency"] for lv in levels] == [1, 8, None, None]
    sync, top = levels[0]["request_rate_per_s"], levels[1]["request_rate_per_s"]
    rates = [lv["target_rate_per_s"] for lv in levels[2:]]
    assert sync < rates[0] < rates[1] < max(top, sync * 1.01)
    with _Open(tmp_path / "s.sqlite") as st:
        assert st.run_config("sw")["sweep_rates"] == pytest.approx(rates)


def test_progress_reports_live_acceptance(tmp_path: Path) -> None:
    seen: list[float | None] = []
    counts: list[int] = []
    with MockServer(MockBehaviour(ttft_s=0.01, chunk_interval_s=0.05, tokens_per_chunk=3)) as server:
        plan = _plan(server.url, [20.0], 12, max_tokens=22)  # 1 + 7 full verification chunks of 3
        asyncio.run(
            run_plan(
                plan,
                ResultStore(tmp_path / "p.sqlite"),
                "p",
                live_interval_s=0.2,
                progress=lambda lv, done, total, acc: (seen.append(acc), counts.append(done)),
            )
        )
    # one call per commit (a batch can hold several records): counts rise to every request
    assert counts == sorted(counts) and counts[-1] == 12 and len(set(counts)) == len(counts)
    live = [a for a in seen if a is not None]
    assert live and all(a == pytest.approx(0.5) for a in live)  # 2 of 4 drafts accepted per step


def test_a_run_whose_every_request_timed_out_points_at_the_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every request timing out is not a wrong URL or model: exit 2 (nothing measured), the hint is the timeout,
    and the line under the table says how many of how many failed and why."""
    from specwise.cli import main

    with MockServer(MockBehaviour(hang_every=1, hang_s=3.0)) as server:
        argv = ["bench", "--url", server.url, "--model", "mock", "--rates", "20", "--requests-per-level", "2"]
        code = main([*argv, "--request-timeout", "0.5", "--db", str(tmp_path / "r.sqlite"), "--max-tokens", "8"])
    captured = capsys.readouterr()
    assert code == 2
    assert "all 2 requests failed (2 timeout); raise --request-timeout" in captured.err
    assert "at 20 rps: 2 of 2 requests failed (2 timeout)" in captured.out


def test_sweep_rates_are_round_numbers_kept_apart() -> None:
    """Rates spread between the probes print as a user would type them (13.4, not 13.4742), still strictly between
    the probes and apart from each other (review s45a, 10)."""
    from types import SimpleNamespace

    from specwise.loadgen.plan import sweep_rates

    def probe(rate: float) -> LevelSummary:
        return SimpleNamespace(request_rate_per_s=rate, failed=0, errors={})  # type: ignore[return-value]

    assert sweep_rates(probe(2.1234567), probe(20.98765), 4) == (5.9, 9.67, 13.4, 17.2)
    close = sweep_rates(probe(5.0), probe(5.0), 3)  # the throughput probe no faster: 1% above, still apart
    assert close == (5.01, 5.03, 5.04) and 5.0 < close[0] < close[1] < close[2] < 5.05
