"""The action pages in Debian's chromium, driven by Playwright, against the console as
`make run` serves it (uvicorn, ``web``) and the session's real worker: answering
interrupts from the inbox, fork, replay, and cancelling a run from its live page.

Each test saves a screenshot under ``<var>/screenshots/`` as an artifact."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from durable import engine
from durable.models import Run, Thread
from tests.helpers.browser import shot
from tests.helpers.graphs import release, runs_of
from tests.helpers.runs import finished
from tests.helpers.threads import EXPENSE
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

INPUTS = {
    "expense_approval": EXPENSE,
    "parallel_review": {"document": "Supplier contract v3: 24 months, 2% late fee."},
    "email_reply": {"customer": "ada@example.com", "question": "Can I change my address?"},
}


def interrupted(graph: str) -> Thread:
    """A thread of ``graph`` that the worker ran up to its interrupt(s)."""
    run = finished(engine.start(graph, INPUTS[graph]))
    assert run.status == Run.Status.INTERRUPTED
    return Thread.objects.get(pk=run.thread_pk)


def open_json_box(page, iid: str) -> None:
    """Open the "Answer as JSON" box of interrupt ``iid``'s card."""
    card = page.locator(f'article.interrupt[data-interrupt-id="{iid}"]')
    card.get_by_text("Answer as JSON").click()


def follow_run(page, status: str) -> None:
    """On a run page: wait until the live status reads ``status``."""
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.get_by_test_id("run-status")).to_have_text(status)


def test_approve_a_hitl_request_from_the_inbox(page, web, worker):
    expense = interrupted("expense_approval")
    interrupted("email_reply")
    interrupted("parallel_review")
    page.goto(f"{web.url}/inbox/")
    expect(page.get_by_role("heading", name="email_reply")).to_be_visible()
    expect(page.get_by_role("heading", name="Reply to ada@example.com")).to_be_visible()
    expect(page.get_by_role("button", name="Send all 2 answers")).to_be_visible()
    shot(page, "inbox")

    card = page.locator(f'article[data-thread="{expense.pk}"]')
    expect(card.get_by_text("Pay 120.50")).to_have_count(0)  # this claim is Grace's
    expect(card.get_by_text("Pay 42.50 to Grace Hopper")).to_be_visible()
    card.get_by_role("button", name="Approve", exact=True).click()

    follow_run(page, "success")
    expect(page.get_by_text("pay finished")).to_be_visible()
    shot(page, "inbox-approved-run")
    assert engine.thread_state(expense).values["status"] == "paid"


def test_answer_two_parallel_interrupts_by_id_in_one_submit(page, web, worker):
    thread = interrupted("parallel_review")
    ids = [i.id for i in engine.pending_interrupts(thread)]
    page.goto(f"{web.url}/inbox/threads/{thread.pk}/")
    for iid, comment in zip(ids, ("legal ok", "finance ok"), strict=True):
        # Typed as JSON, one click away from the fields built from the response_schema.
        open_json_box(page, iid)
        page.locator(f"#answer-{iid}").fill(json.dumps({"approved": True, "comment": comment}))
    shot(page, "inbox-parallel")
    page.get_by_role("button", name="Send all 2 answers").click()

    follow_run(page, "success")
    run = thread.runs.get(kind=Run.Kind.RESUME)
    assert set(run.command["resume"]) == set(ids)
    page.get_by_role("link", name="Back to the thread").click()
    expect(page.get_by_test_id("state-values")).to_contain_text('"verdict": "approved"')


def test_a_malformed_json_answer_shows_an_error_and_changes_nothing(page, web, worker):
    thread = interrupted("parallel_review")
    ids = [i.id for i in engine.pending_interrupts(thread)]
    page.goto(f"{web.url}/inbox/")
    for iid in ids:
        open_json_box(page, iid)
    page.locator(f"#answer-{ids[0]}").fill('{"approved": true}')
    page.locator(f"#answer-{ids[1]}").fill("{approved: yes")
    page.get_by_role("button", name="Send all 2 answers").click()

    box = page.locator(f"#answer-{ids[1]}")
    expect(page.get_by_role("alert").filter(has_text="not valid JSON")).to_be_visible()
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(box).to_have_value("{approved: yes")
    shot(page, "inbox-malformed-answer")
    assert thread.runs.count() == 1
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.INTERRUPTED
    assert [i.id for i in engine.pending_interrupts(thread)] == ids


def test_fork_with_another_as_node_runs_from_the_changed_state(page, web, worker):
    thread = interrupted("expense_approval")
    first = engine.thread_history(thread)[-2]  # step 0, written by __start__
    assert first.metadata["step"] == 0
    checkpoint = first.config["configurable"]["checkpoint_id"]
    page.goto(f"{web.url}/threads/{thread.pk}/checkpoints/{checkpoint}/fork/")
    expect(page.get_by_label("Update as node (as_node)")).to_have_value("__start__")
    expect(page.get_by_text("is the node this update counts as")).to_be_visible()

    page.get_by_label("Update as node (as_node)").select_option("validate")
    page.get_by_label("amount", exact=True).fill("5")
    page.locator("#state-problems").fill("[]")
    page.get_by_label("Reason (required)").fill("Finance corrected the amount")
    shot(page, "fork-form")
    page.get_by_role("button", name="Fork").click()

    # As if validate had passed the new amount: approval is asked again, for 5.
    follow_run(page, "interrupted")
    expect(page.get_by_text("Reason: Finance corrected the amount")).to_be_visible()
    shot(page, "fork-run")
    page.get_by_role("link", name="Back to the thread").click()
    expect(page.get_by_text("Pay 5.00 to Grace Hopper")).to_be_visible()
    expect(page.get_by_test_id("state-values")).to_contain_text('"amount": 5')
    runs_table = page.get_by_role("table").filter(has_text="Kind")
    expect(runs_table.locator("tbody tr").nth(0)).to_contain_text("fork")


def test_replay_runs_the_nodes_again(page, web, worker):
    thread = interrupted("expense_approval")
    checkpoint = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    finished(engine.resume(thread, {"decisions": [{"type": "approve"}]}))
    page.goto(f"{web.url}/threads/{thread.pk}/checkpoints/{checkpoint}/replay/")
    expect(page.get_by_text("These nodes run again, with their side effects.")).to_be_visible()
    expect(page.locator("section[aria-labelledby=nodes-h]")).to_contain_text("request_approval")
    page.get_by_label("Reason (required)").fill("Check the approval step again")
    shot(page, "replay-confirm")
    page.get_by_role("button", name="Replay from here").click()

    # The interrupt fires again: the replay waits for a new answer.
    follow_run(page, "interrupted")
    shot(page, "replay-run")
    page.get_by_role("link", name="Answer its interrupt in the inbox").click()
    expect(page.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    assert thread.runs.filter(kind=Run.Kind.REPLAY, checkpoint_id=checkpoint).count() == 1


def test_cancel_a_running_run_from_its_page(page, web, worker, tmp_path):
    run = engine.start("probe", {"dir": str(tmp_path), "log": []})
    wait_for(lambda: runs_of(tmp_path, "slow") == 1, message="the probe's slow node")
    page.goto(f"{web.url}/runs/{run.pk}/")
    expect(page.get_by_test_id("run-status")).to_have_text("running")
    expect(page.locator("#run-events[data-sse=open]")).to_have_count(1)
    expect(page.locator("#run-status")).to_contain_text("slow")

    page.get_by_role("button", name="Cancel run").click()
    expect(page.get_by_text("Stop requested (cancel)")).to_be_visible()
    # The worker's answer arrives as an event: it drains, so the super-step under way
    # ends and the next one does not start.
    expect(page.get_by_text("draining: cancel")).to_be_visible()
    release(tmp_path)

    expect(page.get_by_test_id("run-status")).to_have_text("cancelled")
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    shot(page, "run-cancelled")
    assert runs_of(tmp_path, "after") == 0
