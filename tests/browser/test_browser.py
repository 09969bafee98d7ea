"""The approval flow in Debian's chromium, driven by Playwright, against the console as
`make run` serves it (uvicorn, ``web``) and a real worker process."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import expect_thread_status
from tests.helpers.graphs import release, runs_of
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_operator_starts_an_expense_run_and_approves_it(page, web, worker):
    page.goto(web.url)
    page.get_by_role("button", name="Start expense_approval").click()

    # The thread page follows the run until the worker reaches the interrupt.
    expect(page).to_have_url(re.compile(r"/threads/\d+/$"))
    expect_thread_status(page, "interrupted")
    expect(page.get_by_role("heading", name="pay_expense")).to_be_visible()
    expect(page.get_by_text("Pay 120.50 to Ada Lovelace")).to_be_visible()

    page.get_by_role("button", name="Approve").click()

    expect_thread_status(page, "idle")
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
    page.get_by_role("form", name="probe", exact=True).get_by_text("Input as JSON").click()
    page.locator("#input-probe").fill(json.dumps({"dir": str(tmp_path), "log": []}))
    page.get_by_role("button", name="Start probe").click()
    wait_for(lambda: runs_of(tmp_path, "slow") == 1, message="the probe's slow node")
    expect_thread_status(page, "busy")
    # The event stream is open, so the live part does not poll: what changes next on the
    # page arrives over the stream.
    expect(page.locator("#run-events[data-sse=open]")).to_have_count(1)

    release(tmp_path)

    expect_thread_status(page, "idle")
    expect(page.get_by_test_id("state-values")).to_contain_text('"after"')
