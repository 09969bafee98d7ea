"""The Assistants page in a real browser: create an assistant, an edit whose config the
graph's config schema refuses shows the error on the config field and saves nothing, a
good edit makes version 2, the diff of the two versions, and making version 1 the
latest again, then a run on it, which its thread's page names; a long unbroken name and
description wrap within the page."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from durable import engine
from durable.models import Assistant, AssistantVersion, AuditEvent, Tenant
from durable.models.assistants import NAME_MAX_LENGTH
from tests.helpers.browser import shot

pytestmark = pytest.mark.django_db(transaction=True)


def test_create_edit_compare_and_set_latest(page, web):
    page.goto(f"{web.url}/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Assistants").click()
    expect(page.get_by_role("heading", name="Assistants", exact=True)).to_be_visible()

    page.get_by_label("Graph", exact=True).select_option("options")
    page.get_by_label("Name", exact=True).fill("Ann's options")
    page.locator("#config").fill(json.dumps({"configurable": {"x": 1}}))
    page.locator("#context").fill(json.dumps({"user": "ann"}))
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="Ann's options")).to_be_visible()
    made = Assistant.objects.get()
    assert made.version == 1 and made.context == {"user": "ann"}

    config = page.locator("#config")
    config.fill(json.dumps({"configurable": {"user": 5}}))
    page.get_by_role("button", name="Save as a new version").click()
    errors = page.locator("#config-errors")
    expect(errors).to_contain_text("config.configurable.user")
    expect(config).to_have_attribute("aria-invalid", "true")
    shot(page, "assistant-config-refused")
    assert AssistantVersion.objects.count() == 1

    config.fill(json.dumps({"configurable": {"x": 2}}))
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.get_by_role("heading", name="Ann's options")).to_contain_text("version 2")
    versions = page.get_by_test_id("versions")
    expect(versions.get_by_role("row")).to_have_count(3)  # the header and two versions

    page.get_by_role("button", name="Compare A and B").click()
    expect(
        page.get_by_role("heading", name="What changed from version 1 to version 2")
    ).to_be_visible()
    changed = page.get_by_test_id("changes").get_by_role("row", name="config.configurable.x")
    expect(changed).to_contain_text("~ changed")
    shot(page, "assistant-versions-diff")

    page.go_back()
    page.get_by_role("button", name="Make version 1 the latest").click()
    expect(page.get_by_role("heading", name="Ann's options")).to_contain_text("version 1")
    expect(page.locator("#config")).to_have_value(json.dumps({"configurable": {"x": 1}}, indent=2))
    made.refresh_from_db()
    assert made.version == 1 and made.config == {"configurable": {"x": 1}}
    # A run on it, from its page: the thread page names the assistant and version.
    page.get_by_role("button", name="Start a run").click()
    runs = page.get_by_role("region", name="Runs")
    expect(runs.get_by_role("link", name="Ann's options")).to_be_visible()
    expect(runs).to_contain_text("Ann's options (version 1)")
    shot(page, "assistant-run-on-thread")
    actions = list(
        AuditEvent.objects.exclude(action="login").order_by("pk").values_list("action", flat=True)
    )
    assert actions == ["assistant_create", "assistant_update", "assistant_set_latest", "start"]


def test_a_long_unbroken_name_and_description_stay_within_the_page(page, web):
    engine.create_assistant(
        Tenant.default(), "options", name="n" * NAME_MAX_LENGTH, description="d" * 5000
    )
    page.goto(f"{web.url}/assistants/")
    table = page.get_by_test_id("assistants")
    expect(table).to_contain_text("d" * 199 + "…")
    widths = table.evaluate(
        "t => [t.getBoundingClientRect().right, t.closest('main').getBoundingClientRect().right]"
    )
    assert widths[0] <= widths[1], widths
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
