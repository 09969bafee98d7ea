"""A thread with a 2 MB value in Debian's chromium, against the console as `make run`
serves it (uvicorn, ``web``): the page reads at the window's width, the value shortened
with a link to all of it. Saves a screenshot under ``var/screenshots/``."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import TALL, shot
from tests.helpers.threads import BIG, big_claim_thread

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def viewport() -> dict:
    return TALL


@pytest.fixture
def thread():
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
