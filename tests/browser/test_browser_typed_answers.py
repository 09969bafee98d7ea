"""Typed answers and inputs in Debian's chromium, driven by Playwright, against the
console as `make run` serves it and the session's real worker: a parallel review started
and approved by clicking only, a start form filled field by field, an answer left out
shown on its field, and the JSON boxes one click away still working.

Each test saves a screenshot under ``<var>/screenshots/`` as an artifact."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from durable import engine
from durable.models import Run, Thread
from tests.helpers.browser import expect_thread_status, shot
from tests.helpers.runs import finished

pytestmark = pytest.mark.django_db(transaction=True)


def start_form(page, graph: str):
    return page.get_by_role("form", name=graph, exact=True)


def interrupt_cards(page, thread: Thread):
    """The answer form's card of each pending interrupt of ``thread``, by its id."""
    ids = [i.id for i in engine.pending_interrupts(thread)]
    return {iid: page.locator(f'article.interrupt[data-interrupt-id="{iid}"]') for iid in ids}


def test_a_parallel_review_is_started_and_approved_by_clicking_only(page, web, worker):
    page.goto(web.url)
    expect(start_form(page, "parallel_review").get_by_label("Document")).to_have_value(
        "Supplier contract v3: 24 months, 2% late fee."
    )
    page.get_by_role("button", name="Start parallel_review").click()

    expect(page).to_have_url(re.compile(r"/threads/\d+/$"))
    expect_thread_status(page, "interrupted")
    thread = Thread.objects.get()
    cards = interrupt_cards(page, thread)
    assert len(cards) == 2
    for card in cards.values():
        expect(card.get_by_role("group", name="Approve (required)")).to_be_visible()
        card.get_by_role("radio", name="Yes").check()
    shot(page, "typed-parallel-review")
    page.get_by_role("button", name="Send all 2 answers").click()

    expect_thread_status(page, "idle")
    expect(page.get_by_test_id("state-values")).to_contain_text('"verdict": "approved"')
    run = thread.runs.get(kind=Run.Kind.RESUME)
    assert run.command["resume"] == {iid: {"approved": True} for iid in cards}


def test_an_answer_left_out_is_shown_on_its_field_and_changes_nothing(page, web, worker):
    run = finished(engine.start("parallel_review", {"document": "Lease"}))
    thread = Thread.objects.get(pk=run.thread_pk)
    page.goto(f"{web.url}/inbox/threads/{thread.pk}/")
    expect(page.locator("article.interrupt")).to_have_count(2)
    first, second = interrupt_cards(page, thread).values()
    first.get_by_role("radio", name="No").check()
    first.get_by_label("Comment").fill("Cap the late fee.")
    page.get_by_role("button", name="Send all 2 answers").click()

    first, second = interrupt_cards(page, thread).values()
    group = second.get_by_role("group", name="Approve (required)")
    expect(group).to_have_attribute("aria-invalid", "true")
    expect(second.get_by_role("alert")).to_have_text("approved is required.")
    # What was typed is kept.
    expect(first.get_by_role("radio", name="No")).to_be_checked()
    expect(first.get_by_label("Comment")).to_have_value("Cap the late fee.")
    shot(page, "typed-answer-left-out")
    assert thread.runs.count() == 1
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.INTERRUPTED

    second.get_by_role("radio", name="Yes").check()
    page.get_by_role("button", name="Send all 2 answers").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.get_by_test_id("run-status")).to_have_text("success")
    assert engine.thread_state(thread).values["verdict"] == "changes requested"


def test_a_start_form_filled_field_by_field(page, web, worker):
    page.goto(web.url)
    form = start_form(page, "expense_approval")
    form.get_by_label("Employee").fill("Grace Hopper")
    form.get_by_label("Amount").fill("42")
    form.get_by_label("Description").fill("Compiler manual")
    shot(page, "typed-start-form")
    form.get_by_role("button", name="Start expense_approval").click()

    expect(page).to_have_url(re.compile(r"/threads/\d+/$"))
    expect_thread_status(page, "interrupted")
    expect(page.get_by_text("Pay 42.00 to Grace Hopper")).to_be_visible()
    assert Run.objects.get().input == {
        "employee": "Grace Hopper",
        "amount": 42,
        "description": "Compiler manual",
    }


def test_the_json_boxes_are_one_click_away_and_still_work(page, web, worker):
    page.goto(web.url)
    form = start_form(page, "parallel_review")
    box = form.get_by_label("Input (JSON)")
    expect(box).to_be_hidden()
    form.get_by_text("Input as JSON").click()
    box.fill(json.dumps({"document": "Typed as JSON"}))
    form.get_by_role("button", name="Start parallel_review").click()

    expect_thread_status(page, "interrupted")
    thread = Thread.objects.get()
    assert thread.runs.get().input == {"document": "Typed as JSON"}
    for card in interrupt_cards(page, thread).values():
        card.get_by_text("Answer as JSON").click()
        card.get_by_label("Answer (JSON)").fill('{"approved": true, "comment": "as JSON"}')
    page.get_by_role("button", name="Send all 2 answers").click()

    expect_thread_status(page, "idle")
    expect(page.get_by_test_id("state-values")).to_contain_text('"verdict": "approved"')
    expect(page.get_by_test_id("state-values")).to_contain_text('"comment": "as JSON"')
