"""`specwise monitor --serve` rendered in headless Chromium (slow tier): charts drawn from live windows, no
console errors, a screenshot."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specwise.loadgen.launcher import free_port
from tests.conftest import mock_with_traffic
from tests.integration.test_report_browser import _chromium, open_page

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_dashboard_renders_live_charts(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    _chromium()  # a missing browser fails (or skips) before the monitor starts
    port = free_port()
    with mock_with_traffic() as server:
        monitor = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "specwise.cli",
                "monitor",
                "--url",
                server.url + "/metrics",
                "--interval",
                "0.5",
                "--duration",
                "60",
                "--min-drafts",
                "1",
                "--db",
                str(tmp_path / "m.sqlite"),
                "--serve",
                f"127.0.0.1:{port}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            first = json.loads(monitor.stdout.readline())  # type: ignore[union-attr]
            assert first == {"event": "dashboard", "url": f"http://127.0.0.1:{port}/"}
            time.sleep(3)  # a few windows
            errors: list[str] = []
            with sync_playwright() as pw:
                browser, page = open_page(pw, 1400, errors, offline=False)  # the dashboard is served over HTTP
                page.goto(first["url"])
                page.wait_for_selector("#chart-acceptance_rate-0 polyline", state="attached", timeout=15000)
                points = page.eval_on_selector("#chart-acceptance_rate-0 polyline", "e => e.getAttribute('points')")
                charts = page.eval_on_selector_all("svg[id^=chart-]", "els => els.length")
                alerts = page.inner_text("ul.alerts")
                page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
                browser.close()
        finally:
            monitor.terminate()
            monitor.wait(timeout=20)
    assert errors == []
    assert charts == 4 and len(points.split()) >= 2
    assert "low_acceptance_rate" in alerts  # the mock accepts 0.25 of drafts
    assert (tmp_path / "dashboard.png").stat().st_size > 20_000
