"""The Operations page in Debian's chromium, driven by Playwright, against the console as
``make run`` serves it (uvicorn, ``web``): its SVG charts are drawn with a bar per status
and bucket, its tables say the seeded numbers, and a click on a bar lands on the threads
list filtered to the threads that bar counts. It reads the same without JavaScript.

Each test saves a screenshot under ``<var>/screenshots/`` as an artifact."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from durable.models import Thread
from tests.helpers.browser import CHROMIUM_ARGS, TALL, log_in, shot
from tests.helpers.operations import seeded_run, seeded_thread
from tests.helpers.threads import at_interrupt

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def viewport() -> dict:
    return TALL


def minute_ago(n: int):
    return timezone.now().replace(second=10, microsecond=0) - timedelta(minutes=n)


def listed_threads(page) -> list[str]:
    rows = page.locator("#thread-results tr[data-thread-id]")
    return sorted(rows.evaluate_all("rows => rows.map(r => r.dataset.threadId)"))


def test_the_runs_chart_counts_and_its_bars_open_the_threads_they_count(page, web):
    paid, late, broken = seeded_thread("paid"), seeded_thread("late"), seeded_thread("broken")
    early = minute_ago(20)
    seeded_run(paid, "success", early, wait=1, duration=4)
    seeded_run(late, "success", early, wait=3, duration=8)
    seeded_run(broken, "error", early, error_node="request_approval")
    seeded_run(broken, "success", minute_ago(5))
    bucket = early.strftime("%H:%M")

    page.goto(f"{web.url}/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Operations").click()
    expect(page.get_by_role("heading", name="Operations of Default")).to_be_visible()
    chart = page.get_by_test_id("chart-runs")
    expect(chart).to_be_visible()
    expect(chart.locator("a.bar-link")).to_have_count(3)
    expect(chart.locator(f'a[data-bucket="{bucket}"][data-status="success"]')).to_have_attribute(
        "data-count", "2"
    )
    row = page.get_by_test_id("table-runs").locator(f'tr[data-bucket="{bucket}"]')
    expect(row.locator("td")).to_have_text(["2", "1", "0", "0", "0", "0", "0", "3"])
    timing = page.get_by_test_id("table-timing").locator('tr[data-graph="expense_approval"]')
    expect(timing.locator("td")).to_have_text(["2", "4.0 s", "8.0 s", "2", "1.0 s", "3.0 s"])
    expect(page.get_by_test_id("table-errors")).to_contain_text(
        "expense_approval · request_approval"
    )
    points = page.get_by_test_id("chart-duration").locator("a.point-link")
    expect(points).to_have_count(1)
    expect(points).to_have_attribute("data-p95", "8.0 s")
    shot(page, "operations-hour")

    chart.locator(f'a[data-bucket="{bucket}"][data-status="success"] rect').click()
    expect(page).to_have_url(re.compile(r"run_status=success"))
    expect(page.get_by_test_id("run-filter")).to_contain_text("With a run of status success")
    expect(page.locator("#thread-results tr[data-thread-id]")).to_have_count(2)
    assert listed_threads(page) == ["late", "paid"]
    shot(page, "operations-bar-to-threads")
    # The filter form keeps the run filter when another filter is added.
    page.get_by_label("Thread id contains").fill("pa")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#thread-results tr[data-thread-id]")).to_have_count(1)
    assert listed_threads(page) == ["paid"]

    page.goto(f"{web.url}/operations/")
    page.get_by_test_id("chart-errors").locator("a.bar-link rect").click()
    expect(page.locator("#thread-results tr[data-thread-id]")).to_have_count(1)
    assert listed_threads(page) == ["broken"]


def test_the_window_is_chosen_and_waiting_threads_are_a_click_away(page, web):
    now = timezone.now()
    for name, ago in (("asked-today", timedelta(hours=3)), ("asked-now", timedelta(minutes=1))):
        asked = at_interrupt()  # an interrupt pending: waiting for an answer
        Thread.objects.filter(pk=asked.pk).update(name=name, updated_at=now - ago)
    # Interrupted with nothing pending at its latest checkpoint: waiting for no one.
    seeded_thread("forked", status="interrupted", updated_at=now - timedelta(hours=3))
    seeded_run(seeded_thread("ran-yesterday"), "success", now - timedelta(hours=20))

    page.goto(f"{web.url}/operations/")
    expect(page.get_by_test_id("table-runs")).to_contain_text("No run was created in the window.")
    page.get_by_label("Window", exact=True).select_option("day")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"window=day"))
    expect(page.get_by_test_id("chart-runs").locator("a.bar-link")).to_have_count(1)
    expect(page.get_by_test_id("waiting-summary")).to_contain_text("2 threads waiting")
    expect(page.get_by_test_id("table-waiting").locator("tr").nth(3)).to_have_text(
        "1 hour to 1 day1"
    )
    shot(page, "operations-day")
    page.get_by_test_id("chart-waiting").locator('a[data-label="1 hour to 1 day"] rect').click()
    expect(page.locator("#thread-results tr[data-thread-id]")).to_have_count(1)
    assert listed_threads(page) == ["asked-today"]


def test_the_page_reads_without_javascript(chromium, web, operator):
    seeded_run(seeded_thread("plain"), "error", minute_ago(3), error_node="left")
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    log_in(page, web.url, operator.username)
    page.goto(f"{web.url}/operations/")
    expect(page.get_by_test_id("chart-runs").locator("a.bar-link")).to_have_count(1)
    expect(page.get_by_test_id("table-errors")).to_contain_text("expense_approval · left")
    page.get_by_test_id("table-errors").get_by_role("link", name="1").click()
    expect(page.locator("#thread-results tr[data-thread-id]")).to_have_count(1)
    shot(page, "operations-no-js")
    context.close()
    assert CHROMIUM_ARGS  # the same chromium as every browser test
