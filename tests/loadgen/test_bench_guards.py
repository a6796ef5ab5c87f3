"""bench's guards against results that mislead: a closed port fails at once, two outputs never share a file, a
repeated --metrics-url is refused (it would count a replica twice), --sweep is bounded, a /v1 base URL is refused,
--calibration-out alone is refused, a rate the client could not send is said, and a restart seen only in the
counters' birth times is called one. Against the mock server on 127.0.0.1; each test a second or two."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.loadgen.launcher import free_port
from specwise.loadgen.mock_server import MockBehaviour, MockServer, MockState, exposition
from specwise.loadgen.store import ResultStore


@pytest.mark.parametrize("metrics", [[], ["--metrics-url", "none"]], ids=["scraped", "no-metrics"])
def test_a_closed_port_fails_fast_and_keeps_nothing_to_skip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], metrics: list[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    argv = ["bench", "--url", url, "--model", "m", "--rates", "3", "--requests-per-level", "12", *metrics]
    code = main([*argv, "--db", str(tmp_path / "r.sqlite"), "--run-id", "closed"])
    err = capsys.readouterr().err
    # the first refusals say enough: the rest of the 4-s schedule is never sent (said, not timed)
    assert code == 2 and "stopped before sending the other" in err
    assert re.search(r"(all \d+ requests|the one request) failed \(", err)
    assert "connection" in err and "check --url" in err
    assert "ssl:default" not in err and len(err.strip().splitlines()) == 1
    resume = f"specwise bench --resume closed --db {tmp_path / 'r.sqlite'}"
    assert f"the run is kept in {tmp_path / 'r.sqlite'}: once it is up, {resume} sends them all" in err
    store = ResultStore(tmp_path / "r.sqlite")
    assert store.done_ids("closed") == set()  # never reached a server: --resume would send every request
    store.close()


def test_a_server_that_answers_errors_is_not_cut_short(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(MockBehaviour(fail_500_every=1)) as server:
        argv = ["bench", "--url", server.url, "--model", "m", "--rates", "50", "--requests-per-level", "5"]
        assert main([*argv, "--db", str(tmp_path / "r.sqlite")]) == 2
        assert server.state.requests == 5
    assert "all 5 requests failed (5 http 500)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--output", "{tmp}/same.jsonl", "--export-jsonl", "{tmp}/same.jsonl"], "is also the --export-jsonl file"),
        (["--output", "{tmp}/c.json", "--calibration-out", "{tmp}/c.json"], "--calibration-out names the file"),
        (
            ["--metrics-url", "http://127.0.0.1:9/metrics", "--metrics-url", "http://127.0.0.1:9/metrics"],
            "is given twice",
        ),
        (["--sweep", "101"], "from 1 to 100"),
        (["--url", "http://127.0.0.1:9/v1"], "without /v1 (requests go to URL/v1/completions): http://127.0.0.1:9"),
        (["--url", "http://127.0.0.1:9/v1/"], "without /v1"),
        (["--calibration-out", "{tmp}/cal.json"], "--calibration-out names the file --calibrate"),
    ],
)
def test_flags_that_would_mislead_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], fragment: str
) -> None:
    argv = ["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--rates", "50", "--requests-per-level", "1"]
    argv += [a.format(tmp=tmp_path) for a in extra] + ["--db", str(tmp_path / "r.sqlite")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "same.jsonl").exists()


def test_a_rate_the_client_could_not_send_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(MockBehaviour(ttft_s=0.02, chunk_interval_s=0.005)) as server:
        argv = ["bench", "--url", server.url, "--model", "m", "--rates", "50", "--requests-per-level", "8"]
        argv += ["--max-tokens", "8", "--db", str(tmp_path / "r.sqlite")]
        assert main([*argv, "--max-concurrency", "1"]) == 0
        capped = capsys.readouterr().out
        assert main([*argv, "--max-concurrency", "64"]) == 0
        free = capsys.readouterr().out
    assert "note: at 50 rps the requests went out at" in capped and "--max-concurrency 1" in capped
    assert "went out at" not in free  # sent on schedule: nothing to say


def test_a_restart_seen_only_in_birth_times_is_called_one(tmp_path: Path) -> None:
    """A server restarted between the scrapes whose counters already passed their old values: they did not go
    back; their new ``_created`` shows the restart."""
    from specwise.loadgen.runner import level_reading

    b = MockBehaviour()
    before, after = MockState(drafts=10, draft_tokens=40, accepted=20), MockState(drafts=50, draft_tokens=200)
    after.created = before.created + 100.0
    store = ResultStore(tmp_path / "r.sqlite")
    store.save_scrape("r", 0, "before", exposition(b, before))
    store.save_scrape("r", 0, "after", exposition(b, after))
    errors: list[str] = []
    reading = level_reading(store, "r", 0, ("http://127.0.0.1:9/metrics",), errors)
    store.close()
    assert reading.counter_reset
    assert len(errors) == 1 and "restarted" in errors[0] and "new _created" in errors[0]


def test_goodput_is_in_the_table_when_an_slo_is_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(MockBehaviour()) as server:
        argv = ["bench", "--url", server.url, "--model", "m", "--rates", "50", "--requests-per-level", "4"]
        assert main([*argv, "--db", str(tmp_path / "r.sqlite"), "--slo-ttft", "60", "--wide"]) == 0
        out = capsys.readouterr().out
        assert "good/s" in out and "met the --slo-ttft / --slo-tpot objectives" in out
        header = next(line for line in out.splitlines() if "TTFT ms" in line)
        assert header.index("tok/s") < header.index("good/s") < header.index("acc")
        assert main([*argv, "--db", str(tmp_path / "r2.sqlite"), "--wide"]) == 0
        assert "good/s" not in capsys.readouterr().out  # no SLO: no goodput to show


def test_a_resume_without_the_runs_key_variable_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review s59 B1: a run started with --api-key-env FAKEKEY, resumed where $FAKEKEY is unset, sent no key and
    stored every 401 as the run's result (exit 0); it is refused as a new run is, and --api-key-env '' opts out."""
    db = tmp_path / "r.sqlite"
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens: the run is stored, no request done
    monkeypatch.setenv("FAKEKEY", "sk-not-a-real-key")
    argv = ["bench", "--url", url, "--model", "m", "--rates", "3", "--requests-per-level", "4", "--db", str(db)]
    assert main([*argv, "--run-id", "keyed", "--api-key-env", "FAKEKEY"]) == 2
    capsys.readouterr()
    monkeypatch.delenv("FAKEKEY")
    assert main(["bench", "--resume", "keyed", "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert "run keyed sent its API key from $FAKEKEY, which is not set (or empty) now" in err and "\n" not in err
    # naming no key on purpose gets past the check (to the closed port's own error)
    assert main(["bench", "--resume", "keyed", "--db", str(db), "--api-key-env", ""]) == 2
    assert " failed (" in capsys.readouterr().err
    assert "sk-not-a-real-key" not in db.read_bytes().decode("latin-1")


def test_the_resume_command_asks_for_a_url_whose_credentials_were_not_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review s59: the printed command left --url out, and for a URL with credentials (never stored) it failed."""
    db = tmp_path / "r.sqlite"
    url = f"http://user:hunter2@127.0.0.1:{free_port()}"
    argv = ["bench", "--url", url, "--model", "m", "--rates", "3", "--requests-per-level", "4", "--db", str(db)]
    assert main([*argv, "--run-id", "cred"]) == 2
    err = capsys.readouterr().err
    assert f"specwise bench --resume cred --db {db} --url URL sends them all" in err and "hunter2" not in err


def test_a_complete_run_resumed_is_said_and_needs_no_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review s59: --resume of a finished run printed its table again without a word; it says the run is complete,
    sends nothing, and (nothing to send) does not ask for the key variable the run read its key from."""
    db = tmp_path / "r.sqlite"
    monkeypatch.setenv("FAKEKEY", "sk-test")
    with MockServer(MockBehaviour(ttft_s=0.001, chunk_interval_s=0.001)) as server:
        argv = ["bench", "--url", server.url, "--model", "m", "--rates", "20", "--requests-per-level", "3"]
        assert main([*argv, "--db", str(db), "--run-id", "fin", "--api-key-env", "FAKEKEY"]) == 0
        sent = server.state.requests
        capsys.readouterr()
        monkeypatch.delenv("FAKEKEY")
        assert main(["bench", "--resume", "fin", "--db", str(db), "--json"]) == 0
        assert server.state.requests == sent  # nothing sent again
    captured = capsys.readouterr()
    assert "run fin is complete: its stored results (no request sent)" in captured.err
    assert json.loads(captured.out)["run_id"] == "fin"


def test_a_results_database_or_a_gzip_given_as_a_bench_json_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review s59: advise --bench b.sqlite said "not a readable bench JSON ('utf-8' codec can't decode byte 0xf8)"."""
    import gzip

    from specwise.contracts.bench_formats import read_objects
    from specwise.errors import SpecwiseError

    db = tmp_path / "b.sqlite"
    ResultStore(db).close()
    with pytest.raises(SpecwiseError, match="a bench results database \\(--db\\), not a bench JSON") as exc:
        read_objects(db)
    assert f"specwise bench --resume RUN_ID --db {db} --json > run.json" in str(exc.value)
    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(b'{"schema": "specwise.bench/1"}'))
    with pytest.raises(SpecwiseError, match="a gzip file: decompress it first"):
        read_objects(packed)


def test_a_resume_without_the_default_key_it_sent_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review s59 (code review 1): the guard exempted $OPENAI_API_KEY, the variable most runs read their key from.
    The run records whether it sent a key (never the key): one that did is refused without it; one that did not
    (no auth) resumes as before."""
    db = tmp_path / "r.sqlite"
    url = f"http://127.0.0.1:{free_port()}"
    argv = ["bench", "--url", url, "--model", "m", "--rates", "3", "--requests-per-level", "4", "--db", str(db)]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default-key")
    assert main([*argv, "--run-id", "sent"]) == 2
    monkeypatch.delenv("OPENAI_API_KEY")
    assert main([*argv, "--run-id", "none"]) == 2
    capsys.readouterr()
    assert main(["bench", "--resume", "sent", "--db", str(db)]) == 2
    assert "run sent sent its API key from $OPENAI_API_KEY, which is not set (or empty) now" in capsys.readouterr().err
    assert main(["bench", "--resume", "none", "--db", str(db)]) == 2  # past the check, to the closed port
    assert " failed (" in capsys.readouterr().err
    assert "sk-default-key" not in db.read_bytes().decode("latin-1")


def test_a_complete_run_whose_url_had_credentials_resumes_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Code review s59: --resume of a complete run still asked for --url where its URL had credentials (never
    stored), though it sends nothing; the database hint (bench --resume RUN_ID --db FILE --json) then failed."""
    db = tmp_path / "r.sqlite"
    with MockServer(MockBehaviour(ttft_s=0.001, chunk_interval_s=0.001)) as server:
        url = server.url.replace("http://", "http://user:hunter2@")
        argv = ["bench", "--url", url, "--model", "m", "--rates", "20", "--requests-per-level", "3"]
        assert main([*argv, "--db", str(db), "--run-id", "cred", "--metrics-url", "none"]) == 0
        capsys.readouterr()
        assert main(["bench", "--resume", "cred", "--db", str(db), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["run_id"] == "cred" and "hunter2" not in captured.out + captured.err
