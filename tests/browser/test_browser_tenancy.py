"""Tenancy in a real browser: an operator of one tenant cannot open another's thread,
the console runs under its Content-Security-Policy without a violation, and a tenant
admin sets the tenant's "overdue after" on its settings page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from durable import engine
from durable.models import Tenant
from tests.helpers.browser import log_in, new_page, shot
from tests.helpers.threads import at_interrupt
from tests.helpers.users import member

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_operator_cannot_open_another_tenants_thread(chromium, web):
    ours = at_interrupt()
    globex = Tenant.objects.create(slug="globex", name="Globex")
    theirs = engine.create_thread("expense_approval", name="globex-secret", tenant=globex)
    member("ann")  # an operator of the default tenant only
    # Not the ``page`` fixture: the listener must hear the login page too.
    page = new_page(chromium)
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
    shot(page, "tenant-404")
    assert violations == []


def test_a_tenant_admin_sets_overdue_after_on_the_settings_page(chromium, web):
    member("ada", role="admin")
    page = new_page(chromium)
    log_in(page, web.url, "ada")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    form = page.get_by_role("form", name="Tenant settings")
    expect(form.get_by_label("Overdue after")).to_have_value("1 00:00:00")
    form.get_by_label("Overdue after").fill("0")
    form.get_by_role("button", name="Save settings").click()
    expect(page.locator("#id_overdue_after_error")).to_contain_text("at least 1 second")
    shot(page, "tenant-settings-error")
    assert Tenant.default().overdue_after.total_seconds() == 86400

    form = page.get_by_role("form", name="Tenant settings")
    form.get_by_label("Overdue after").fill("02:00:00")
    form.get_by_label("Reason (optional)").fill("our SLA is two hours")
    form.get_by_role("button", name="Save settings").click()
    expect(
        page.get_by_role("form", name="Tenant settings").get_by_label("Overdue after")
    ).to_have_value("02:00:00")
    assert Tenant.default().overdue_after.total_seconds() == 7200
