"""One loopback test (``specwise.netaddr.is_loopback``) behind the monitor's binds, a launch file's ``--host`` and a
Ray address: every loopback form is loopback, a wildcard or another machine is not. The launcher used a list of three
spellings and asked for ``allow_remote`` to serve on 127.0.0.2."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.errors import SpecwiseError
from specwise.executors.ray_cluster import _loopback as ray_loopback
from specwise.loadgen.launcher import load_launch_file
from specwise.netaddr import is_loopback

LOOPBACK = [
    "127.0.0.1",
    "127.0.0.2",
    "127.255.255.254",
    "::1",
    "0:0:0:0:0:0:0:1",
    "[::1]",
    "localhost",
    "::ffff:127.0.0.1",
]
NOT_LOOPBACK = ["0.0.0.0", "::", "10.0.0.1", "192.168.1.5", "2001:db8::1", "example.com", "localhost.example.com", ""]


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_forms(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", NOT_LOOPBACK)
def test_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def _launch(tmp_path: Path, host: str, allow_remote: bool = False) -> Path:
    f = tmp_path / "l.toml"
    opt_in = "allow_remote = true\n" if allow_remote else ""
    f.write_text(f'model = "m"\n{opt_in}extra_args = ["--host", "{host}"]\n[[config]]\nname = "a"\n')
    return f


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_launcher_takes_the_loopback_it_reaches_without_the_opt_in(tmp_path: Path, host: str) -> None:
    assert load_launch_file(_launch(tmp_path, host)).extra_args == ("--host", host)


@pytest.mark.parametrize("host", ["127.0.0.2", "0:0:0:0:0:0:0:1", "::1"])
def test_another_loopback_is_refused_as_the_server_would_never_be_reached(tmp_path: Path, host: str) -> None:
    """Review G: 127.0.0.2 was accepted, but the launcher polls 127.0.0.1: bench waited out startup_timeout_s
    (600 s by default) for a server it could not reach. It is refused at once, with what to do."""
    with pytest.raises(SpecwiseError, match=r"specwise binds the server to 127\.0\.0\.1 and reaches it there"):
        load_launch_file(_launch(tmp_path, host))


@pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.1", "::"])
def test_the_launcher_still_refuses_beyond_loopback_without_the_opt_in(tmp_path: Path, host: str) -> None:
    with pytest.raises(SpecwiseError, match="set allow_remote = true"):
        load_launch_file(_launch(tmp_path, host))
    assert load_launch_file(_launch(tmp_path, host, allow_remote=True)).extra_args == ("--host", host)


def test_the_monitor_and_ray_use_the_same_test() -> None:
    from specwise.cli.monitor import _bind

    assert _bind("--serve", "127.0.0.2:9400", allow_remote=False) == ("127.0.0.2", 9400)
    with pytest.raises(SpecwiseError, match="needs --allow-remote"):
        _bind("--serve", "10.0.0.1:9400", allow_remote=False)
    assert ray_loopback("127.0.0.2:6379") and ray_loopback("ray://[::1]:10001") and ray_loopback(None)
    assert not ray_loopback("10.0.0.1:6379") and not ray_loopback("ray://0.0.0.0:10001")
