"""Tenancy in a real browser: an operator of one tenant cannot open another's thread,
and the console runs under its Content-Security-Policy without a violation."""

from __future__ import annotations

import pytest
from django.conf import settings
from playwright.sync_api import expect, sync_playwright

from durable import engine
from durable.models import Tenant
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, log_in
from tests.helpers.threads import at_interrupt
from tests.helpers.users import member

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SCREENSHOTS = settings.VAR_DIR / "screenshots"


def test_an_operator_cannot_open_another_tenants_thread(web):
    ours = at_interrupt()
    globex = Tenant.objects.create(slug="globex", name="Globex")
    theirs = engine.create_thread("expense_approval", thread_id="globex-secret", tenant=globex)
    member("ann")  # an operator of the default tenant only
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(30_000)
        violations = []
        page.on(
            "console",
            lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
        )
        log_in(page, web.url, "ann")
        expect(page.get_by_role("link", name=ours.name)).to_be_visible()
        expect(page.get_by_text("globex-secret")).to_have_count(0)
        page.goto(f"{web.url}/threads/{ours.pk}/")
        expect(page.get_by_role("heading", name=ours.name)).to_be_visible()
        response = page.goto(f"{web.url}/threads/{theirs.pk}/")
        assert response.status == 404
        expect(page.get_by_text("globex-secret")).to_have_count(0)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "tenant-404.png"), full_page=True)
        browser.close()
    assert violations == []
