"""The thread page in Debian's chromium while a run goes on: a checkpoint opened in the
inspector pane stays open when the live part of the page follows the run."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import TALL, expect_thread_status
from tests.helpers.graphs import release, runs_of
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def viewport() -> dict:
    return TALL


def test_the_inspector_pane_stays_open_while_the_page_follows_a_run(page, web, worker, tmp_path):
    # The probe graph (tests/helpers/graphs.py) holds its run open until release(tmp_path).
    page.goto(web.url)
    page.get_by_role("form", name="probe", exact=True).get_by_label("Dir").fill(str(tmp_path))
    page.get_by_role("button", name="Start probe").click()
    wait_for(lambda: runs_of(tmp_path, "slow") == 1, message="the probe's slow node")
    expect_thread_status(page, "busy")

    page.get_by_role("link", name="step -1", exact=True).click()
    pane = page.locator("#checkpoint-detail")
    expect(pane.get_by_role("heading", name="Step -1 · input")).to_be_visible()

    release(tmp_path)

    # The run's events re-render the live part (status, state, tree) around the pane.
    expect_thread_status(page, "idle")
    expect(page.get_by_test_id("state-values")).to_contain_text('"after"')
    expect(pane.get_by_role("heading", name="Step -1 · input")).to_be_visible()
