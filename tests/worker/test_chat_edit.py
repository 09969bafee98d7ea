"""Editing a sent message, as Agent Chat UI does it: the edited message streamed with the
checkpoint before the one where the message was first seen. The server takes it as
LangGraph's ``stream(input, config)`` takes input with a ``checkpoint_id``: applied at
that checkpoint, on a new branch; the reply comes, the thread's state is the new branch,
and the old branch stays in the history. Through the JS SDK the UI is built on
(``tests/js/chat_edit.mjs``, with the SDK's own branching helpers for what the page
shows), and through the Python SDK's ``runs.wait`` and ``runs.create`` with
``checkpoint_id``; the console's tree draws the fork."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from langgraph_sdk import get_sync_client

from durable.models import AuditEvent, Run, Thread
from examples.chat import reply_to
from tests.helpers.js_sdk import result

pytestmark = pytest.mark.django_db(transaction=True)

JS_SCRIPT = "chat_edit.mjs"
FIRST, SECOND = "First question", "Second question"


def chat(*asked: str) -> list[list[str]]:
    """The messages of a chat in which each of ``asked`` got the demo model's reply."""
    return [m for text in asked for m in (["human", text], ["ai", reply_to(text)])]


def test_chat_ui_edits_its_first_message_and_the_reply_to_the_edit_replaces_the_chat(js_results):
    r = result(js_results, "chat_ui_edit_first")
    assert [s["errors"] for s in r["sent"]] == [[], []]
    assert r["before"] == chat(FIRST, SECOND)
    # The edit streams: no error (the 422 the UI swallowed), and the reply comes.
    assert r["edited"]["errors"] == []
    assert "values" in r["edited"]["events"]
    edited = f"{FIRST}, edited"
    assert r["edited"]["last_values"] == chat(edited)
    # The thread now stands on the new branch: the edited message and its reply only.
    assert r["state_messages"] == chat(edited)
    # What the page shows, from the history useStream fetches: the new branch, with a
    # switcher of two branches on the edited message, the other being the old chat.
    assert r["shown"] == chat(edited)
    assert len(r["switcher"]) == 2
    assert r["other_branch"] == chat(FIRST, SECOND)
    # Both branches are in the history: two leaves, both children of the checkpoint the
    # edit was sent with (the old first step, and the edit's input checkpoint).
    assert sorted(map(str, r["leaves"])) == sorted(map(str, [chat(FIRST, SECOND), chat(edited)]))
    assert sorted(c["source"] for c in r["children_of_parent"]) == ["input", "loop"]
    # The edit is a fork run from that checkpoint, audited as a fork. (Read here: the
    # next test's flush removes what the scenarios made.)
    thread = Thread.objects.get(tenant__slug="chat-edit-chat-ui-edit-first")
    edit = thread.runs.order_by("pk").last()
    assert edit.kind == Run.Kind.FORK
    assert edit.status == Run.Status.SUCCESS
    assert edit.forked_from == edit.checkpoint_id == r["branched_at"]
    assert edit.input == {"messages": [{"type": "human", "content": edited}]}
    [event] = AuditEvent.objects.filter(run_id=edit.pk)
    assert event.action == AuditEvent.Action.FORK
    assert event.checkpoint_id == r["branched_at"]
    assert event.detail["input"] == edit.input


def test_chat_ui_edits_its_last_message_and_keeps_what_came_before(js_results):
    r = result(js_results, "chat_ui_edit_second")
    edited = f"{SECOND}, edited"
    assert r["edited"]["errors"] == []
    assert r["state_messages"] == chat(FIRST, edited)
    assert r["shown"] == chat(FIRST, edited)
    assert len(r["switcher"]) == 2
    assert r["other_branch"] == chat(FIRST, SECOND)


def human(text: str) -> dict:
    return {"messages": [{"type": "human", "content": text}]}


def _texts(values: dict) -> list[list[str]]:
    return [[m["type"], m["content"]] for m in values["messages"]]


def _before(sdk, thread_id: str, text: str) -> str:
    """The checkpoint before the one where the human message ``text`` was first seen, as
    Agent Chat UI finds it."""
    history = sdk.threads.get_history(thread_id, limit=100)
    seen = [s for s in history if ["human", text] in _texts(s["values"] or {"messages": []})]
    return seen[-1]["parent_checkpoint"]["checkpoint_id"]


def test_runs_wait_with_checkpoint_id_and_input_branches_there(web, worker, api_key, client):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk:
        thread_id = sdk.threads.create()["thread_id"]
        for text in (FIRST, SECOND):
            sdk.runs.wait(thread_id, "chat", input=human(text))
        base = _before(sdk, thread_id, FIRST)

        out = sdk.runs.wait(thread_id, "chat", input=human("Again"), checkpoint_id=base)

        assert _texts(out) == chat("Again")
        assert _texts(sdk.threads.get_state(thread_id)["values"]) == chat("Again")
        # runs.create too: from the same checkpoint, a third branch.
        made = sdk.runs.create(thread_id, "chat", input=human("Third"), checkpoint_id=base)
        sdk.runs.join(thread_id, made["run_id"])
        assert made["kind"] == "fork"
        assert _texts(sdk.threads.get_state(thread_id)["values"]) == chat("Third")
        history = sdk.threads.get_history(thread_id, limit=100)
        parents = [(s["parent_checkpoint"] or {}).get("checkpoint_id") for s in history]
        assert parents.count(base) == 3
    # The console's tree draws the three branches, and names the fork point.
    thread = Thread.objects.get(name=thread_id)
    page = client.get(reverse("thread-history", args=[thread.pk])).content.decode()
    assert 'data-lanes="3"' in page
    fork_point = re.search(rf'<li id="cp-{base}".*?</li>', page, re.S).group(0)
    assert "⋔ 3 branches" in fork_point
