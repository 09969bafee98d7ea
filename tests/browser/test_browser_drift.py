"""Schema drift in Debian's chromium: a thread of ``drifting`` stops at its interrupt on
v1 (the session's worker), then v2 is deployed in a web server and a worker of their own
(``tests.helpers.drift.deployed``), which rename state key ``topic`` to ``subject`` and
node ``review`` to ``approve``. The threads list filters the drifted thread, its page
says what no longer fits, and Migrate forks it onto v2, where it runs on to its end.

Each test saves screenshots under ``<var>/screenshots/`` as artifacts."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from durable import engine
from durable.models import Run, Thread
from tests.helpers.browser import expect_thread_status, log_in, new_page, shot
from tests.helpers.drift import deployed
from tests.helpers.runs import finished

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_drifted_thread_is_found_explained_and_migrated(chromium, operator, worker):
    run = finished(engine.start("drifting", {"topic": "budget"}))
    assert run.status == Run.Status.INTERRUPTED
    old = Thread.objects.get(pk=run.thread_pk)

    with deployed(2, worker) as (web, _):
        fresh = finished(engine.start("drifting", {"subject": "fresh"}))
        assert fresh.status == Run.Status.INTERRUPTED
        page = new_page(chromium)
        log_in(page, web.url, operator.username)

        page.goto(f"{web.url}/")
        page.get_by_label("No longer fits the deployed graph").check()
        page.get_by_role("button", name="Filter").click()
        expect(page).to_have_url(re.compile(r"drift=on"))
        rows = page.locator("table.threads tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-thread-id", old.name)
        shot(page, "drift-threads-filter")

        rows.first.get_by_role("link").click()
        box = page.get_by_test_id("drift")
        expect(box).to_contain_text("This thread no longer fits the deployed graph")
        v2 = engine.deployed_version("drifting")
        expect(page.get_by_test_id("drift-since")).to_have_text(v2.name)
        expect(box).to_contain_text("State key 'topic' is not in the state schema.")
        expect(box).to_contain_text("Its pending interrupt waits in node 'review', which is gone.")
        shot(page, "drift-thread-page")

        box.get_by_role("link", name="Migrate").click()
        expect(page.get_by_test_id("migration")).to_contain_text("Key topic is offered as subject.")
        expect(page.locator("#state-subject")).to_have_value('"budget"')
        expect(page.get_by_label("Update as node (as_node)")).to_have_value("prepare")
        expect(page.get_by_label("Reason (required)")).to_have_value(f"Migrate to {v2.name}")
        shot(page, "drift-migrate-form")
        page.get_by_role("button", name="Fork").click()

        expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
        expect(page.get_by_test_id("run-status")).to_have_text("interrupted")
        page.get_by_role("link", name="Back to the thread").click()
        expect(page.get_by_test_id("drift")).to_have_count(0)
        expect(page.get_by_text("Approve budget?")).to_be_visible()
        (asking,) = engine.pending_interrupts(old)
        page.locator(f"#answer-{asking.id}").fill('"approved"')
        page.get_by_role("button", name="Send answer").click()
        expect_thread_status(page, "idle")
        expect(page.get_by_test_id("state-values")).to_contain_text('"verdict": "approved: budget"')
        shot(page, "drift-migrated-thread")
