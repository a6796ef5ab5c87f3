"""Start and stop an engine's OpenAI API server (vLLM by default; the engine adapter gives the command) for each
configuration of a launch file.

The server binds 127.0.0.1, runs in its own process group (stopped with SIGTERM, then SIGKILL), logs to a
file, and counts as ready when ``/health`` answers 200. A server that exits or does not become healthy in
time is reported with the last lines of its log.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import signal
import socket
import subprocess
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from specwise.engines import get_engine
from specwise.errors import SpecwiseError


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


def _resolve(base: Path, value: str) -> str:
    p = Path(value)
    return str(base / p) if not p.is_absolute() and (base / p).exists() else value


def load_launch_file(path: Path) -> LaunchFile:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecwiseError(f"{path}: no such launch file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SpecwiseError(f"{path}: cannot read launch file: {exc}") from None
    where = str(path)
    for key in ("model", "config"):
        if key not in data:
            raise SpecwiseError(f"{where}: required field {key!r} is missing")
    configs = data["config"]
    if not isinstance(configs, list) or not configs:
        raise SpecwiseError(f"{where}: [[config]] must list at least one configuration")
    out = []
    names = set()
    for i, c in enumerate(configs, start=1):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise SpecwiseError(f"{where}: [[config]] #{i}.name: required string")
        if c["name"] in names:
            raise SpecwiseError(f"{where}: [[config]] #{i}.name: duplicate {c['name']!r}")
        names.add(c["name"])
        spec = c.get("speculative_config")
        if spec is not None and not isinstance(spec, dict):
            raise SpecwiseError(f"{where}: [[config]] {c['name']!r}.speculative_config: must be a table")
        if spec and isinstance(spec.get("model"), str):
            spec = {**spec, "model": _resolve(path.parent, spec["model"])}
        out.append(ServerConfig(c["name"], spec, tuple(str(a) for a in c.get("extra_args", []))))
    python = _resolve(path.parent, str(data.get("python", ".venv-vllm/bin/python")))
    return LaunchFile(
        model=_resolve(path.parent, str(data["model"])),
        served_model_name=str(data.get("served_model_name", "model")),
        python=python,
        configs=tuple(out),
        extra_args=tuple(str(a) for a in data.get("extra_args", [])),
        env={str(k): str(v) for k, v in data.get("env", {}).items()},
        startup_timeout_s=float(data.get("startup_timeout_s", 600.0)),
        engine=get_engine(str(data.get("engine", "vllm"))).name,
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EngineServer:
    """``with EngineServer(launch, config, log_path) as url: ...``"""

    def __init__(self, launch: LaunchFile, config: ServerConfig, log_path: Path) -> None:
        self.launch, self.config, self.log_path = launch, config, log_path
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
        if not Path(self.launch.python).exists():
            raise SpecwiseError(f"{self.launch.python}: no vLLM Python here; run 'make vllm' first")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", **self.launch.env}
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        deadline = time.monotonic() + self.launch.startup_timeout_s
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
            time.sleep(1.0)
        self.stop()
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
