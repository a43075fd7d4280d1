"""A real headless Chromium for the browser tests: Debian's chromium and chromium-driver, driven by selenium
with the system chromedriver (so selenium-manager never downloads anything)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def headless_chromium(window: str = "1000,900", load_timeout: float = 20) -> Iterator[Any]:
    """A selenium driver of headless Chromium with a ``window`` ("W,H") and a page-load timeout, quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver_path, "install Debian's chromium and chromium-driver (make browser)"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={window}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(load_timeout)
    try:
        yield driver
    finally:
        driver.quit()
