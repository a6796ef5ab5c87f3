"""No credential a user gives bench -- URL userinfo, the API key -- reaches anything it writes: stdout, stderr, the
results database (with its WAL), the JSONL export, the calibration or lock files (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main
from specwise.loadgen.mock_server import MockBehaviour, MockServer

URL_SECRET = "Cnry7f3kQurlpass"
KEY_SECRET = "sk-Cnry9zzKeyValue"


def test_credentials_never_reach_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECWISE_CANARY_KEY", KEY_SECRET)
    with MockServer(MockBehaviour(fail_429_every=3)) as server:
        # the key against the plain URL, the URL's userinfo (Basic auth) without a key: each reaches the server
        plain = ["--url", server.url, "--api-key-env", "SPECWISE_CANARY_KEY"]
        userinfo = ["--url", server.url.replace("http://", f"http://bench:{URL_SECRET}@"), "--api-key-env", "NONE_SET"]
        common = ["--model", "m", "--rates", "20,40", "--requests-per-level", "6", "--db", str(tmp_path / "r.sqlite")]
        export = ["--export-jsonl", str(tmp_path / "r.jsonl")]
        assert main(["bench", *plain, *common, *export, "--run-id", "key", "--json"]) == 0
        assert main(["bench", *userinfo, *common, "--run-id", "userinfo"]) == 0
        assert main(["bench", "--resume", "userinfo", "--db", str(tmp_path / "r.sqlite"), "--json"]) == 2
    out, err = capsys.readouterr()
    written = {p.name: p.read_bytes().decode("latin-1") for p in tmp_path.iterdir() if p.is_file()}
    assert {"r.sqlite", "r.jsonl"} <= set(written)
    for name, text in {"stdout": out, "stderr": err, **written}.items():
        assert URL_SECRET not in text, name
        assert KEY_SECRET not in text and "Cnry9zz" not in text, name
    assert "***@" in out  # the URL is shown, redacted


def test_url_credentials_and_an_api_key_together_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECWISE_CANARY_KEY", KEY_SECRET)
    with MockServer(MockBehaviour()) as server:
        url = server.url.replace("http://", f"http://bench:{URL_SECRET}@")
        argv = ["bench", "--url", url, "--model", "m", "--rates", "20", "--requests-per-level", "2",
                "--api-key-env", "SPECWISE_CANARY_KEY", "--db", str(tmp_path / "r.sqlite")]  # fmt: skip
        assert main(argv) == 2
        assert server.state.requests == 0
    err = capsys.readouterr().err
    assert "both would be the Authorization header" in err and URL_SECRET not in err and KEY_SECRET not in err
