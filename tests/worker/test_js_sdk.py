"""The API through the official JS SDK (``@langchain/langgraph-sdk``, the version Agent
Chat UI uses): threads, runs, state and history, the store, assistants, and the
``approval_chat`` example, as ``tests/js/sdk_calls.mjs`` calls them against the live
server and worker (one ``node`` process for the module: ``js_results``)."""

from __future__ import annotations

import pytest

from durable.graphs import graph_names
from tests.helpers.js_sdk import result

pytestmark = pytest.mark.django_db(transaction=True)

JS_SCRIPT = "sdk_calls.mjs"
GRAPH = {"graph_id": "expense_approval", "assistant_id": "expense_approval"}


def test_threads_create_get_search_update_count_delete(js_results):
    r = result(js_results, "threads")
    made = r["made"]
    assert made["status"] == "idle"
    assert made["metadata"] == {"customer": "acme", **GRAPH}
    assert r["got"] == made
    assert r["again_id"] == "order-7"  # if_exists do_nothing gives the thread back
    assert r["updated_metadata"] == {"customer": "acme", "tier": 2, **GRAPH}
    assert r["found_ids"] == [made["thread_id"]]
    assert r["by_graph_ids"] == [made["thread_id"]]
    assert r["counted"] == 1
    assert r["state"]["values"] == {} and r["state"]["next"] == []
    assert r["history"] == []
    assert r["deleted"]["status"] == 404
    assert r["deleted"]["detail"] == "Thread 'order-7' not found."


def test_runs_wait_state_history_list_get_and_update_state(js_results):
    r = result(js_results, "runs_and_state")
    [created] = r["created"]
    [pending] = r["asked"]["__interrupt__"]
    assert pending["value"]["action_requests"][0]["name"] == "pay_expense"
    assert r["at_interrupt"]["next"] == ["request_approval"]
    assert [i["id"] for i in r["at_interrupt"]["interrupts"]] == [pending["id"]]
    assert r["thread_status"] == "interrupted"
    [(_, [listed])] = r["thread_interrupts"].items()
    assert listed["id"] == pending["id"]
    assert r["paid"]["status"] == "paid" and "__interrupt__" not in r["paid"]
    assert r["history_steps"] == [3, 2, 1, 0, -1]
    assert r["history_next"] == [[], ["pay"], ["request_approval"], ["validate"], ["__start__"]]
    assert [(x["status"], x["kind"]) for x in r["runs"]] == [
        ("success", "resume"),
        ("interrupted", "start"),
    ]
    assert r["first"]["run_id"] == created["run_id"]
    assert r["first"]["status"] == "interrupted"
    # The fork branches at the validated checkpoint, as if the reviewer had rejected.
    forked = r["forked_state"]
    assert forked["checkpoint"]["checkpoint_id"] == r["fork"]["checkpoint"]["checkpoint_id"]
    assert forked["values"]["decision"] == {"type": "reject", "message": "over budget"}
    validated = r["by_checkpoint_id"]
    assert validated["values"]["status"] == "validated"
    assert forked["parent_checkpoint"]["checkpoint_id"] == validated["checkpoint"]["checkpoint_id"]
    assert r["second_resume"]["status"] == 422
    assert "no pending interrupt" in r["second_resume"]["detail"]


def test_background_run_join_stream_and_join_stream(js_results):
    r = result(js_results, "background_stream_and_join")
    assert r["run"]["status"] in ("pending", "running", "interrupted")
    assert r["created"] == [{"run_id": r["run"]["run_id"], "thread_id": r["run"]["thread_id"]}]
    assert r["joined"]["__interrupt__"][0]["value"]["review_configs"][0]["action_name"] == (
        "pay_expense"
    )
    parts = r["parts"]
    assert parts[0] == {
        "event": "metadata",
        "data": {"run_id": r["streamed"][0]["run_id"], "attempt": 1},
        "id": None,
    }
    assert [p["data"] for p in parts if p["event"] == "updates"] == [
        {"request_approval": {"decision": {"type": "approve"}}},
        {"pay": {"status": "paid", "payment": parts[-1]["data"]["payment"]}},
    ]
    assert parts[-1]["event"] == "values" and parts[-1]["data"]["status"] == "paid"
    # Joined after its end, the run's stream replays what it streamed.
    updates = [p for p in parts if p["event"] == "updates"]
    assert [p for p in r["replay"] if p["event"] == "updates"] == updates


def test_cancel_a_queued_run_behind_a_running_one(js_results):
    r = result(js_results, "cancel")
    assert r["busy_status"] == "busy"
    assert r["refused"]["status"] == 409 and r["refused"]["field"] == "thread_id"
    assert r["cancelled_status"] not in ("pending", "running")
    assert r["out"]["log"] == ["fast", "slow", "after"]
    assert r["fast_started"] == 1  # the cancelled run never started
    assert r["thread_status"] == "idle"


def test_store_put_get_search_list_delete(js_results):
    r = result(js_results, "store")
    assert r["item"]["namespace"] == ["users", "ada"]
    assert r["item"]["value"] == {"language": "fr"}
    assert r["item"]["createdAt"] == r["item"]["created_at"]  # the SDK's own field
    assert [i["value"] for i in r["searched"]["items"]] == [{"language": "de"}]
    assert r["namespaces"] == {"namespaces": [["users", "ada"], ["users", "bob"]]}
    assert [i["namespace"] for i in r["left"]["items"]] == [["users", "ada"]]


def test_assistants_get_and_search(js_results):
    r = result(js_results, "assistants")
    assert r["got"]["assistant_id"] == r["got"]["graph_id"] == "expense_approval"
    assert [a["assistant_id"] for a in r["search"]] == graph_names()
    assert [a["graph_id"] for a in r["by_graph"]] == ["email_reply"]
    assert r["missing"]["status"] == 404


def test_stored_assistants_through_every_call(js_results):
    r = result(js_results, "stored_assistants")
    made, aid = r["made"], r["made"]["assistant_id"]
    assert made["graph_id"] == "options" and made["version"] == 1 and made["name"] == "Ann"
    # Read after set_latest(1): version 1 again, as it was made.
    assert {**r["got"], "updated_at": None} == {**made, "updated_at": None}
    assert r["updated"]["version"] == 2 and r["updated"]["context"] == {"user": "ann"}
    assert r["versions"] == [
        [2, {"configurable": {"x": 2}}],
        [1, {"configurable": {"x": 1}, "tags": ["t-a"]}],
    ]
    # Version 2's config reached the graph, with the run's own context over the assistant's.
    assert r["ran_log"][:3] == ["x=2", "own_thread=True", "user=bob"]
    assert r["run_assistant"] == [aid, 2]
    assert r["latest"]["version"] == 1 and r["latest"]["config"]["tags"] == ["t-a"]
    assert r["again_name"] == "Ann"
    assert r["search"] == [aid] and r["counted"] == 2
    assert r["schemas_graph"] == "options"
    assert {"read", "ask", "finish"} <= set(r["graph_nodes"]) and r["subgraphs"] == {}
    assert r["duplicate"]["status"] == 409 and r["duplicate"]["field"] == "assistant_id"
    assert r["unknown_graph"]["status"] == 422 and r["unknown_graph"]["field"] == "graph_id"
    assert r["bad_config"]["status"] == 422
    assert r["bad_config"]["field"] == "config.configurable.user"
    assert r["gone"]["status"] == 404


def test_approval_chat_asks_with_a_hitl_request_and_follows_each_decision(js_results):
    r = result(js_results, "approval_chat")
    request = r["approve"]["request"]
    [action] = request["action_requests"]
    assert action["name"] == "post_announcement"
    assert action["args"] == {"channel": "#general", "text": "Lunch at noon."}
    assert request["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject"]

    def story(messages):
        return [(m["type"], m["content"], m["tool_calls"], m["status"]) for m in messages]

    proposed = [{"name": "post_announcement", "args": action["args"]}]
    assert story(r["approve"]["messages"]) == [
        ("human", "Lunch at noon.", [], None),
        ("ai", "", proposed, None),
        ("tool", "Posted to #general: Lunch at noon.", [], "success"),
        ("ai", "Done. Posted to #general: Lunch at noon.", [], None),
    ]
    edited = [
        {"name": "post_announcement", "args": {"channel": "#office", "text": "Lunch at one."}}
    ]
    assert story(r["edit"]["messages"])[1:] == [
        ("ai", "", edited, None),  # the proposal replaced by the edited call
        ("tool", "Posted to #office: Lunch at one.", [], "success"),
        ("ai", "Done. Posted to #office: Lunch at one.", [], None),
    ]
    assert story(r["reject"]["messages"])[1:] == [
        ("ai", "", proposed, None),
        ("tool", "Not this week.", [], "error"),
        ("ai", "I did not post it. Not this week.", [], None),
    ]
