"""The advise HTML report in headless Chromium (slow tier): no console errors, every plot decoded, a screenshot.

Uses the system Chromium (Debian's `chromium`, installed by scripts/install_system_deps.sh in `make
test-integration`) driven by Playwright; with SPECWISE_REQUIRE_SYSTEM_DEPS=1 a missing browser fails the test.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

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


def open_page(pw: Any, width: int, errors: list[str], offline: bool = True) -> tuple[Any, Any]:
    """Headless Chromium and a page whose console errors and page errors land in ``errors``; ``offline`` (a report
    fetches nothing), any request for other than a file: or data: URL too."""
    browser = pw.chromium.launch(executable_path=_chromium(), args=ARGS, headless=True)
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    if offline:
        page.on(
            "request",
            lambda r: errors.append(f"network request {r.url}") if not r.url.startswith(("file:", "data:")) else None,
        )
    return browser, page


@pytest.mark.parametrize("example", ["summarize-low-qps", "draft-does-not-fit"])
def test_report_renders_in_chromium(example: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    _chromium()  # a missing browser fails (or skips) before the work
    doc = advise(load_inputs(ROOT / "examples" / "advise" / f"{example}.toml"), processes=1)
    page_path = write_report(doc, tmp_path / "report.html")
    errors: list[str] = []
    with sync_playwright() as pw:
        browser, page = open_page(pw, 1200, errors)
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


def test_validation_report_renders_in_chromium(tmp_path: Path) -> None:
    """``specwise validate --report``: the same checks (nothing fetched, no console error, every plot decoded)."""
    from playwright.sync_api import sync_playwright

    from specwise.evidence.records import all_records
    from specwise.report.validate_html import write_report as write_validation
    from specwise.validate.run import select_families, validate

    _chromium()
    records = select_families(all_records(), ["eagle3-paper,vllm-blog-2024"])
    page_path = tmp_path / "validation.html"
    write_validation(validate(records=records, family_selected=True), page_path, "specwise validate --report x.html")
    errors: list[str] = []
    with sync_playwright() as pw:
        browser, page = open_page(pw, 1400, errors)
        page.goto(page_path.as_uri())
        images = page.eval_on_selector_all("img", "els => els.map(e => [e.alt, e.complete, e.naturalWidth])")
        heading = page.inner_text("h1")
        tables = page.eval_on_selector_all("table", "els => els.length")
        browser.close()
    assert errors == []
    assert [alt for alt, _, _ in images] == [
        "predicted vs published",
        "eagle3-paper: speedup against load",
        "vllm-blog-2024: speedup against load",
    ]
    assert all(ok and width > 300 for _, ok, width in images), images
    assert heading == "How right the predictions are: predictor published-fit"
    assert tables >= 3  # families, verdicts, crossovers
