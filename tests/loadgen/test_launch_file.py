from __future__ import annotations

from pathlib import Path

import pytest

from specwise.errors import SpecwiseError
from specwise.loadgen.launcher import EngineServer, ServerConfig, load_launch_file

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "launch" / "smollm2.toml"


def test_shipped_launch_file_and_command(tmp_path: Path) -> None:
    launch = load_launch_file(EXAMPLE)
    assert [c.name for c in launch.configs] == ["baseline", "ngram-k4", "draft-k4"]
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
        ('model = "m"\nstartup_timeout_s = inf\n[[config]]\nname = "a"\n', "finite"),
        ('model = "m"\nport = 3\n[[config]]\nname = "a"\n', r"unknown key\(s\): port"),
    ],
)
def test_bad_launch_files(tmp_path: Path, text: str, fragment: str) -> None:
    f = tmp_path / "l.toml"
    f.write_text(text)
    with pytest.raises(SpecwiseError, match=fragment):
        load_launch_file(f)


def test_missing_vllm_environment_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "l.toml"
    f.write_text('model = "m"\npython = "/nonexistent/python"\n[[config]]\nname = "a"\n')
    launch = load_launch_file(f)
    with (
        pytest.raises(SpecwiseError, match="run 'make vllm' first"),
        EngineServer(launch, ServerConfig("a"), tmp_path / "log"),
    ):
        pass


def test_opt_ins_allow_a_remote_bind_and_remote_code(tmp_path: Path) -> None:
    f = tmp_path / "l.toml"
    f.write_text(
        'model = "m"\nallow_remote = true\ntrust_remote_code = true\n'
        'extra_args = ["--host", "0.0.0.0", "--trust-remote-code"]\n[[config]]\nname = "a"\n'
    )
    assert "--trust-remote-code" in load_launch_file(f).extra_args
