"""The browser test's set-up promise (README): on a machine without Debian's chromium it is
skipped with a message naming the package to install, not failed or passed silently."""

import pytest
import viz_browser


def test_without_chromium_the_browser_test_skips_naming_the_package(monkeypatch, tmp_path):
    monkeypatch.setattr(viz_browser, "CHROMIUM", str(tmp_path / "chromium"))
    with pytest.raises(pytest.skip.Exception, match=r"install Debian's package chromium \(apt-get install chromium"):
        with viz_browser.chromium_page("about:blank"):
            pass
