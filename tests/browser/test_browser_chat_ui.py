"""Agent Chat UI itself, built from the npm registry (``tests.helpers.chat_ui``) and
served on an origin of its own, against the API: a person sends a message, the reply
comes; they edit the message they sent, and the thread branches: the page shows the
edited message and the reply to it in place of the old chat, with a switcher of two
branches, and the old branch's checkpoints stay in the thread's history."""

from __future__ import annotations

import pytest
from langgraph_sdk import get_sync_client
from playwright.sync_api import expect

from examples.chat import reply_to
from tests.helpers import chat_ui
from tests.helpers.browser import new_page, shot
from tests.helpers.processes import WEB_LOG, WebProcess

pytestmark = pytest.mark.django_db(transaction=True)

FIRST, EDITED = "What is a checkpoint?", "What is a thread?"


@pytest.fixture(scope="module")
def ui_origin():
    """The origin that serves the built UI."""
    with chat_ui.serve(chat_ui.build()) as origin:
        yield origin


@pytest.fixture(scope="module")
def api(ui_origin, django_db_setup, django_db_blocker):
    """The API as deployed for the UI: a web server that allows the UI's origin
    (``DURABLE_CORS_ALLOWED_ORIGINS``), since the page calls it cross-origin."""
    process = WebProcess(WEB_LOG, DURABLE_CORS_ALLOWED_ORIGINS=ui_origin).start()
    yield process
    process.stop()


def messages(history_entry) -> list[list[str]]:
    return [[m["type"], m["content"]] for m in history_entry["values"].get("messages", [])]


def test_editing_a_sent_message_in_agent_chat_ui_branches_the_thread(
    chromium, ui_origin, api, worker, api_key
):
    page = new_page(chromium)
    failures: list[str] = []
    page.on("pageerror", lambda error: failures.append(f"page error: {error}"))
    # What the API refused, by address. Not the browser's console: the UI's own origin
    # answers 404 to a stylesheet its template links but never builds, ``/src/styles.css``.
    # Nor Playwright's failed requests: Chromium reports a ``no-store`` fetch stream that
    # the page read to its end (each run's stream) as aborted.
    page.on(
        "response",
        lambda r: (
            r.url.startswith(api.url)
            and r.status >= 400
            and failures.append(f"{r.request.method} {r.url}: {r.status}")
        ),
    )
    # The key as the UI's setup form keeps it; the address says which server and graph.
    page.add_init_script(f"window.localStorage.setItem({chat_ui.API_KEY_STORAGE!r}, {api_key!r})")
    page.goto(chat_ui.page_url(ui_origin, f"{api.url}/api", "chat"))

    page.get_by_placeholder("Type your message...").fill(FIRST)
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_text(reply_to(FIRST))).to_be_visible()
    page.wait_for_url(lambda url: "threadId=" in url)
    thread_id = page.url.split("threadId=")[1].split("&")[0]
    shot(page, "chat-ui-before-edit")

    sent = page.get_by_text(FIRST, exact=True)
    sent.hover()
    page.get_by_role("button", name="Edit").click()
    editing = page.locator("textarea").first
    editing.fill(EDITED)
    page.get_by_role("button", name="Submit").click()

    # The edited message and its reply in place of the old chat, and a switcher that
    # says this is the second of two branches.
    expect(page.get_by_text(reply_to(EDITED))).to_be_visible()
    expect(page.get_by_text(EDITED, exact=True)).to_be_visible()
    expect(page.get_by_text(FIRST, exact=True)).to_have_count(0)
    expect(page.get_by_text(reply_to(FIRST))).to_have_count(0)
    expect(page.get_by_text("2 / 2")).to_be_visible()
    shot(page, "chat-ui-after-edit")
    assert failures == [], f"{failures}\nweb log:\n{api.log()[-4000:]}"

    # Through the API: the thread's head is the new branch, and the old branch's
    # checkpoints are still there, both branches children of one checkpoint.
    sdk = get_sync_client(url=f"{api.url}/api", api_key=api_key)
    history = sdk.threads.get_history(thread_id, limit=50)
    head = history[0]
    assert messages(head) == [["human", EDITED], ["ai", reply_to(EDITED)]]
    old = [c for c in history if messages(c) == [["human", FIRST], ["ai", reply_to(FIRST)]]]
    assert len(old) == 1
    parent_of = {c["checkpoint"]["checkpoint_id"]: c["parent_checkpoint"] for c in history}
    ancestors = set()
    at = head["checkpoint"]["checkpoint_id"]
    while parent_of.get(at):
        at = parent_of[at]["checkpoint_id"]
        ancestors.add(at)
    # The old reply is not on the head's line: it is on a branch of its own.
    assert old[0]["checkpoint"]["checkpoint_id"] not in ancestors
    branched_at = old[0]["parent_checkpoint"]["checkpoint_id"]
    while parent_of.get(branched_at) and branched_at not in ancestors:
        branched_at = parent_of[branched_at]["checkpoint_id"]
    assert branched_at in ancestors
