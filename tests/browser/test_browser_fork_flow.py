"""Fork and replay from the thread page's tree, in Debian's chromium, counting the
clicks from the thread page to the running branch: a fork takes two (Fork on the node,
then "Fork and run", the new value and the reason being typed), a replay two (Replay on
the node, then "Replay from here"); the target is three and two. The preview beside the
form follows what is typed.

Each test saves a screenshot under ``<var>/screenshots/``."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from durable import engine
from durable.models import Run, Thread
from tests.helpers.browser import htmx_ready, shot
from tests.helpers.runs import finished
from tests.helpers.threads import EXPENSE

pytestmark = pytest.mark.django_db(transaction=True)


class Clicks:
    """Counts the clicks a test makes (typing is not clicking)."""

    def __init__(self):
        self.count = 0

    def __call__(self, locator) -> None:
        self.count += 1
        locator.click()


def interrupted_claim() -> Thread:
    run = finished(engine.start("expense_approval", EXPENSE))
    assert run.status == Run.Status.INTERRUPTED
    return Thread.objects.get(pk=run.thread_pk)


def node(page, checkpoint_id: str):
    return page.locator(f'li[data-checkpoint-id="{checkpoint_id}"]')


def test_fork_from_the_tree_runs_in_two_clicks_with_a_live_preview(page, web, worker):
    thread = interrupted_claim()
    checkpoint = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    page.goto(f"{web.url}/threads/{thread.pk}/")
    click = Clicks()

    click(node(page, checkpoint).get_by_role("link", name=re.compile("^Fork from step")))
    panel = page.locator("#checkpoint-detail #fork-panel")
    # The pane is below the tree: the swap scrolls the form into view, its heading whole.
    heading = panel.get_by_role("heading", name=re.compile("^Fork from step"))
    expect(heading).to_be_in_viewport(ratio=1)
    expect(panel.get_by_label("Update as node (as_node)")).to_have_value("validate")
    expect(panel.get_by_label("amount", exact=True)).to_have_value("42.5")
    preview = panel.get_by_test_id("fork-preview")
    expect(preview).to_contain_text("No change yet")
    htmx_ready(panel.locator("form.fork-form"))

    panel.get_by_label("amount", exact=True).fill("5")
    # The server's preview, debounced: the change and what LangGraph runs next.
    changes = preview.get_by_test_id("changes")
    expect(changes.get_by_role("row", name=re.compile("amount"))).to_contain_text("42.5")
    expect(changes.get_by_role("row", name=re.compile("amount"))).to_contain_text("5")
    expect(preview.get_by_test_id("preview-next")).to_contain_text("request_approval")
    panel.get_by_label("Reason (required)").fill("Finance corrected the amount")
    shot(page.locator("#tree"), "fork-beside-the-tree")
    click(panel.get_by_role("button", name="Fork and run"))

    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.get_by_test_id("run-status")).to_have_text("interrupted")
    assert click.count == 2  # the target: three at most
    run = thread.runs.get(kind=Run.Kind.FORK)
    assert run.metadata["reason"] == "Finance corrected the amount"
    assert engine.thread_state(thread).values["amount"] == 5


def test_editing_a_message_of_the_transcript_forks_and_runs_from_it(page, web, worker):
    run = finished(engine.start("chat", {"messages": [{"type": "human", "content": "hi"}]}))
    assert run.status == Run.Status.SUCCESS
    thread = Thread.objects.get(pk=run.thread_pk)
    [step_0] = [s for s in engine.thread_history(thread) if s.metadata["step"] == 0]
    checkpoint = step_0.config["configurable"]["checkpoint_id"]
    [asked] = step_0.values["messages"]
    page.goto(f"{web.url}/threads/{thread.pk}/")
    click = Clicks()

    click(node(page, checkpoint).get_by_role("link", name=re.compile("^Fork from step")))
    panel = page.locator("#checkpoint-detail #fork-panel")
    message = panel.get_by_label("human message 1")
    expect(message).to_have_value("hi")
    htmx_ready(panel.locator("form.fork-form"))
    message.fill("hello instead")
    preview = panel.get_by_test_id("fork-preview")
    expect(preview.get_by_test_id("changes")).to_contain_text(f"messages[id={asked.id}].content")
    expect(preview.get_by_test_id("preview-next")).to_contain_text("respond")
    panel.get_by_label("Reason (required)").fill("Ask it differently")
    shot(page.locator("#tree"), "fork-a-message")
    click(panel.get_by_role("button", name="Fork and run"))

    expect(page.get_by_test_id("run-status")).to_have_text("success")
    assert click.count == 2
    messages = engine.thread_state(thread).values["messages"]
    # The human message replaced where it was (its id kept), then answered anew.
    assert [(m.id, m.content) for m in messages[:1]] == [(asked.id, "hello instead")]
    assert messages[-1].content.startswith("You said: hello instead.")
    assert len(messages) == 2


def test_the_preview_shows_the_graphs_refusal_on_the_field(page, web, worker):
    thread = interrupted_claim()
    checkpoint = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    before = thread.runs.count()
    page.goto(f"{web.url}/threads/{thread.pk}/checkpoints/{checkpoint}/fork/")

    page.locator("summary", has_text="amount as JSON").click()
    page.locator("#state-amount").fill("{12")

    slot = page.locator("#pv-state-amount")
    expect(slot).to_contain_text("amount: the value is not valid JSON")
    expect(page.get_by_test_id("preview-errors")).to_contain_text("would refuse this fork")
    fork_and_run = page.get_by_role("button", name="Fork and run")
    expect(fork_and_run).to_be_disabled()
    expect(page.locator("#fork-run-refused")).to_contain_text("would refuse this update")
    shot(page, "fork-preview-refused")
    page.locator("#state-amount").fill("12")
    expect(fork_and_run).to_be_enabled()
    expect(page.get_by_test_id("preview-errors")).to_have_count(0)
    assert thread.runs.count() == before


def test_replay_from_the_tree_runs_in_two_clicks_and_says_what_runs_again(page, web, worker):
    thread = interrupted_claim()
    checkpoint = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    finished(engine.resume(thread, {"decisions": [{"type": "approve"}]}))
    page.goto(f"{web.url}/threads/{thread.pk}/")
    click = Clicks()

    click(node(page, checkpoint).get_by_role("link", name=re.compile("^Replay from step")))
    panel = page.locator("#checkpoint-detail #replay-panel")
    expect(panel).to_contain_text("Everything after this checkpoint executes anew")
    expect(panel).to_contain_text("interrupts fire again")
    panel.get_by_label("Reason (required)").fill("Check the approval step again")
    shot(page, "replay-beside-the-tree")
    click(panel.get_by_role("button", name="Replay from here"))

    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.get_by_test_id("run-status")).to_have_text("interrupted")
    assert click.count == 2
    run = thread.runs.get(kind=Run.Kind.REPLAY, checkpoint_id=checkpoint)
    assert run.metadata["reason"] == "Check the approval step again"
