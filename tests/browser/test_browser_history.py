"""The history pages in Debian's chromium, against the console as `make run` serves it
(uvicorn, ``web``) with a real worker: a fork's branch in the tree, and a diff of two
checkpoints. Each saves a screenshot under ``var/screenshots/`` (``DURABLE_VAR_DIR``)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from durable import engine, history
from durable.models import Run, Thread
from tests.helpers.browser import TALL, shot
from tests.helpers.runs import finished
from tests.helpers.threads import EXPENSE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def viewport() -> dict:
    return TALL


@pytest.fixture
def forked(worker):
    """An expense claim approved and paid, then forked at its approval with another
    amount and run again by the worker, up to the approval again: two branches.
    Returns the thread, the checkpoint forked from, and its two children: the one
    after the approval, and the fork's."""
    run = finished(engine.start("expense_approval", EXPENSE))
    assert run.status == Run.Status.INTERRUPTED
    thread = Thread.objects.get(pk=run.thread_pk)
    at_approval = history.tree_page(thread.thread_id).nodes[0].checkpoint_id
    approve = {"decisions": [{"type": "approve"}]}
    assert finished(engine.resume(thread, approve)).status == Run.Status.SUCCESS
    fork = engine.fork(thread, at_approval, {"amount": 7.5}, as_node="validate", run=True)
    assert finished(fork.run).status == Run.Status.INTERRUPTED
    approved, forked = history.children_of(thread.thread_id, "", at_approval)
    assert forked.checkpoint_id == fork.checkpoint_id
    return thread, at_approval, approved.checkpoint_id, fork.checkpoint_id


def test_the_tree_shows_a_forks_new_branch(forked, page, web):
    thread, at_approval, approved_id, fork_id = forked

    page.goto(f"{web.url}/threads/{thread.pk}/")

    tree = page.locator("#tree")
    expect(tree.locator(".tree")).to_have_attribute("data-lanes", "2")
    fork_row = tree.locator(f'li[data-checkpoint-id="{fork_id}"]')
    expect(fork_row).to_contain_text("update")
    expect(fork_row).to_contain_text("as validate")
    expect(tree.locator(f'li[data-checkpoint-id="{at_approval}"]')).to_contain_text("⋔ 2 branches")
    # The fork and the approved branch leave the fork point in lanes of their own.
    approved_row = tree.locator(f'li[data-checkpoint-id="{approved_id}"]')
    assert fork_row.get_attribute("data-lane") != approved_row.get_attribute("data-lane")
    svg_node = tree.locator(f'svg a[data-checkpoint-id="{fork_id}"] title')
    expect(svg_node).to_have_text(re.compile(r"^step \d+ · update · written by validate"))

    shot(tree, "thread-tree")

    # A step opens the inspector in the pane below the tree, focused on its heading.
    fork_row.get_by_role("link", name=re.compile(r"^step")).click()
    heading = page.locator("#checkpoint-detail h2")
    expect(heading).to_contain_text("update")
    expect(heading).to_be_focused()
    expect(page.locator("#checkpoint-detail [data-testid=next]")).to_contain_text(
        "request_approval"
    )
    shot(page.locator("main"), "thread-tree-inspector")


def test_diff_two_checkpoints(forked, page, web):
    thread, at_approval, approved_id, fork_id = forked
    page.goto(f"{web.url}/threads/{thread.pk}/history/")

    page.locator(f'li[data-checkpoint-id="{at_approval}"] input[name=a]').check()
    page.locator(f'li[data-checkpoint-id="{fork_id}"] input[name=b]').check()
    page.get_by_role("button", name="Diff A → B").click()

    expect(page).to_have_url(re.compile(rf"/threads/{thread.pk}/diff/\?"))
    changes = page.get_by_test_id("changes")
    amount = changes.locator("tr", has=page.locator("code", has_text=re.compile(r"^amount$")))
    expect(amount).to_contain_text("changed")
    expect(amount).to_contain_text("42.5")
    expect(amount).to_contain_text("7.5")
    expect(page.get_by_test_id("line-diff")).to_contain_text('"amount": 7.5,')
    shot(page.locator("main"), "diff")

    page.get_by_role("link", name="Swap A and B").click()
    expect(page.locator(".diff-sides tbody tr").first).to_contain_text(fork_id)
