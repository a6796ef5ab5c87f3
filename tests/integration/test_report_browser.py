"""The advise HTML report in headless Chromium (slow tier): no console errors, every plot decoded, a screenshot.

Uses the system Chromium (Debian's `chromium`, installed by scripts/install_system_deps.sh in `make
test-integration`) driven by Playwright; with SPECWISE_REQUIRE_SYSTEM_DEPS=1 a missing browser fails the test.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from specwise.advisor.decision import advise
from specwise.advisor.inputs import load_inputs
from specwise.report.advise_html import write_report
from tests.missing import missing_dependency

pytestmark = [pytest.mark.slow, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        missing_dependency("chromium is not installed (scripts/install_system_deps.sh)")
    return path


@pytest.mark.parametrize("example", ["summarize-low-qps", "draft-does-not-fit"])
def test_report_renders_in_chromium(example: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    exe = _chromium()
    doc = advise(load_inputs(ROOT / "examples" / "advise" / f"{example}.toml"), processes=1)
    page_path = write_report(doc, tmp_path / "report.html")
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on(
            "request",
            lambda r: errors.append(f"network request {r.url}") if not r.url.startswith(("file:", "data:")) else None,
        )
        page.goto(page_path.as_uri())
        images = page.eval_on_selector_all("img", "els => els.map(e => [e.alt, e.complete, e.naturalWidth])")
        headline = page.inner_text(".decision")
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert errors == []
    assert len(images) >= 4 and all(ok and width > 200 for _, ok, width in images), images
    assert doc.headline in headline
    assert shot.stat().st_size > 50_000
