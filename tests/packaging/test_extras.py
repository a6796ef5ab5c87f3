"""The core install (issue 14): plan-memory, simulate, advise --json and monitor run without the optional
extras, and what needs one says which in one line (exit 2), never a traceback.

The extras are made absent the way a missing package is absent: a ``sys.modules[name] = None`` entry, which
makes ``import name`` raise ModuleNotFoundError and ``importlib.util.find_spec`` return None, in a fresh
interpreter per case. The slow tier (tests/packaging/test_wheel.py) does it for real from a core-only wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from specwise.cli import main
from tests.compat.test_pair import _model_with_tokenizer, _vocab
from tests.readme_examples import ROOT

OPTIONAL = ("matplotlib", "tokenizers", "torch", "transformers", "safetensors", "scipy")
_BLOCKED_RUN = (
    "import sys\n"
    "for name in {blocked!r}: sys.modules[name] = None\n"
    "from specwise.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "leaked = sorted(n for n in {blocked!r} if sys.modules.get(n) is not None)\n"
    "assert not leaked, leaked\n"
    "sys.exit(code)\n"
)


def _run_without_extras(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-c", _BLOCKED_RUN.format(blocked=OPTIONAL), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_importing_the_cli_loads_no_optional_module() -> None:
    code = f"import sys\nimport specwise.cli\nprint(sorted(n for n in {OPTIONAL!r} if n in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "argv",
    [
        ("plan-memory", "--target", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100-SXM-80GB", "--tp", "4"),
        ("advise", "--scenario", "examples/advise/summarize-low-qps.toml", "--json"),  # simulates too
    ],
    ids=lambda a: a[0],
)
def test_core_commands_run_without_the_extras(argv: tuple[str, ...]) -> None:
    proc = _run_without_extras(*argv)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_monitor_runs_without_the_extras() -> None:
    page = (ROOT / "tests" / "fixtures" / "vllm_metrics" / "ngram_after.txt").read_bytes()

    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        proc = _run_without_extras("monitor", "--url", url, "--once", "--interval", "0.2", "--json")
    finally:
        server.shutdown()
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # 1: an alert on a page whose counters stand still
    assert "Traceback" not in proc.stderr and "acceptance" in proc.stdout


@pytest.mark.parametrize(
    ("argv", "needs"),
    [
        (("advise", "--scenario", "examples/advise/summarize-low-qps.toml", "--report", "{tmp}/a.html"), "report"),
        (("simulate", "--scenario", "examples/llama70b-ngram.toml", "--plot", "{tmp}/plots"), "report"),
        (("profile", "--target", "m", "--method", "ngram", "--prompts", "builtin:chat"), "profile"),
    ],
    ids=lambda a: a[0] if isinstance(a, tuple) else a,
)
def test_what_needs_an_extra_says_which_in_one_line(
    argv: tuple[str, ...],
    needs: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in OPTIONAL:  # in this process: refused before anything imports them (or reads the scenario's work)
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.chdir(ROOT)
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"pip install 'specwise[{needs}]'" in lines[0], lines
    assert not list(tmp_path.iterdir())  # refused before any work, nothing written


def test_check_pair_on_tokenizer_files_names_the_tokenizers_extra(tmp_path: Path) -> None:
    t = _model_with_tokenizer(tmp_path, "t", _vocab())
    d = _model_with_tokenizer(tmp_path, "d", _vocab())
    proc = _run_without_extras("check-pair", "--target", str(t), "--draft", str(d))
    assert proc.returncode == 2 and "pip install 'specwise[tokenizers]'" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    # plan-memory compares the token tables without it (the sample encodings need the extra)
    plan = _run_without_extras("plan-memory", "--target", str(t), "--draft", str(d), "--gpu", "L4", "--json")
    assert plan.returncode == 0, plan.stderr
    assert '"samples_compared": 0' in plan.stdout and '"mismatched_ids": 0' in plan.stdout
