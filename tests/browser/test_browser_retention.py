"""Retention in Debian's chromium, driven by Playwright, against the console as `make run`
serves it (uvicorn, ``web``): an admin prunes a thread from the Django admin, first
reading the confirmation page (a dry run: counts, and nothing changes), then for real,
and finds the prune in the console's audit trail.

Screenshots are saved under ``<var>/screenshots/``."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from durable import retention
from durable.models import AuditEvent, Thread
from durable.persistence.checkpoint import DjangoSaver
from tests.helpers.browser import shot
from tests.helpers.retention import history, root_ids

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("retention_graphs")]


@pytest.fixture
def page_user(superuser):
    """``page`` logs in as ``superuser``: staff, and an admin of the default tenant."""
    return superuser


def test_an_admin_prunes_a_thread_after_a_dry_run_and_finds_it_in_the_audit(page, web):
    thread = history("retention_nested", 6, name="order-1042")
    plan = retention.prune_threads(Thread.objects.filter(pk=thread.pk), dry_run=True)
    [outcome] = plan.outcomes
    before = DjangoSaver().count_rows(thread.thread_id)
    assert outcome.removed.checkpoints > 0

    page.goto(f"{web.url}/admin/durable/thread/")
    page.locator(f'input[name="_selected_action"][value="{thread.pk}"]').check()
    page.locator('select[name="action"]').select_option("prune_to_latest")
    page.get_by_role("button", name="Go").click()

    # The confirmation page is the dry run: what would go, thread by thread.
    expect(page.get_by_role("heading", name="Prune these threads?")).to_be_visible()
    row = page.locator(f'#retention-plan tr[data-thread="{thread.pk}"]')
    expect(row.locator("td.checkpoints")).to_have_text(str(outcome.removed.checkpoints))
    expect(row.locator("td.blobs")).to_have_text(str(outcome.removed.blobs))
    expect(row.locator("td.writes")).to_have_text(str(outcome.removed.writes))
    expect(page.get_by_test_id("retention-summary")).to_contain_text(
        f"Would remove {outcome.removed.checkpoints} checkpoints"
    )
    shot(page, "retention-confirm")
    assert DjangoSaver().count_rows(thread.thread_id) == before
    assert not AuditEvent.objects.filter(action="prune").exists()

    page.get_by_label("Reason (kept in the audit trail):").fill("history past its use")
    page.get_by_role("button", name="Prune", exact=True).click()

    expect(page).to_have_url(re.compile(r"/admin/durable/thread/$"))
    expect(page.get_by_text(f"Removed {outcome.removed.checkpoints} checkpoints")).to_be_visible()
    assert len(root_ids(thread)) == 1
    assert DjangoSaver().count_rows(thread.thread_id) == before - outcome.removed

    page.goto(f"{web.url}/audit/?action=prune")
    entry = page.locator("table.audit tbody tr").filter(has_text=thread.name)
    expect(entry).to_have_count(1)
    expect(entry).to_contain_text("admin")
    expect(entry).to_contain_text("Prune")
    expect(entry).to_contain_text("history past its use")
    expect(entry).to_contain_text(outcome.before)
    shot(page, "retention-audit")
