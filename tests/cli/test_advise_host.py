"""``advise --host``: the address the generated ``vllm serve`` command binds; loopback unless asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main
from tests.advise.test_bench_formats_evidence import SCENARIO


def _argv(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list[str], str]:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    code = main(["advise", "--scenario", str(scenario), "--json", "--processes", "1", *extra])
    out, err = capsys.readouterr()
    argv = json.loads(out)["vllm"]["serve_argv"] if code in (0, 1) else []
    return code, argv, err


@pytest.mark.parametrize(
    ("extra", "host"), [((), "127.0.0.1"), (("--host", "0.0.0.0"), "0.0.0.0"), (("--host", "[::]"), "::")]
)
def test_serve_command_binds_the_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], host: str
) -> None:
    code, argv, _ = _argv(tmp_path, capsys, *extra)
    assert code in (0, 1) and argv[:2] == ["vllm", "serve"]
    assert argv[argv.index("--host") + 1] == host


@pytest.mark.parametrize("bad", ["0.0.0.0; rm -rf /", "", "-h", "a b"])
def test_bad_host_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    code, _, err = _argv(tmp_path, capsys, "--host", bad)
    assert code == 2 and "--host" in err and "Traceback" not in err
