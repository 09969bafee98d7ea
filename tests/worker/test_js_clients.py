"""What Agent Chat UI and agent-inbox do, through the JS SDK they are built on, as
``tests/js/clients.mjs`` replays their calls against the live server and worker: Agent
Chat UI's on-load calls, its ``useStream`` submit on the ``chat`` graph (tokens and whole
states), its HITLRequest card on ``approval_chat`` (approve, edit, reject, mark as
resolved), and agent-inbox's list, accept (streamed in ``events`` mode), ignore and mark
as resolved on ``email_reply``."""

from __future__ import annotations

import pytest

from tests.helpers.js_sdk import result

pytestmark = pytest.mark.django_db(transaction=True)

JS_SCRIPT = "clients.mjs"
OFFICE = "The office is closed on Friday."


def root(events: list[str]) -> set[str]:
    """The stream's event names of the root graph (``stream_subgraphs`` adds ``|ns``)."""
    return {e for e in events if "|" not in e}


def streamed_reply(tokens: list[dict]) -> str:
    """The chat model's reply as its tokens spell it (``messages-tuple`` also carries
    whole messages that nodes return, such as a tool's)."""
    return "".join(t["content"] for t in tokens if t["type"] == "AIMessageChunk")


def test_chat_ui_connects_and_lists_no_thread_yet(js_results):
    r = result(js_results, "chat_ui_load")
    assert r["info_ok"], r["info_status"]  # else: "Failed to connect to LangGraph server"
    assert r["threads"] == []


def test_chat_ui_sends_a_message_and_gets_the_reply_token_by_token(js_results):
    r = result(js_results, "chat_ui_send")
    assert r["errors"] == []
    [created] = r["created"]
    assert created["thread_id"] == r["thread_id"]
    assert {"metadata", "values", "messages"} <= root(r["events"])
    # Each super-step's whole state: the human message first, then with the reply.
    assert r["values_messages"][0] == ["human"]
    assert r["values_messages"][-1] == ["human", "ai"]
    reply = r["last_values"]["messages"][-1]["content"]
    chunks = [t for t in r["tokens"] if t["type"] == "AIMessageChunk"]
    assert len(chunks) > 1
    assert all(t["node"] for t in chunks)  # the metadata names the node (langgraph_node)
    assert streamed_reply(r["tokens"]) == reply
    # The thread is in the history list, and its history ends with the reply.
    assert r["thread_id"] in r["listed"]
    assert r["history_last_messages"][-1] == ["ai", reply]


def test_chat_ui_joins_the_run_again_after_a_reload(js_results):
    r = result(js_results, "chat_ui_reconnect")
    assert r["before"] == ["metadata"]
    assert r["run_status"] == "success"  # the page going away did not cancel it
    assert r["errors"] == []
    assert {"values", "messages"} <= root(r["events"])
    assert r["values_messages"][-1] == ["human", "ai"]
    assert streamed_reply(r["tokens"]) == r["last_values"]["messages"][-1]["content"]


def test_chat_ui_passthrough_sends_json_as_text_plain(js_results):
    r = result(js_results, "chat_ui_passthrough")
    assert "accepted" in r["made"], r["made"]
    made = r["made"]["accepted"]
    assert made["metadata"] == {"via": "proxy"}
    assert [t["thread_id"] for t in r["found"]["accepted"]] == [made["thread_id"]]


def test_chat_ui_shows_a_hitl_request_and_approves_it(js_results):
    r = result(js_results, "chat_ui_approve")
    asked = r["asked"]
    assert asked["errors"] == []
    assert asked["values_messages"][-1] == ["human", "ai"]
    [pending] = asked["last_values"]["__interrupt__"]
    # What Agent Chat UI checks before it shows its approve / edit / reject card
    # (src/lib/agent-inbox-interrupt.ts).
    [interrupt] = r["interrupts"]
    assert interrupt["id"] == pending["id"]
    request = interrupt["value"]
    [action] = request["action_requests"]
    assert action["name"] == "post_announcement"
    assert action["args"] == {"channel": "#general", "text": OFFICE}
    [review] = request["review_configs"]
    assert review["action_name"] == "post_announcement"
    assert review["allowed_decisions"] == ["approve", "edit", "reject"]

    approved = r["approved"]
    assert approved["errors"] == []
    assert approved["values_messages"][-1] == ["human", "ai", "tool", "ai"]
    assert streamed_reply(approved["tokens"]) == f"Done. Posted to #general: {OFFICE}"
    assert {t["node"] for t in approved["tokens"] if t["type"] == "AIMessageChunk"} == {"agent"}
    assert r["status"] == "idle"
    assert r["messages"][2:] == [
        ["tool", f"Posted to #general: {OFFICE}"],
        ["ai", f"Done. Posted to #general: {OFFICE}"],
    ]


def test_chat_ui_edits_and_rejects_a_hitl_request(js_results):
    r = result(js_results, "chat_ui_edit_and_reject")
    edited = r["edit"]
    assert edited[1]["tool_calls"][0]["args"] == {"channel": "#office", "text": "Lunch at one."}
    assert [(m["type"], m["content"]) for m in edited[2:]] == [
        ("tool", "Posted to #office: Lunch at one."),
        ("ai", "Done. Posted to #office: Lunch at one."),
    ]
    rejected = r["reject"]
    assert [(m["type"], m["content"], m["status"]) for m in rejected[2:]] == [
        ("tool", "Not this week.", "error"),
        ("ai", "I did not post it. Not this week.", None),
    ]


def test_chat_ui_mark_as_resolved_sends_a_goto_command(js_results):
    """The command is taken with its empty ``input``; LangGraph's own semantics follow:
    ``goto`` END from the input leaves the interrupted ``review`` task pending, so it
    runs again and asks again (as ``Pregel.invoke(Command(goto=END))`` does)."""
    r = result(js_results, "chat_ui_resolve")
    assert r["resolved"]["errors"] == []
    assert "values" in root(r["resolved"]["events"])
    assert r["status"] == "interrupted"
    [(_, [again])] = r["interrupts"].items()
    assert again["value"]["action_requests"][0]["name"] == "post_announcement"


def test_agent_inbox_lists_the_interrupted_threads_of_its_graph(js_results):
    r = result(js_results, "inbox_list")
    assert [t["thread_id"] for t in r["found"]] == r["waiting"][::-1]  # newest first
    for thread in r["found"]:
        assert thread["status"] == "interrupted"
        [[interrupt]] = thread["interrupts"]
        [request] = interrupt["value"]  # agent-inbox's list of one HumanInterrupt
        assert request["action_request"]["action"] == "send_email"
        assert request["config"]["allow_accept"] is True


def test_agent_inbox_accepts_and_follows_the_nodes_in_events_mode(js_results):
    r = result(js_results, "inbox_accept")
    assert r["errors"] == []
    assert "events" in r["events"]
    assert "send" in r["nodes"]  # on_chain_start names the node that runs
    assert r["status"] == "idle"
    assert r["outcome"] == "sent to ada@example.com"


def test_agent_inbox_ignores_with_a_background_run(js_results):
    r = result(js_results, "inbox_ignore")
    assert r["outcome"] == "ignored"
    assert r["status"] == "idle"
    assert r["inbox"] == []


def test_agent_inbox_marks_a_thread_resolved_by_updating_it_as_end(js_results):
    r = result(js_results, "inbox_resolve")
    assert r["updated"]["checkpoint"]["checkpoint_id"]
    assert r["status"] == "idle"
    assert r["interrupts"] == {}
    assert r["next"] == []
    assert r["inbox"] == []
