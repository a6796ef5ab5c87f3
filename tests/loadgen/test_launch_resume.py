"""An interrupted ``bench --launch`` run is finished by ``--launch FILE --resume ID``: each unfinished configuration's
server is started again (a fresh port; the stored one is dead), only the missing requests are sent, and a
configuration the run never reached is started as --launch would have. ``--resume`` of a launch run without
``--launch`` is refused with the command that works; Ctrl-C says that command (on stderr, with the real id).
The "engine" is a script serving specwise's mock server on the port bench gives it; loopback only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import specwise
from specwise.cli import main
from specwise.loadgen.store import ResultStore

SRC = str(Path(specwise.__file__).resolve().parents[1])

_MOCK_ENGINE = """#!{python}
import sys
sys.path.insert(0, {src!r})
from http.server import ThreadingHTTPServer
from specwise.loadgen import mock_server as m
port = int(sys.argv[sys.argv.index("--port") + 1])
class Server(m._MockHTTPServer):
    def __init__(self):
        ThreadingHTTPServer.__init__(self, ("127.0.0.1", port), m._Handler)
        self.behaviour = m.MockBehaviour(ttft_s=0.01, chunk_interval_s=0.005)
        self.state = m.MockState()
print("INFO vLLM API server version 0.0.0-mock", flush=True)
Server().serve_forever()
"""


def _mock_launch(tmp_path: Path) -> Path:
    exe = tmp_path / "python"
    exe.write_text(_MOCK_ENGINE.format(python=sys.executable, src=SRC))
    os.chmod(exe, 0o755)
    f = tmp_path / "l.toml"
    spec = '{method = "ngram", num_speculative_tokens = 4, prompt_lookup_max = 4}'
    f.write_text(
        f'model = "mock"\npython = "{exe}"\nstartup_timeout_s = 60\n'
        f'[[config]]\nname = "a"\n[[config]]\nname = "b"\nspeculative_config = {spec}\n'
    )
    return f


class _Open:
    def __init__(self, path: Path) -> None:
        self.store = ResultStore(path)

    def __enter__(self) -> ResultStore:
        return self.store

    def __exit__(self, *exc: object) -> None:
        self.store.close()


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_during_a(launch: Path, db: Path) -> tuple[int, str, str]:
    argv = [sys.executable, "-m", "specwise.cli", "bench", "--launch", str(launch), "--rates", "3"]
    argv += ["--requests-per-level", "12", "--max-tokens", "8", "--db", str(db), "--run-id", "lr", "--json"]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": SRC},
        # as from a terminal: SIGINT on its default, whatever this process inherited (an ignored SIGINT is
        # inherited by the child, which then never sees the Ctrl-C: CI's full run ignored it here)
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 40
    # until some, not all, of config a's requests are in: at 3 rps its 12 requests take ~4 s, a wide window even
    # on a loaded machine (at 8 rps a CI run polled past it and the run finished before the signal)
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
        if db.exists():
            with _Open(db) as st:
                if 2 <= len(st.done_ids("lr-a")) < 12:
                    break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out.decode(), err.decode()


def test_an_interrupted_launch_run_is_resumed_on_fresh_servers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    launch, db = _mock_launch(tmp_path), tmp_path / "r.sqlite"
    code, out, err = _interrupt_during_a(launch, db)
    assert code == 130 and out == ""  # --json's stdout stays clean: the advice is on stderr
    assert f"continue with: specwise bench --launch {launch} --resume lr --db {db}" in err
    with _Open(db) as st:
        dead_url = st.run_config("lr-a")["url"]
        assert 0 < len(st.done_ids("lr-a")) < 12 and not st.has_run("lr-b")

    # without --launch, neither the launch run nor one configuration's run is resumed (its server is gone)
    for rid in ("lr-a", "lr"):
        assert main(["bench", "--resume", rid, "--db", str(db)]) == 2
        err = capsys.readouterr().err
        assert f"specwise bench --launch FILE --resume lr --db {db}" in err and len(err.splitlines()) == 1
    # a new launch run cannot take the id either
    assert main(["bench", "--launch", str(launch), "--run-id", "lr", "--db", str(db)]) == 2
    assert "--launch FILE --resume lr" in capsys.readouterr().err

    code = main(["bench", "--launch", str(launch), "--resume", "lr", "--db", str(db), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["run_id"] == "lr"
    assert [c["run_id"] for c in doc["configs"]] == ["lr-a", "lr-b"]
    for c in doc["configs"]:
        assert [(lv["requests"], lv["failed"]) for lv in c["levels"]] == [(12, 0)]
    with _Open(db) as st:
        assert st.run_config("lr-a")["url"] != dead_url  # a fresh server, never the stored port
        records = st.records("lr-a")
        assert len({r.request_id for r in records}) == 12 == len(records) and all(r.ok for r in records)
        assert len({r.session for r in records}) == 2  # the interrupted process's records are kept
        b = st.run_config("lr-b")
        assert b["launch"]["speculative_config"]["method"] == "ngram" and b["rates"] == [3.0]

    # finished: resuming again starts no server and sends nothing
    assert main(["bench", "--launch", str(launch), "--resume", "lr", "--db", str(db), "--json"]) == 0
    assert "starting vllm serve" not in capsys.readouterr().err


def test_resume_of_an_unknown_launch_run_never_starts_a_new_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    launch, db = _mock_launch(tmp_path), tmp_path / "r.sqlite"
    assert main(["bench", "--launch", str(launch), "--resume", "nope", "--db", str(db)]) == 2
    assert "no --launch run 'nope' to resume" in capsys.readouterr().err
    with _Open(db) as st:
        assert st.launch_bases() == []


def test_ctrl_c_and_internal_errors_name_the_run_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A random run id appears nowhere else before the table: the advice must carry it."""
    import specwise.cli.bench as bench_cli

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    def crashed(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    db = tmp_path / "r.sqlite"
    argv = ["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--db", str(db), "--json"]
    for fake, code, what in ((interrupted, 130, "interrupted"), (crashed, 3, "stopped by an internal error")):
        monkeypatch.setattr(bench_cli, "execute", fake)
        assert main(argv) == code
        out, err = capsys.readouterr()
        assert out == ""
        with _Open(db) as st:
            (rid,) = [r for r in st.db.execute("SELECT run_id FROM runs ORDER BY created_s DESC LIMIT 1")]
        assert f"continue with: specwise bench --resume {rid[0]} --db {db}" in err and what in err
        if code == 130:  # the one line: no bare "interrupted" after it (review s59)
            assert err.strip().splitlines()[-1].startswith("interrupted: finished requests are saved")


def test_which_launch_run_a_run_id_belongs_to(tmp_path: Path) -> None:
    from specwise.loadgen.relaunch import launch_base_of

    store = ResultStore(tmp_path / "r.sqlite")
    store.create_run("abc", 0.0, {"url": "http://127.0.0.1:9"})  # a --url run
    store.create_run("abc-x-base", 1.0, {"launch": {"name": "base"}})  # config "base" of launch run "abc-x"
    assert launch_base_of(store, "abc") is None  # not mistaken for the launch run "abc"
    assert launch_base_of(store, "abc-x") == "abc-x" and launch_base_of(store, "abc-x-base") == "abc-x"
    assert launch_base_of(store, "nope") is None
    store.close()


def test_ctrl_c_says_which_files_were_not_written_and_the_command_that_writes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 17, finding 8: an interrupted run writes neither --output nor --export-jsonl (a half level's row would
    read as a finished one: vLLM's fields cannot say otherwise), and said nothing of them; now stderr names them and
    the command that finishes the run and writes them, which works as given."""
    import shlex

    import specwise.cli.bench as bench_cli
    from specwise.loadgen.mock_server import MockBehaviour, MockServer

    def interrupt_after_two(self: object, label: str, level: int, done: int, total: int, acc: float | None) -> None:
        if done >= 2:  # as Ctrl-C lands: on the event loop, some records committed
            raise KeyboardInterrupt

    db, out_file, jsonl = tmp_path / "r.sqlite", tmp_path / "o.csv", tmp_path / "r.jsonl"
    with MockServer(MockBehaviour(ttft_s=0.01, chunk_interval_s=0.005)) as server:
        argv = ["bench", "--url", server.url, "--model", "mock", "--rates", "20", "--requests-per-level", "8"]
        argv += ["--max-tokens", "8", "--db", str(db), "--run-id", "ri"]
        with monkeypatch.context() as m:
            m.setattr(bench_cli._Progress, "tick", interrupt_after_two)
            assert main([*argv, "--output", str(out_file), "--export-jsonl", str(jsonl)]) == 130
        err = capsys.readouterr().err
        assert not out_file.exists() and not jsonl.exists()
        assert f"not written: {out_file}, {jsonl}" in err
        command = err.split("continue with: ", 1)[1].splitlines()[0]
        assert command == f"specwise bench --resume ri --db {db} --output {out_file} --export-jsonl {jsonl}"
        with _Open(db) as st:
            assert 2 <= len(st.done_ids("ri")) < 8
        assert main(shlex.split(command)[1:]) == 0
    capsys.readouterr()
    assert len(jsonl.read_text().splitlines()) == 8 and len(out_file.read_text().splitlines()) == 2
