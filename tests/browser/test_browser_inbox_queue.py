"""The inbox as a queue in Debian's chromium, driven by Playwright, against the console as
`make run` serves it and the session's real worker: a new interrupt found first when
sorted newest among 18 waiting, filters with their counts, answering by keyboard only
(move, approve, reject, edit, respond, ignore, the help overlay, the next interrupt
focused after each answer), bulk approval of one kind and the refusal of mixed kinds,
and overdue marks with the threads list's overdue filter.

Waiting threads are made in the test process (``arrived``: the checkpoints and the
interrupted run a worker writes); the answers are run by the worker. Each test saves a
screenshot under ``<var>/screenshots/`` as an artifact."""

from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from durable import engine
from durable.models import AuditEvent, Run, Thread
from tests.helpers.browser import shot
from tests.helpers.runs import finished
from tests.helpers.threads import arrived

pytestmark = pytest.mark.django_db(transaction=True)


def entries(page):
    return page.locator("article.inbox-entry")


def entry(page, thread: Thread):
    return page.locator(f'article.inbox-entry[data-thread="{thread.pk}"]')


def resumed(thread: Thread) -> Run:
    """The resume run the thread's answer started, once the worker has ended it."""
    return finished(Run.objects.get(thread=thread, kind=Run.Kind.RESUME))


def test_sorted_newest_a_just_arrived_interrupt_is_first_among_18(page, web, worker):
    for hours in range(18):
        arrived(ago=timedelta(hours=hours + 1))
    page.goto(f"{web.url}/inbox/")
    expect(entries(page)).to_have_count(10)
    expect(page.get_by_role("link", name="Next →")).to_be_visible()

    run = finished(
        engine.start("email_reply", {"customer": "ada@example.com", "question": "Refund?"})
    )
    new = Thread.objects.get(pk=run.thread_pk)
    page.get_by_label("Order").select_option("newest")
    page.get_by_role("button", name="Show").click()

    expect(entries(page).first).to_have_attribute("data-thread", str(new.pk))
    expect(entries(page).first.get_by_test_id("overdue")).to_have_count(0)
    expect(page.get_by_test_id("inbox-matched")).to_have_text(
        "19 threads waiting in this view, newest first."
    )
    # The filters say how many wait under each.
    expect(page.get_by_label("Action")).to_contain_text("pay_expense (18)")
    page.get_by_label("Action").select_option("send_email")
    page.get_by_role("button", name="Show").click()
    expect(entries(page)).to_have_count(1)
    page.get_by_label("Action").select_option("")
    page.get_by_label("Payload contains").fill("refund")
    page.get_by_role("button", name="Show").click()
    expect(entries(page)).to_have_count(1)
    expect(entry(page, new)).to_be_visible()
    shot(page, "inbox-newest-first")


def test_answering_by_keyboard_only_goes_on_with_the_next_interrupt(page, web, worker):
    first, second, third = (arrived(ago=timedelta(hours=h)) for h in (3, 2, 1))
    email = arrived("email_reply", ago=timedelta(minutes=30))
    page.goto(f"{web.url}/inbox/?sort=oldest")
    keys = page.keyboard

    keys.press("?")
    help_ = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(help_).to_be_visible()
    expect(help_).to_contain_text("Approve / accept")
    shot(page, "inbox-keys-help")
    keys.press("Escape")
    expect(help_).to_be_hidden()

    keys.press("j")
    expect(entry(page, first)).to_be_focused()
    keys.press("j")
    keys.press("k")
    expect(entry(page, first)).to_be_focused()
    keys.press("a")

    # Back on the inbox, the next interrupt has the focus.
    expect(page.get_by_role("status")).to_contain_text(f"Answered {first.name}")
    expect(entry(page, second)).to_be_focused()
    keys.press("r")
    expect(entry(page, third)).to_be_focused()

    keys.press("e")  # the edit opens on the first argument's input
    expect(entry(page, third).get_by_label("employee")).to_be_focused()
    keys.press("Escape")  # out of the text box, back on the entry
    expect(entry(page, third)).to_be_focused()
    keys.press("e")
    keys.press("Tab")
    expect(entry(page, third).get_by_label("amount")).to_be_focused()
    keys.press("Control+a")
    keys.type("40")
    keys.press("Tab")  # description
    keys.press("Tab")
    expect(entry(page, third).get_by_role("button", name="Approve with edits")).to_be_focused()
    keys.press("Enter")
    expect(page.get_by_text(f"Answered {third.name}")).to_be_visible()

    assert resumed(first).command == {"resume": {"decisions": [{"type": "approve"}]}}
    assert resumed(second).command == {"resume": {"decisions": [{"type": "reject"}]}}
    [edit] = resumed(third).command["resume"]["decisions"]
    assert edit["type"] == "edit" and edit["edited_action"]["args"]["amount"] == 40

    # The agent-inbox request: respond in words, by keyboard only.
    page.goto(f"{web.url}/inbox/")
    keys.press("j")
    expect(entry(page, email)).to_be_focused()
    keys.press("p")
    keys.type("Refunds take five days.")
    keys.press("Tab")
    keys.press("Enter")
    expect(page.get_by_text(f"Answered {email.name}")).to_be_visible()
    [response] = resumed(email).command["resume"]
    assert response == {"type": "response", "args": "Refunds take five days."}
    # The expense threads were answered; the email thread leaves too, and comes back
    # with a new draft once its run has taken the feedback (when depends on the worker).
    for answered in (first, second, third):
        expect(entry(page, answered)).to_have_count(0)


def test_ignore_by_key(page, web, worker):
    email = arrived("email_reply")
    page.goto(f"{web.url}/inbox/")
    page.keyboard.press("j")
    page.keyboard.press("i")
    expect(page.get_by_text(f"Answered {email.name}")).to_be_visible()
    assert resumed(email).command["resume"] == [{"type": "ignore", "args": None}]


def test_bulk_approval_of_one_kind_and_the_refusal_of_mixed_kinds(page, web, worker):
    claims = [arrived(ago=timedelta(minutes=m)) for m in (30, 20, 10)]
    email = arrived("email_reply")
    page.goto(f"{web.url}/inbox/?sort=oldest")

    entry(page, claims[0]).get_by_label("Select").check()
    entry(page, email).get_by_label("Select").check()
    page.get_by_role("button", name="Approve selected").click()
    expect(page.get_by_role("alert")).to_contain_text("are of different kinds")
    shot(page, "inbox-bulk-mixed-kinds")
    assert not Run.objects.filter(kind=Run.Kind.RESUME).exists()

    page.goto(f"{web.url}/inbox/?sort=oldest")
    for claim in claims:
        entry(page, claim).get_by_label("Select").check()
    page.get_by_role("button", name="Approve selected").click()
    expect(page.get_by_role("status")).to_contain_text("Answered 3 interrupts")
    expect(entries(page)).to_have_count(1)
    shot(page, "inbox-bulk-approved")

    for claim in claims:
        assert resumed(claim).status == Run.Status.SUCCESS
        assert engine.thread_state(claim).values["status"] == "paid"
    assert AuditEvent.objects.filter(action="resume").count() == 3


def test_overdue_interrupts_are_marked_and_the_threads_list_filters_them(page, web):
    late = arrived(ago=timedelta(hours=30))
    recent = arrived(ago=timedelta(hours=2))
    page.goto(f"{web.url}/inbox/?sort=oldest")
    expect(entry(page, late).get_by_test_id("overdue")).to_have_text("overdue")
    expect(entry(page, late).get_by_test_id("waited")).to_have_text("waiting 1\xa0day")
    expect(entry(page, recent).get_by_test_id("overdue")).to_have_count(0)
    expect(entry(page, recent).get_by_test_id("waited")).to_have_text("waiting 2\xa0hours")
    shot(page, "inbox-overdue")

    page.goto(f"{web.url}/")
    page.get_by_label("Interrupt overdue").check()
    page.get_by_role("button", name="Filter").click()
    expect(page.locator(f'tr[data-thread-id="{late.thread_id}"]')).to_be_visible()
    expect(page.locator(f'tr[data-thread-id="{recent.thread_id}"]')).to_have_count(0)
