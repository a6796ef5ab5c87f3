from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.errors import SpecwiseError
from specwise.loadgen.launcher import EngineServer, ServerConfig, load_launch_file, missing_program
from specwise.loadgen.plan import LaunchInfo

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "launch" / "smollm2.toml"


def test_shipped_launch_file_and_command(tmp_path: Path) -> None:
    launch = load_launch_file(EXAMPLE)
    assert [c.name for c in launch.configs] == ["baseline", "ngram-k4", "truncated-draft-k4"]
    server = EngineServer(launch, launch.configs[1], tmp_path / "log")
    cmd = server.command()
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"  # loopback only
    assert '"method": "ngram"' in cmd[cmd.index("--speculative-config") + 1]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('served_model_name = "m"\n[[config]]\nname = "a"\n', "launch file.model: required field is missing"),
        ('model = "m"\nconfig = []\n', "at least one configuration"),
        ('model = "m"\n[[config]]\nname = "a"\n[[config]]\nname = "a"\n', "duplicate 'a'"),
        ('model = "m"\n[[config]]\nname = "a"\nspeculative_config = 3\n', "must be a table"),
        ("model = [", "invalid TOML"),
        ('model = "m"\nextra_args = ["--host", "0.0.0.0"]\n[[config]]\nname = "a"\n', "set allow_remote = true"),
        ('model = "m"\n[[config]]\nname = "a"\nextra_args = ["--trust-remote-code"]\n', "trust_remote_code = true"),
        ('model = "m"\nextra_args = ["--api-key", "sk-x"]\n[[config]]\nname = "a"\n', "export VLLM_API_KEY"),
        ('model = "m"\n[[config]]\nname = "a"\nextra_args = ["--api-key=sk-x"]\n', "export VLLM_API_KEY"),
        ('model = "m"\nextra_args = ["--api_key", "sk-x"]\n[[config]]\nname = "a"\n', "export VLLM_API_KEY"),
        ('model = "m"\nextra_args = ["--trust_remote_code"]\n[[config]]\nname = "a"\n', "trust_remote_code = true"),
        ('model = "m"\nextra_args = ["--host=0.0.0.0"]\n[[config]]\nname = "a"\n', "set allow_remote = true"),
        ('model = "m"\nstartup_timeout_s = inf\n[[config]]\nname = "a"\n', "finite"),
        ('model = "m"\nport = 3\n[[config]]\nname = "a"\n', r"unknown key\(s\): port"),
    ],
)
def test_bad_launch_files(tmp_path: Path, text: str, fragment: str) -> None:
    f = tmp_path / "l.toml"
    f.write_text(text)
    with pytest.raises(SpecwiseError, match=fragment):
        load_launch_file(f)


@pytest.mark.parametrize(
    ("python", "says"),
    [
        (None, "python = '.venv-vllm/bin/python': no such file; run 'make vllm' first in a specwise checkout, or set"),
        ("../../.venv-vllm/bin/python", "python = '../../.venv-vllm/bin/python': no such file; run 'make vllm' first"),
        ("/nonexistent/python", "python = '/nonexistent/python': no such file; set python in the launch file to the"),
        ("no-such-python-3.99", "python = 'no-such-python-3.99': not found on PATH; set python in the launch file to "
         r"the Python that has vLLM installed \(a name on PATH, or a path\)$"),
    ],
)  # fmt: skip
def test_missing_vllm_environment_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, python: str | None, says: str
) -> None:
    """``make vllm`` is offered only where this repository's ``.venv-vllm`` is meant (the default and the shipped
    examples): anyone else is asked for their own vLLM Python (review: every missing program said "no vLLM Python
    here; run 'make vllm' first")."""
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "l.toml"
    f.write_text('model = "m"\n' + (f'python = "{python}"\n' if python else "") + '[[config]]\nname = "a"\n')
    launch = load_launch_file(f)
    with pytest.raises(SpecwiseError, match=f"^{f}: {says}"), EngineServer(launch, ServerConfig("a"), tmp_path / "l"):
        pass


def _on_path(directory: Path, name: str, delay: float = 0) -> Path:
    import os
    import sys

    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / name
    exe.write_text(_FAKE_ENGINE.format(python=sys.executable, delay=delay))
    os.chmod(exe, 0o755)
    return exe


def test_a_python_named_as_advise_writes_it_is_found_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python = "python"`` (advise's launch file): the Python on $PATH runs, as in a shell. Before, the launcher
    looked for a file named ``python`` in the working directory and refused with "no vLLM Python here"."""
    exe = _on_path(tmp_path / "venv" / "bin", "python")
    monkeypatch.setenv("PATH", f"{exe.parent}:/usr/bin:/bin")
    (tmp_path / "run").mkdir()
    monkeypatch.chdir(tmp_path / "run")  # no file named python here, nor next to the launch file
    f = tmp_path / "l.toml"
    f.write_text('model = "m"\npython = "python"\n[[config]]\nname = "a"\n')
    launch = load_launch_file(f)
    assert launch.python == str(exe)
    with EngineServer(launch, launch.configs[0], tmp_path / "log") as url:
        assert url.startswith("http://127.0.0.1:")


def test_a_bare_name_is_looked_up_on_the_launch_files_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server runs with the launch file's ``env``: a PATH there is where its program is looked up (and where
    the process start would look); llama.cpp's ``llama-server`` is named the same way, and worded as itself."""
    exe = _on_path(tmp_path / "opt", "llama-server")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    f = tmp_path / "l.toml"
    f.write_text(
        f'engine = "llama.cpp"\nmodel = "m"\npython = "llama-server"\nenv = {{ PATH = "{exe.parent}" }}\n'
        '[[config]]\nname = "a"\n'
    )
    launch = load_launch_file(f)
    assert launch.python == str(exe) and missing_program(launch.python, "llama.cpp", str(exe.parent)) is None
    said = missing_program("llama-server", "llama.cpp", "/usr/bin:/bin")
    assert said == (
        "python = 'llama-server': not found on PATH; set python in the launch file to the llama-server binary "
        "(a name on PATH, or a path)"
    )


def test_a_bare_name_not_on_path_is_still_taken_from_the_launch_files_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As before: ``python = "fakepy"`` beside the launch file, and nothing of that name on $PATH."""
    exe = _on_path(tmp_path, "fakepy")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    (tmp_path / "l.toml").write_text('model = "m"\npython = "fakepy"\n[[config]]\nname = "a"\n')
    assert load_launch_file(tmp_path / "l.toml").python == str(exe)


def test_opt_ins_allow_a_remote_bind_and_remote_code(tmp_path: Path) -> None:
    f = tmp_path / "l.toml"
    f.write_text(
        'model = "m"\nallow_remote = true\ntrust_remote_code = true\n'
        'extra_args = ["--host", "0.0.0.0", "--trust-remote-code"]\n[[config]]\nname = "a"\n'
    )
    assert "--trust-remote-code" in load_launch_file(f).extra_args


def test_a_key_on_the_command_line_is_refused_without_echoing_it(tmp_path: Path) -> None:
    f = tmp_path / "l.toml"
    f.write_text('model = "m"\nextra_args = ["--port", "1", "--api-key", "sk-SECRET123"]\n[[config]]\nname = "a"\n')
    with pytest.raises(SpecwiseError) as err:
        load_launch_file(f)
    assert "sk-SECRET123" not in str(err.value)
    assert str(err.value).startswith(f"{f}: launch file.extra_args: --api-key would put the key on")


def test_stored_server_arguments_never_hold_a_key() -> None:
    """Server arguments built outside a launch file (the Python API) are masked where a run keeps them."""
    argv = ("--api-key", "sk-SECRET123", "--api-key=sk-OTHER", "--api_key", "sk-THIRD", "--port", "8000")
    info = LaunchInfo("a", None, argv)
    stored = json.dumps(info.to_json())
    assert not any(k in stored for k in ("sk-SECRET123", "sk-OTHER", "sk-THIRD"))
    assert info.to_json()["server_args"] == ["--api-key", "***", "--api-key=***", "--api_key", "***", "--port", "8000"]


_FAKE_ENGINE = """#!{python}
import sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
port = int(sys.argv[sys.argv.index("--port") + 1])
print("INFO loading weights", flush=True)
time.sleep({delay})
print("INFO weights loaded; warming up", flush=True)
time.sleep(0.5)
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def _fake_launch(tmp_path: Path, delay_s: float) -> Path:
    import os
    import sys

    exe = tmp_path / "python"
    exe.write_text(_FAKE_ENGINE.format(python=sys.executable, delay=delay_s))
    os.chmod(exe, 0o755)
    f = tmp_path / "l.toml"
    f.write_text(f'model = "m"\npython = "{exe}"\n[[config]]\nname = "a"\n')
    return f


def test_startup_reports_elapsed_time_and_the_log_tail(tmp_path: Path) -> None:
    launch = load_launch_file(_fake_launch(tmp_path, 1.5))
    seen: list[tuple[float, str]] = []
    with EngineServer(launch, ServerConfig("a"), tmp_path / "log", lambda t, line: seen.append((t, line))) as url:
        assert url.startswith("http://127.0.0.1:")
    assert seen and seen[0][0] < 2.0  # the first report comes within a second or two
    assert [t for t, _ in seen] == sorted(t for t, _ in seen)
    assert {"INFO loading weights", "INFO weights loaded; warming up"} & {line for _, line in seen}


def test_interrupted_startup_leaves_no_server_behind(tmp_path: Path) -> None:
    launch = load_launch_file(_fake_launch(tmp_path, 60))

    def interrupt(elapsed_s: float, line: str) -> None:
        if elapsed_s > 1.0:
            raise KeyboardInterrupt

    server = EngineServer(launch, ServerConfig("a"), tmp_path / "log", interrupt)
    with pytest.raises(KeyboardInterrupt), server:
        pass
    assert server.proc is not None and server.proc.poll() is not None  # stopped, not orphaned


def test_bench_launch_shows_startup_outside_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specwise.cli import main

    argv = ["bench", "--launch", str(_fake_launch(tmp_path, 0.5)), "--rates", "5", "--requests-per-level", "1"]
    jsonl = tmp_path / "records.jsonl"
    code = main([*argv, "--db", str(tmp_path / "r.sqlite"), "--metrics-url", "none", "--export-jsonl", str(jsonl)])
    out, err = capsys.readouterr()
    assert code == 2  # the fake engine serves only /health: every request fails, said after the table
    assert err.splitlines()[0].startswith("starting vllm serve (a): 0 s")
    assert f"every record written to {jsonl} (JSON lines)" in out  # review 17-A, 8: it was written unsaid
    # --export-jsonl with --launch writes every configuration's records (it wrote nothing before)
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(records) == 1 and records[0]["run_id"].endswith("-a") and records[0]["error"]


def test_a_losing_draft_is_explained() -> None:
    from specwise.contracts.bench import BenchDoc
    from specwise.report.bench import losing_draft_notes
    from tests.hardening.cases import bench_doc

    doc = bench_doc()
    assert losing_draft_notes(BenchDoc.from_json(doc)) == []  # 30% acceptance and no slowdown: nothing to say
    bad = doc["configs"][1]["levels"][0]
    bad["spec_decode"]["spec_decode_accepted_tokens"] = 3.0
    bad["spec_decode"]["spec_decode_per_position_acceptance_rates"] = [0.03, 0.0, 0.0]
    bad["tpot_s"] = {"mean": 0.07, "p50": 0.07, "p90": 0.08, "p99": 0.09}
    notes = losing_draft_notes(BenchDoc.from_json(doc))
    assert len(notes) == 1 and notes[0].startswith("note: ngram accepts under 2% of drafted tokens, AL 1.03")
    assert "x0.29" in notes[0]


def test_a_configuration_whose_requests_all_timed_out_says_why_and_still_gets_its_acceptance_note() -> None:
    """A CI run on a loaded machine: the poor draft's 8 requests all timed out, so its row had no TPOT; the table
    showed `fail 8` and nothing said why, and the note on its acceptance (measured by the counters) was dropped."""
    from rich.console import Console

    from specwise.contracts.bench import BenchDoc
    from specwise.report.bench import losing_draft_notes, render_comparison
    from tests.hardening.cases import bench_doc

    doc = bench_doc()
    bad = doc["configs"][1]["levels"][0]
    bad["spec_decode"]["spec_decode_accepted_tokens"] = 3.0
    bad["spec_decode"]["spec_decode_per_position_acceptance_rates"] = [0.03, 0.0, 0.0]
    bad["failed"] = bad["requests"]
    bad["errors"] = {"timeout": bad["requests"]}
    for key in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        bad[key] = {"mean": None, "p50": None, "p90": None, "p99": None}
    parsed = BenchDoc.from_json(doc)
    notes = losing_draft_notes(parsed)
    assert len(notes) == 1 and notes[0].startswith("note: ngram accepts under 2% of drafted tokens")
    assert "no request finished" in notes[0]
    out = Console(record=True, width=200)
    render_comparison(parsed, out=out)
    text = out.export_text()
    n = bad["requests"]
    assert f"ngram at {bad['target_rate_per_s']:g} rps: {n} of {n} requests failed ({n} timeout)" in text
    assert "--request-timeout" in text


def test_no_acceptance_note_from_a_handful_of_drafted_tokens() -> None:
    """Requests that all timed out after a second drafted 4 n-gram tokens and accepted none: 'accepts under 2%'
    from 4 tokens would blame a draft that accepts 73% on this server (seen on a loaded machine)."""
    from specwise.contracts.bench import BenchDoc
    from specwise.report.bench import losing_draft_notes
    from tests.hardening.cases import bench_doc

    doc = bench_doc()
    bad = doc["configs"][1]["levels"][0]
    sd = bad["spec_decode"]
    sd["spec_decode_num_drafts"], sd["spec_decode_draft_tokens"] = 1.0, 3.0
    sd["spec_decode_accepted_tokens"] = 0.0
    sd["spec_decode_per_position_acceptance_rates"] = [0.0, 0.0, 0.0]
    bad["tpot_s"] = {"mean": 0.07, "p50": 0.07, "p90": 0.08, "p99": 0.09}
    assert losing_draft_notes(BenchDoc.from_json(doc)) == []
    assert losing_draft_notes(BenchDoc.from_json(doc), min_draft_tokens=3.0) != []


def test_a_relative_python_next_to_the_launch_file_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python = "./fakepy"`` from the launch file's directory: Path shortened it to ``fakepy``, which the process
    start then looked up on $PATH (an internal error)."""
    import os
    import sys

    exe = tmp_path / "fakepy"
    exe.write_text(_FAKE_ENGINE.format(python=sys.executable, delay=0))
    os.chmod(exe, 0o755)
    (tmp_path / "l.toml").write_text('model = "m"\npython = "./fakepy"\n[[config]]\nname = "a"\n')
    monkeypatch.chdir(tmp_path)
    launch = load_launch_file(Path("l.toml"))
    assert Path(launch.python).is_absolute() and Path(launch.python).samefile(exe)
    with EngineServer(launch, launch.configs[0], tmp_path / "log") as url:
        assert url.startswith("http://127.0.0.1:")


def test_a_python_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    exe = tmp_path / "python"
    exe.write_text("not a program")  # not executable
    f = tmp_path / "l.toml"
    f.write_text(f'model = "m"\npython = "{exe}"\n[[config]]\nname = "a"\n')
    launch = load_launch_file(f)
    with pytest.raises(SpecwiseError, match="cannot start it"), EngineServer(launch, launch.configs[0], tmp_path / "l"):
        pass


def test_a_baseline_that_speculates_is_flagged() -> None:
    from specwise.contracts.bench import BenchDoc
    from specwise.report.bench import speculating_baseline_notes
    from tests.hardening.cases import bench_doc

    doc = bench_doc()
    assert speculating_baseline_notes(BenchDoc.from_json(doc)) == []
    doc["configs"][0]["levels"][0]["spec_decode"] = doc["configs"][1]["levels"][0]["spec_decode"]
    (note,) = speculating_baseline_notes(BenchDoc.from_json(doc))
    assert note.startswith("warning: baseline has no speculative_config") and "100 spec-decode drafts" in note
