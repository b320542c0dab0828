"""One headless Chromium for the browser tests: Debian's build (Playwright cannot
download its own here), with the background-networking features off so that it makes
no request beyond the live server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def browser() -> Iterator[Browser]:
    """Request it after any fixture that seeds data through the ORM: Django refuses
    synchronous ORM calls while Playwright's event loop runs in the thread."""
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """Where a test saves its screenshots: the directory named by $ENGRAM_SCREENSHOTS
    (created if missing) to keep them for review, else the test's own tmp directory."""
    chosen = os.environ.get("ENGRAM_SCREENSHOTS")
    if not chosen:
        return tmp_path
    directory = Path(chosen)
    directory.mkdir(parents=True, exist_ok=True)
    return directory
