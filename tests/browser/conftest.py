"""Real-browser tests: Playwright driving Debian's Chromium (Playwright's own browser download fails here).

`.ci/run` installs Chromium when it is missing; on a machine without it (and without root to install it)
these tests are skipped with that reason rather than pretending. Screenshots go to var/test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ARTIFACTS = Path(os.environ.get("KB_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "var" / "test-artifacts"))
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # Without these Chromium phones home at start, and this machine's closed network refuses it.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return os.environ.get("KB_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    executable = chromium_path()
    if executable is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run does it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in requirements-dev.txt")
    # Playwright's sync API keeps an event loop on the test thread while it runs; Django would then refuse
    # the test's own (synchronous) database calls. Allowed only while a browser is open, and put back after,
    # so no other test (nor a subprocess one starts, such as the deploy check) inherits it.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def offline_page(browser, live_server) -> Iterator[object]:
    """A page that may reach only the live test server: every other request is aborted and recorded."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    own_host = urlsplit(live_server.url).netloc
    page.outside_requests = []

    def route(route):
        url = route.request.url
        if urlsplit(url).netloc == own_host or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            page.outside_requests.append(url)
            route.abort()

    page.route("**/*", route)
    yield page
    context.close()


def take_screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture
def screenshot():
    """screenshot(page, name): saves a full-page PNG under var/test-artifacts/ and returns its path."""
    return take_screenshot
