"""Retention in Debian's chromium, driven by Playwright, against the console as `make run`
serves it (uvicorn, ``web``): an admin prunes a thread from the Django admin, first
reading the confirmation page (a dry run: counts, and nothing changes), then for real,
and finds the prune in the console's audit trail.

Screenshots are saved under ``<var>/screenshots/``."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from playwright.sync_api import expect, sync_playwright

from durable import retention
from durable.models import AuditEvent, Thread
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, log_in
from tests.helpers.retention import history, root_ids

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.browser,
    pytest.mark.usefixtures("retention_graphs"),
]

SCREENSHOTS = settings.VAR_DIR / "screenshots"


@pytest.fixture(autouse=True)
def orm_beside_playwright(monkeypatch):
    """Playwright's sync API keeps an event loop on this thread, and Django refuses ORM
    calls where a loop runs; nothing async runs while a test reads the database."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def admin_page(superuser, web):  # noqa: F811
    """A chromium page logged in (through the console's login form) as ``superuser``,
    staff and an admin of the default tenant."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(30_000)
        log_in(page, web.url, username="admin")
        yield page
        browser.close()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_an_admin_prunes_a_thread_after_a_dry_run_and_finds_it_in_the_audit(admin_page, web):
    page = admin_page
    thread = history("retention_nested", 6, name="order-1042")
    plan = retention.prune_threads(Thread.objects.filter(pk=thread.pk), dry_run=True)
    [outcome] = plan.outcomes
    before = retention.counts(thread.thread_id)
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
    assert retention.counts(thread.thread_id) == before
    assert not AuditEvent.objects.filter(action="prune").exists()

    page.get_by_label("Reason (kept in the audit trail):").fill("history past its use")
    page.get_by_role("button", name="Prune", exact=True).click()

    expect(page).to_have_url(re.compile(r"/admin/durable/thread/$"))
    expect(page.get_by_text(f"Removed {outcome.removed.checkpoints} checkpoints")).to_be_visible()
    assert len(root_ids(thread)) == 1
    assert retention.counts(thread.thread_id) == before - outcome.removed

    page.goto(f"{web.url}/audit/?action=prune")
    entry = page.locator("table.audit tbody tr").filter(has_text=thread.name)
    expect(entry).to_have_count(1)
    expect(entry).to_contain_text("admin")
    expect(entry).to_contain_text("Prune")
    expect(entry).to_contain_text("history past its use")
    expect(entry).to_contain_text(outcome.before)
    shot(page, "retention-audit")
