"""``-v`` says something (a first-hour review: it logged nothing, and ``plan-memory ... -v`` was refused): the
command, the predictor and band each scenario is priced with, each sweep's size and time, the exit; given before or
after the command; nothing without it."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from specwise.cli import build_parser, main


def _stderr(*argv: str) -> str:
    cmd = [sys.executable, "-m", "specwise.cli", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False).stderr


def test_verbose_before_or_after_the_command() -> None:
    before = _stderr("-v", "plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100")
    after = _stderr("plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "-v")
    for err in (before, after):
        assert "DEBUG specwise: specwise plan-memory (specwise " in err
        assert "DEBUG specwise: specwise plan-memory: exit 0 after " in err
    assert _stderr("plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100") == ""


def test_verbose_says_the_predictor_and_the_sweep(caplog: pytest.LogCaptureFixture) -> None:
    from specwise.perfmodel.profiles import published_fit

    with caplog.at_level(logging.DEBUG, logger="specwise"):
        assert main(["advise", "example:advise/int4-target", "--processes", "1", "-v", "--json"]) == 0
    said = [r.getMessage() for r in caplog.records]
    assert any(
        m.startswith("meta-llama/Llama-3.1-70B-Instruct on 1 x H100-SXM-80GB, draft_model with ")
        and f": predictor published-fit (vllm-v1), band +-{published_fit().band('vllm', 'datacenter'):.0%} (" in m
        for m in said
    ), said
    assert any("simulations (" in m and "requests each) in " in m for m in said), said


def test_every_subcommand_takes_it() -> None:
    parser = build_parser()
    for argv in (["gpus", "-v"], ["export", "grafana", "--out", "x", "-v"], ["validate", "--verbose"]):
        assert parser.parse_args(argv).verbose is True
    assert parser.parse_args(["gpus"]).verbose is False


def test_verbose_never_prints_a_urls_credentials(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """httpx logs each request's URL as given ("HTTP Request: GET http://user:pass@host/..."); under -v a
    Prometheus URL's user:password@ (or a ?token=) reached stderr while every other line masked it (review of the -v
    change). A command whose HTTP client logs such a line: what -v shows of it is masked."""
    import specwise.cli.gpus as gpus_cli

    url = "http://user:s3cret@127.0.0.1:9/api/v1/query?token=t0ken&query=up"

    def run(args: object) -> int:
        logging.getLogger("httpx").info('HTTP Request: GET %s "HTTP/1.1 200 OK"', url)
        return 0

    monkeypatch.setattr(gpus_cli, "run", run)
    with caplog.at_level(logging.DEBUG):
        assert main(["gpus", "-v"]) == 0
        logging.getLogger("httpx").info("after main: %s", url)  # the filter is main's, not left behind
    said = [r.getMessage() for r in caplog.records]
    masked = [m for m in said if "***@127.0.0.1:9" in m and "token=***" in m]
    assert len(masked) == 1 and not [m for m in said[:-1] if "s3cret" in m or "t0ken" in m], said
    assert "s3cret" in said[-1]


def test_main_puts_the_levels_back() -> None:
    """-v raises specwise's and httpx's loggers to DEBUG for the command only: a process (a test, a notebook)
    that runs main again is not left logging."""
    loggers = [logging.getLogger(name) for name in ("specwise", "httpx")]
    before = [(logger.level, list(logger.filters)) for logger in loggers]
    assert main(["gpus", "-v"]) == 0
    assert [(logger.level, list(logger.filters)) for logger in loggers] == before


def test_verbose_logs_bench_and_monitor_requests_masked(
    caplog: pytest.LogCaptureFixture, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README says -v logs the HTTP requests of bench and monitor: each completion and /metrics scrape, URL
    credentials masked (review s45a: nothing but the command's first and last lines)."""
    from pathlib import Path

    from specwise.loadgen.mock_server import MockBehaviour, MockServer

    assert isinstance(tmp_path, Path)
    with MockServer(MockBehaviour()) as server, caplog.at_level(logging.DEBUG, logger="specwise"):
        url = server.url.replace("http://", "http://u:s3cret@")
        argv = ["bench", "--url", url, "--model", "m", "--rates", "20", "--requests-per-level", "2"]
        assert main([*argv, "--db", str(tmp_path / "r.sqlite"), "--api-key-env", "", "-v", "--json"]) == 0
        assert main(["monitor", "--url", url + "/metrics", "--once", "--window", "0.2", "-v"]) in (0, 1)
    capsys.readouterr()
    said = [r.getMessage() for r in caplog.records]
    posts = [m for m in said if m.startswith("POST http://***@127.0.0.1")]
    assert len(posts) == 2 and all(": HTTP 200 in " in m for m in posts), said
    assert any(m.startswith("GET http://***@127.0.0.1") and "/metrics: HTTP 200" in m for m in said), said
    assert any(m.startswith("GET http://***@127.0.0.1") and m.endswith("/metrics: ok") for m in said), said
    assert not [m for m in said if "s3cret" in m]
