"""The web page in a real headless Chromium (Debian's chromium + chromium-driver, driven by selenium with
the system chromedriver, so selenium-manager never downloads anything): search and compare from the DOM,
checked against the JSON routes; a screenshot is saved under the test's tmp folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.browser import headless_chromium
from serve_helpers import running_server

from sentcl.serve.app import create_app
from sentcl.serve.index import load_search_index


@pytest.fixture()
def browser() -> Iterator[Any]:
    with headless_chromium() as driver:
        yield driver


def test_page_search_and_compare_match_the_api(
    browser: Any, tiny_encoder: Any, index_dir: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    index = load_search_index(index_dir, tiny_encoder.embedding_dim)
    app = create_app(tiny_encoder, model_name="tiny-bert", index=index)
    wait = WebDriverWait(browser, 15)
    with running_server(app) as url:
        browser.get(url + "/")
        wait.until(lambda d: "index of" in d.find_element(By.ID, "model-info").text)
        assert "tiny-bert" in browser.find_element(By.ID, "model-info").text

        query = "a dog runs in the garden"
        browser.find_element(By.ID, "query").send_keys(query)
        k_box = browser.find_element(By.ID, "k")
        k_box.clear()
        k_box.send_keys("4")
        browser.find_element(By.ID, "search-btn").click()
        wait.until(lambda d: "results in" in d.find_element(By.ID, "search-status").text)
        items = browser.find_elements(By.CSS_SELECTOR, "#results li")
        shown = [
            (
                int(li.get_attribute("data-id")),
                li.find_element(By.CLASS_NAME, "text").text,
                float(li.find_element(By.CLASS_NAME, "score").text),
            )
            for li in items
        ]
        api = httpx.post(f"{url}/search", json={"query": query, "k": 4}, timeout=10).json()
        assert [(s[0], s[1]) for s in shown] == [(h["id"], h["text"]) for h in api] and len(api) == 4
        assert all(abs(s[2] - h["score"]) < 6e-5 for s, h in zip(shown, api, strict=True))  # 4 decimals shown
        latency = float(browser.find_element(By.ID, "search-status").get_attribute("data-latency-ms"))
        assert 0 < latency < 15000

        a, b = "a man plays the guitar", "a woman plays the piano"
        browser.find_element(By.ID, "sentence-a").send_keys(a)
        browser.find_element(By.ID, "sentence-b").send_keys(b)
        browser.find_element(By.ID, "compare-btn").click()
        wait.until(lambda d: d.find_element(By.ID, "cosine").text not in ("–", "…"))
        cosine = float(browser.find_element(By.ID, "cosine").text)
        body = {"inputs": {"source_sentence": a, "sentences": [b]}}
        want = httpx.post(f"{url}/similarity", json=body, timeout=10).json()[0]
        assert abs(cosine - want) < 6e-5

        shot = tmp_path / "serve_page.png"
        assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 1000
        print(f"screenshot: {shot}")


def test_info_line_follows_the_key(browser: Any, tiny_encoder: Any, index_dir: Path) -> None:
    """The info line said "missing or wrong API key" after the key was entered: it is refreshed on every
    request. The key is set from a script (no input or change event), so only a request can refresh it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    index = load_search_index(index_dir, tiny_encoder.embedding_dim)
    app = create_app(tiny_encoder, model_name="tiny-bert", index=index, api_key="k-42")
    wait = WebDriverWait(browser, 15)

    def info_line() -> str:
        return browser.find_element(By.ID, "model-info").text

    with running_server(app) as url:
        browser.get(url + "/")
        wait.until(lambda d: "missing or wrong API key" in info_line())
        browser.execute_script("document.getElementById('api-key').value = 'k-42'")
        browser.find_element(By.ID, "query").send_keys("a dog")
        browser.find_element(By.ID, "search-btn").click()
        wait.until(lambda d: "results in" in d.find_element(By.ID, "search-status").text)
        wait.until(lambda d: "tiny-bert" in info_line())
        assert "API key" not in info_line() and "index of 12 sentences" in info_line()
        browser.execute_script("document.getElementById('api-key').value = 'wrong'")
        browser.find_element(By.ID, "sentence-a").send_keys("a man")
        browser.find_element(By.ID, "sentence-b").send_keys("a woman")
        browser.find_element(By.ID, "compare-btn").click()
        wait.until(lambda d: "missing or wrong API key" in info_line())
        assert "missing or wrong API key" in browser.find_element(By.ID, "compare-status").text


def test_without_an_index_the_page_offers_no_search(browser: Any, tiny_encoder: Any) -> None:
    """A service started without --index showed a search box that could only answer "No index loaded": the
    page has no search form then, says why and how to get one, and comparing still works."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    app = create_app(tiny_encoder, model_name="tiny-bert")
    wait = WebDriverWait(browser, 15)
    with running_server(app) as url:
        html = httpx.get(url + "/", timeout=10).text
        assert 'id="search-form"' not in html and "--index DIR" in html
        browser.get(url + "/")
        wait.until(lambda d: "no index" in d.find_element(By.ID, "model-info").text)
        assert not browser.find_elements(By.ID, "query") and not browser.find_elements(By.ID, "search-btn")
        note = browser.find_element(By.ID, "no-index")
        assert note.is_displayed() and "nothing to search" in note.text
        browser.find_element(By.ID, "sentence-a").send_keys("a man plays the guitar")
        browser.find_element(By.ID, "sentence-b").send_keys("a woman plays the piano")
        browser.find_element(By.ID, "compare-btn").click()
        wait.until(lambda d: d.find_element(By.ID, "cosine").text not in ("–", "…"))
        body = {
            "inputs": {"source_sentence": "a man plays the guitar", "sentences": ["a woman plays the piano"]}
        }
        want = httpx.post(f"{url}/similarity", json=body, timeout=10).json()[0]
        assert abs(float(browser.find_element(By.ID, "cosine").text) - want) < 6e-5
