"""Start the real Prometheus (Debian's ``prometheus`` package) on loopback for a test: scraping the given
targets every ``scrape_s``, optionally loading rule files, evaluated every ``scrape_s`` too."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from specwise.loadgen.launcher import free_port
from tests.missing import missing_dependency


def prometheus_exe() -> str:
    exe = shutil.which("prometheus")
    if exe is None:
        missing_dependency("prometheus is not installed (scripts/install_system_deps.sh)")
    return exe


def _config(targets: Sequence[str], rule_files: Sequence[Path], scrape_s: float) -> str:
    lines = [
        "global:",
        f"  scrape_interval: {scrape_s:g}s",
        f"  evaluation_interval: {scrape_s:g}s",
    ]
    if rule_files:
        lines += ["rule_files:", *(f"  - '{p}'" for p in rule_files)]
    lines += [
        "scrape_configs:",
        "  - job_name: vllm",
        "    static_configs:",
        "      - targets: [" + ", ".join(f"'{t}'" for t in targets) + "]",
    ]
    return "\n".join(lines) + "\n"


def _ready(url: str, targets: Sequence[str]) -> bool:
    try:
        if httpx.get(url + "/-/ready", timeout=2).status_code != 200:
            return False
        up = httpx.get(url + "/api/v1/query", params={"query": "up == 1"}, timeout=2).json()
        return len(up["data"]["result"]) >= len(targets)
    except (httpx.HTTPError, ValueError, KeyError):
        return False


@contextmanager
def running_prometheus(
    workdir: Path, targets: Sequence[str], rule_files: Sequence[Path] = (), scrape_s: float = 1.0
) -> Iterator[str]:
    """Prometheus scraping ``targets`` (HOST:PORT) until the block ends; yields its base URL once every target
    has been scraped up."""
    exe = prometheus_exe()
    cfg = workdir / "prometheus.yml"
    cfg.write_text(_config(targets, rule_files, scrape_s))
    port = free_port()
    log_path = workdir / "prometheus.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [
                exe,
                f"--config.file={cfg}",
                f"--storage.tsdb.path={workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while not _ready(url, targets):
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("prometheus did not become ready: " + log_path.read_text()[-2000:])
                time.sleep(0.3)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
