"""The approval flow in Debian's chromium, driven by Playwright, against the console as
`make run` serves it (uvicorn, ``web``) and a real worker process."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.helpers.browser import log_in
from tests.helpers.graphs import release, runs_of
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.worker]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Headless as root on a machine with no outside network (see the machine notes).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def page(operator, web):
    """A chromium page logged in to the console as ``operator``."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(30_000)
        log_in(page, web.url)
        yield page
        browser.close()


def test_operator_starts_an_expense_run_and_approves_it(page, web, worker):
    page.goto(web.url)
    page.get_by_role("button", name="Start expense_approval").click()

    # The thread page follows the run until the worker reaches the interrupt.
    expect(page).to_have_url(re.compile(r"/threads/\d+/$"))
    expect(page.get_by_role("heading", name="pay_expense")).to_be_visible()
    expect(page.get_by_test_id("thread-status")).to_have_text("interrupted")
    expect(page.get_by_text("Pay 120.50 to Ada Lovelace")).to_be_visible()

    page.get_by_role("button", name="Approve").click()

    expect(page.get_by_test_id("thread-status")).to_have_text("idle")
    state = page.get_by_test_id("state-values")
    expect(state).to_contain_text('"status": "paid"')
    expect(state).to_contain_text('"reference": "PAY-')
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)

    runs_table = page.get_by_role("table").filter(has_text="Kind")
    expect(runs_table.locator("tbody tr")).to_have_count(2)
    expect(runs_table.locator("tbody tr").nth(0)).to_contain_text("resume")
    expect(runs_table.locator("tbody tr").nth(0)).to_contain_text("success")
    expect(runs_table.locator("tbody tr").nth(1)).to_contain_text("start")
    expect(runs_table.locator("tbody tr").nth(1)).to_contain_text("interrupted")


def test_the_thread_page_follows_a_running_run_over_server_sent_events(page, web, worker, tmp_path):
    # The probe graph (tests/helpers/graphs.py) holds its run open until release(tmp_path).
    page.goto(web.url)
    page.locator("#input-probe").fill(json.dumps({"dir": str(tmp_path), "log": []}))
    page.get_by_role("button", name="Start probe").click()
    wait_for(lambda: runs_of(tmp_path, "slow") == 1, message="the probe's slow node")
    expect(page.get_by_test_id("thread-status")).to_have_text("busy")
    # The event stream is open, so the live part does not poll: what changes next on the
    # page arrives over the stream.
    expect(page.locator("#run-events[data-sse=open]")).to_have_count(1)

    release(tmp_path)

    expect(page.get_by_test_id("thread-status")).to_have_text("idle")
    expect(page.get_by_test_id("state-values")).to_contain_text('"after"')
