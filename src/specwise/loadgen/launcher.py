"""Start and stop an engine's OpenAI API server (vLLM by default; the engine adapter gives the command) for each
configuration of a launch file.

The server binds 127.0.0.1, runs in its own process group (stopped with SIGTERM, then SIGKILL), logs to a
file, and counts as ready when ``/health`` answers 200. A server that exits or does not become healthy in time is
reported with the last lines of its log. On Linux it also gets SIGTERM when specwise dies without stopping it
(``kill -9``, an OOM kill): ``prctl(PR_SET_PDEATHSIG)``, prctl(2).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from specwise.engines import get_engine
from specwise.engines.base import LOOPBACK, launch_program
from specwise.errors import SpecwiseError, as_written
from specwise.loadgen.plan import SECRET_FLAGS, server_flag
from specwise.netaddr import is_loopback
from specwise.scenario.fields import Section
from specwise.scenario.toml_loader import read_toml


@dataclass(frozen=True)
class ServerConfig:
    name: str
    speculative_config: dict[str, Any] | None = None
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaunchFile:
    model: str
    served_model_name: str
    python: str
    configs: tuple[ServerConfig, ...]
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 600.0
    engine: str = "vllm"
    source: str = ""  # the launch file it was read from, named in its errors


def _resolve(base: Path, value: str) -> str:
    """A relative path that exists next to the launch file, as that file; anything else as written."""
    p = Path(value)
    return str(base / p) if not p.is_absolute() and (base / p).exists() else value


def _bare(value: str) -> bool:
    """A program named without a directory (``python``, ``llama-server``): the process start looks it up on $PATH."""
    return not any(sep in value for sep in (os.sep, os.altsep) if sep)


def _program(base: Path, value: str, path_var: str | None = None) -> str:
    """The program to run (``python``; llama.cpp's ``llama-server``). A bare name is looked up on $PATH (the launch
    file's ``env`` PATH when it sets one), as a shell and the process start would -- ``advise`` writes ``python =
    "python"``; one not on PATH is still taken from the launch file's directory when it is there, as before. A
    relative path next to the launch file is made absolute (``./python`` in the launch file's directory would
    otherwise shorten to ``python`` and be looked up on $PATH by the process start); any other relative path is
    left to the working directory."""
    if _bare(value) and (found := shutil.which(value, path=path_var)) is not None:
        return str(Path(found).absolute())
    p = Path(value)
    return str((base / p).absolute()) if not p.is_absolute() and (base / p).exists() else value


def missing_program(program: str, engine: str, path_var: str | None = None, source: str = "") -> str | None:
    """Why ``program`` (a launch file's ``python``; ``source``: that file) cannot be started, in one line with a
    hint that fits where the user is (None: it is there). ``make vllm`` is offered only for this repository's
    ``.venv-vllm`` convention (the launch file's default and the shipped examples); anyone else is asked for their
    own engine's program."""
    what = launch_program(engine)[1]
    fix = f"set python in the launch file to {what} (a name on PATH, or a path)"
    where = f"{source}: " if source else ""
    if _bare(program):
        if shutil.which(program, path=path_var) is not None:
            return None
        return f"{where}python = {program!r}: not found on PATH; {fix}"
    if Path(program).exists():
        return None
    if ".venv-vllm" in Path(program).parts:
        return f"{where}python = {program!r}: no such file; run 'make vllm' first in a specwise checkout, or {fix}"
    return f"{where}python = {program!r}: no such file; {fix}"


def load_launch_file(path: Path) -> LaunchFile:
    """A launch file, validated: every mistake is one line naming the file and the field. A server that would
    listen beyond loopback (``--host``) or run a checkpoint's own code (``--trust-remote-code``) needs the file to
    say so (``allow_remote = true`` / ``trust_remote_code = true``)."""
    root = Section(read_toml(path, "launch"), "launch file", str(path))
    root.check_keys(_LAUNCH_KEYS)
    raw = root.array_of_tables("config")
    if not isinstance(raw, list) or not raw:
        raise root.fail("config", "[[config]] must list at least one configuration")
    out = []
    names: set[str] = set()
    for i, table in enumerate(raw, start=1):
        c = Section(table, f"[[config]] #{i}", str(path))
        c.check_keys({"name", "speculative_config", "extra_args"})
        name = c.string("name")
        if name in names:
            raise c.fail("name", f"duplicate {name!r}")
        names.add(name)
        spec = c.get("speculative_config", None)
        if spec is not None and not isinstance(spec, dict):
            raise c.fail("speculative_config", "must be a table")
        if spec and isinstance(spec.get("model"), str):
            spec = {**spec, "model": _resolve(path.parent, spec["model"])}
        out.append(ServerConfig(name, spec, _strings(c, "extra_args")))
    extra = _strings(root, "extra_args")
    env = _env(root)
    _check_opt_ins(root, [*extra, *(a for cfg in out for a in cfg.extra_args)])
    return LaunchFile(
        model=_resolve(path.parent, root.string("model")),
        served_model_name=root.string("served_model_name", "model"),
        python=_program(path.parent, root.string("python", ".venv-vllm/bin/python"), env.get("PATH")),
        configs=tuple(out),
        extra_args=extra,
        env=env,
        startup_timeout_s=root.number("startup_timeout_s", 600.0, low=1.0, high=86400.0),
        engine=get_engine(root.string("engine", "vllm")).name,
        source=str(path),
    )


_LAUNCH_KEYS = frozenset(
    {"model", "served_model_name", "python", "config", "extra_args", "env", "startup_timeout_s", "engine"}
    | {"allow_remote", "trust_remote_code"}
)


def _strings(s: Section, key: str) -> tuple[str, ...]:
    value = s.get(key, [])
    if not isinstance(value, list) or not all(isinstance(a, str | int | float) for a in value):
        raise s.fail(key, f"must be a list of strings, got {as_written(value)}")
    return tuple(str(a) for a in value)


def _env(s: Section) -> dict[str, str]:
    value = s.get("env", {})
    if not isinstance(value, dict) or not all(isinstance(v, str | int | float) for v in value.values()):
        raise s.fail("env", "must be a table of strings")
    return {str(k): str(v) for k, v in value.items()}


# A key on a command line is readable by every user of the machine (ps, /proc/PID/cmdline), is printed by vLLM in
# its start-up "non-default args" log line, and would be kept with the run's server arguments in the results
# database. vLLM reads the same key from the environment (VLLM_API_KEY, vllm/envs.py), which the server inherits.
_API_KEY_ON_COMMAND_LINE = (
    "--api-key would put the key on the server's command line, in its log and in the results database; "
    "export VLLM_API_KEY=... before specwise bench instead (the server inherits it; SGLang has no such variable: "
    "start it yourself and bench it with --url) and pass --api-key-env VLLM_API_KEY so the requests carry it"
)


def _check_opt_ins(root: Section, args: list[str]) -> None:
    for i, a in enumerate(args):
        flag, inline = server_flag(a)
        host = inline if flag == "--host" and inline is not None else None
        if flag == "--host" and inline is None and i + 1 < len(args):
            host = args[i + 1]
        if host is not None and not is_loopback(host) and root.get("allow_remote", False) is not True:
            raise root.fail(
                "extra_args", f"--host {host} would serve beyond loopback; set allow_remote = true to mean it"
            )
        if host is not None and is_loopback(host) and host not in LOOPBACK_NAMES:
            raise root.fail(
                "extra_args",
                f"--host {host}: specwise binds the server to {LOOPBACK} and reaches it there; drop --host",
            )
        if flag in SECRET_FLAGS:
            raise root.fail("extra_args", _API_KEY_ON_COMMAND_LINE)
        if flag == "--trust-remote-code" and root.get("trust_remote_code", False) is not True:
            raise root.fail(
                "extra_args",
                "--trust-remote-code runs the checkpoint's own code; set trust_remote_code = true to mean it",
            )


# the loopback names a launched server may be given by --host: it is polled at LOOPBACK, which these reach
LOOPBACK_NAMES = (LOOPBACK, "localhost")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EngineServer:
    """``with EngineServer(launch, config, log_path) as url: ...``"""

    def __init__(
        self,
        launch: LaunchFile,
        config: ServerConfig,
        log_path: Path,
        on_wait: Callable[[float, str], None] | None = None,
    ) -> None:
        """``on_wait(elapsed_s, last_log_line)`` is called about once a second while the server starts."""
        self.launch, self.config, self.log_path, self.on_wait = launch, config, log_path, on_wait
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.version: str | None = None  # as the server's log announces it

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return get_engine(self.launch.engine).launch_argv(
            self.launch.python,
            self.launch.model,
            self.launch.served_model_name,
            self.port,
            (*self.launch.extra_args, *self.config.extra_args),
            self.config.speculative_config,
        )

    def __enter__(self) -> str:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", **self.launch.env}
        missing = missing_program(self.launch.python, self.launch.engine, env.get("PATH"), self.launch.source)
        if missing is not None:
            raise SpecwiseError(missing)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            try:
                self.proc = spawn_server(self.command(), log, env)
            except OSError as exc:  # not executable, a broken interpreter line
                raise SpecwiseError(f"{self.launch.python}: cannot start it: {exc.strerror or exc}") from None
        try:
            return self._wait_healthy()
        except BaseException:  # a timeout, an early exit, Ctrl-C: never leave a server behind
            self.stop()
            raise

    def _wait_healthy(self) -> str:
        assert self.proc is not None
        start = time.monotonic()
        deadline = start + self.launch.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SpecwiseError(
                    f"vllm serve ({self.config.name}) exited with {self.proc.returncode}: {self._tail()}"
                )
            try:
                if httpx.get(self.url + "/health", timeout=2.0).status_code == 200:
                    self.version = engine_version_from_log(self.log_path)
                    return self.url
            except httpx.HTTPError:
                pass
            if self.on_wait is not None:
                self.on_wait(time.monotonic() - start, last_log_line(self.log_path))
            time.sleep(1.0)
        raise SpecwiseError(
            f"vllm serve ({self.config.name}) not healthy after {self.launch.startup_timeout_s:g} s: {self._tail()}"
        )

    def _tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        errors = [ln for ln in lines if "Error" in ln or "error" in ln]
        return " | ".join((errors or lines)[-2:])[:400] + f" (log: {self.log_path})"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def __exit__(self, *exc: object) -> None:
        self.stop()


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _term_when_parent_dies(parent_pid: int) -> Callable[[], None]:
    """The child's pre-exec step. prctl is looked up here, in the parent: between fork and exec the child only calls
    it (no dlopen there, which could wait on a lock another thread held at the fork). The signal follows the death
    of the forking *thread*, so servers are started from the thread that runs the whole bench (the main one)."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def arm() -> None:  # runs in the child between fork and exec
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


def spawn_server(argv: list[str], log: Any, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own process group, output to ``log``; on Linux it is sent SIGTERM if this process
    dies first, so a killed ``bench --launch`` leaves no server holding the port and the memory."""
    arm = _term_when_parent_dies(os.getpid()) if sys.platform == "linux" else None
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, preexec_fn=arm)


def last_log_line(path: Path, max_bytes: int = 8192) -> str:
    """The last non-blank line of a server's log (read from its end only), for start-up progress."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - max_bytes))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


_VERSION = re.compile(
    r"vLLM API server version ([0-9][0-9A-Za-z.+_-]*)|version ([0-9]+\.[0-9]+\.[0-9][0-9A-Za-z.+_-]*)"
)


def engine_version_from_log(path: Path) -> str | None:
    """The engine version the server printed at start-up (vLLM: ``vLLM API server version X``)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(256 * 1024).decode("utf-8", "replace")
    except OSError:
        return None
    m = _VERSION.search(head)
    return (m.group(1) or m.group(2)) if m else None


def hardware_description() -> str:
    """What a locally launched server runs on: the GPUs nvidia-smi lists, else the CPU model and core count."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        gpus = [g.strip() for g in out.stdout.splitlines() if g.strip()] if out.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired):
        gpus = []
    if gpus:
        return f"{len(gpus)} x {gpus[0]}"
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"CPU: {model}, {os.cpu_count()} cores"
