"""A thread with a 2 MB value in Debian's chromium, against the console as `make run`
serves it (uvicorn, ``web``): the page reads at the window's width, the value shortened
with a link to all of it. Saves a screenshot under ``var/screenshots/``."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, log_in, shot
from tests.helpers.threads import BIG, big_claim_thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


@pytest.fixture
def page(operator, web):
    """A chromium page logged in to the console as ``operator``."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(30_000)
        log_in(page, web.url)
        yield page
        browser.close()


@pytest.fixture
def thread():
    # Made before ``page``: Playwright's sync API runs an event loop, in which Django
    # refuses database calls.
    return big_claim_thread()


def test_a_2_mb_value_reads_at_the_windows_width_and_links_to_the_whole(thread, page, web):
    for path in (f"/threads/{thread.pk}/", "/inbox/"):
        page.goto(f"{web.url}{path}")
        expect(page.get_by_role("button", name="Approve")).to_be_visible()
        # Long strings wrap inside their boxes: nothing widens the page past the window.
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280

    page.goto(f"{web.url}/threads/{thread.pk}/")
    expect(page.get_by_test_id("state-cut")).to_be_visible()
    shot(page.locator("main"), "big-value-thread")
    link = page.get_by_test_id("state-cut").get_by_role("link", name="as JSON")
    whole = page.request.get(f"{web.url}{link.get_attribute('href')}")
    assert whole.ok
    assert whole.json()["values"]["description"] == BIG
