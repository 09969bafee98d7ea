"""Replay divergence in Debian's chromium, driven by Playwright, against the console as
``make run`` serves it and the session's real worker: a replay asked from the console,
its run page's divergence box, and the thread's divergence page.

Each test saves a screenshot under ``<var>/screenshots/`` as an artifact."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from durable import engine
from durable.models import Run, Thread
from tests.helpers.browser import shot
from tests.helpers.divergence_graphs import choose
from tests.helpers.runs import finished

pytestmark = pytest.mark.django_db(transaction=True)


def ran(graph: str, values: dict) -> Thread:
    run = finished(engine.start(graph, values))
    assert run.status == Run.Status.SUCCESS
    return Thread.objects.get(pk=run.thread_pk)


def before(thread: Thread, node: str) -> str:
    snapshots = engine.thread_history(thread, limit=100)
    return next(s for s in snapshots if s.next == (node,)).config["configurable"]["checkpoint_id"]


def replay_from_the_console(page, web, thread: Thread, checkpoint_id: str) -> None:
    page.goto(f"{web.url}/threads/{thread.pk}/checkpoints/{checkpoint_id}/replay/")
    page.get_by_label("Reason (required)").fill("Does it take the same path?")
    page.get_by_role("button", name="Replay from here").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.get_by_test_id("run-status")).to_have_text("success")


def test_a_replayed_coin_that_lands_otherwise_shows_where_it_diverged(page, web, worker, tmp_path):
    choose(tmp_path, "heads")
    thread = ran("coin", {"dir": str(tmp_path)})
    toss = before(thread, "toss")
    choose(tmp_path, "tails")
    replay_from_the_console(page, web, thread, toss)

    box = page.locator("#run-divergence")
    expect(box.get_by_test_id("divergence-status")).to_contain_text("Diverged at step 1")
    expect(box.get_by_test_id("divergence-status")).to_contain_text("other values were written")
    changed = box.get_by_test_id("changes").get_by_role("row", name=re.compile("writes.toss.side"))
    expect(changed).to_contain_text('"heads"')
    expect(changed).to_contain_text('"tails"')
    shot(page, "divergence-run-box")

    box.get_by_role("link", name="Open the comparison as a page").click()
    expect(page.get_by_role("heading", name="Did the branch take another path?")).to_be_visible()
    step = page.get_by_test_id("divergent-step")
    expect(step.get_by_test_id("old-nodes")).to_have_text("toss")
    expect(step.get_by_test_id("new-nodes")).to_have_text("toss")
    expect(page.get_by_test_id("divergence-branches")).to_contain_text(toss)
    shot(page, "divergence-page")


def test_a_replayed_steady_graph_shows_no_divergence(page, web, worker):
    thread = ran("steady", {"number": 3})
    replay_from_the_console(page, web, thread, before(thread, "prepare"))
    status = page.locator("#run-divergence").get_by_test_id("divergence-status")
    expect(status).to_contain_text("No divergence")
    expect(status).to_contain_text("the 3 steps after the fork point")

    # The thread's page links to its divergence page, which compares its newest branch.
    page.goto(f"{web.url}/threads/{thread.pk}/")
    page.get_by_role("link", name="divergence", exact=True).click()
    expect(page.get_by_test_id("divergence-status")).to_contain_text("No divergence")
    shot(page, "divergence-none")


def test_a_checkpoint_the_thread_does_not_have_is_an_error_on_the_form(page, web, worker):
    thread = ran("steady", {"number": 3})
    page.goto(f"{web.url}/threads/{thread.pk}/divergence/")
    page.get_by_label("Checkpoint of the new branch").fill("no-such-checkpoint")
    page.get_by_role("button", name="Compare").click()
    expect(page.get_by_test_id("divergence-errors")).to_contain_text(
        "Checkpoint of the new branch: Thread"
    )
    expect(page.get_by_label("Checkpoint of the new branch")).to_have_attribute(
        "aria-invalid", "true"
    )


def test_a_forks_run_shows_its_update_as_the_first_divergent_step(page, web, worker):
    thread = ran("steady", {"number": 3})
    at = before(thread, "double")
    page.goto(f"{web.url}/threads/{thread.pk}/checkpoints/{at}/fork/")
    expect(page.get_by_label("Update as node (as_node)")).to_have_value("prepare")
    page.get_by_label("number", exact=True).fill("10")
    page.get_by_label("Reason (required)").fill("Start from ten")
    page.get_by_role("button", name="Fork").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.get_by_test_id("run-status")).to_have_text("success")

    box = page.locator("#run-divergence")
    expect(box.get_by_test_id("divergence-status")).to_contain_text("Diverged at step 1")
    expect(box.get_by_text("The new branch begins with a state update")).to_be_visible()
    expect(box.get_by_test_id("new-nodes")).to_contain_text("prepare (a state update)")
    expect(box.get_by_test_id("old-nodes")).to_have_text("double")
    shot(page, "divergence-fork")
