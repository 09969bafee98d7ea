"""The Crons page in Debian's chromium, driven by Playwright, against the console as
`make run` serves it (uvicorn, ``web``): an operator makes a cron, is shown the errors of a bad
expression and time zone on their fields first, then disables, enables and deletes it.

Screenshots are saved under ``<var>/screenshots/``."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from durable.models import Cron
from tests.helpers.browser import shot

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_operator_makes_disables_enables_and_deletes_a_cron(page, web):
    page.goto(f"{web.url}/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Crons").click()
    expect(page.get_by_role("heading", name="Crons", exact=False)).to_be_visible()
    expect(page.get_by_text("No crons yet.")).to_be_visible()

    form = page.get_by_role("form", name="New cron")
    form.get_by_label("Assistant").fill("preferences")
    form.get_by_label("Schedule").fill("61 9 * * 1-5")
    form.get_by_label("Timezone").fill("Mars/Olympus")
    form.get_by_label("Input").fill('{"user_id": "ada"}')
    form.get_by_role("button", name="Create cron").click()
    # Both bad fields at once, each with its error.
    expect(page.locator("#id_schedule_error")).to_contain_text("bad minute field '61'")
    expect(page.locator("#id_timezone_error")).to_contain_text("not an IANA time zone")
    shot(page, "crons-field-error")
    assert not Cron.objects.exists()

    form = page.get_by_role("form", name="New cron")
    expect(form.get_by_label("Schedule")).to_have_value("61 9 * * 1-5")  # kept as typed
    form.get_by_label("Schedule").fill("30 9 * * 1-5")
    form.get_by_label("Timezone").fill("Europe/Paris")
    form.get_by_role("button", name="Create cron").click()
    row = page.locator("table.crons tbody tr").filter(has_text="preferences")
    expect(row).to_contain_text("At 09:30, Monday through Friday")
    expect(row).to_contain_text("30 9 * * 1-5")
    expect(row).to_contain_text("enabled")
    shot(page, "crons-list")

    row.get_by_role("button", name="Disable").click()
    row = page.locator("table.crons tbody tr").filter(has_text="preferences")
    expect(row).to_contain_text("disabled")
    assert not Cron.objects.get().enabled
    row.get_by_role("button", name="Enable").click()
    row = page.locator("table.crons tbody tr").filter(has_text="preferences")
    expect(row.get_by_role("button", name="Disable")).to_be_visible()
    assert Cron.objects.get().enabled

    row.get_by_role("button", name="Delete").click()
    expect(page.get_by_text("No crons yet.")).to_be_visible()
    assert not Cron.objects.exists()
