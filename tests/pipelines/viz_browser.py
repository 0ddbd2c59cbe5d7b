"""A static site served on 127.0.0.1 and opened in headless Chromium (Debian's package,
driven by playwright; nothing is downloaded)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(folder: Path):
    """Serve `folder` on a free port of 127.0.0.1; yields the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@contextlib.contextmanager
def chromium_page(url: str, width: int = 1600, height: int = 1000):
    """A headless Chromium page at `url`; the test is skipped, naming the package, on a machine
    without Debian's chromium (`.ci/run` installs it)."""
    import pytest
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.skip(f"headless Chromium not found at {CHROMIUM}: install Debian's package chromium "
                    "(apt-get install chromium; .ci/run does)")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url)
            yield page
        finally:
            browser.close()


@contextlib.contextmanager
def open_viz(build: Path, query: str):
    """kedro-viz's static build at `build`, opened with `query`; waits for the flowchart."""
    with serve(build) as base, chromium_page(base + query) as page:
        page.locator("g.pipeline-node").first.wait_for(timeout=60_000)
        yield page
