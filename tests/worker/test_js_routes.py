"""The Agent Server's routes beyond a thread's runs, and its answers as the JS SDK types
them, through the JS SDK as ``tests/js/routes.mjs`` calls them against the live server
and worker: ``/info`` and ``/ok``, assistants' graphs, schemas, subgraphs and count,
thread copy, ``patchState``, run delete, stateless and batch runs, bulk cancel, rollback,
a thread's stream, prune, a cancelled run's status, a missing store item, a thread's
``config`` and ``state_updated_at``, and history ``before`` a ``RunnableConfig``."""

from __future__ import annotations

import pytest

from durable.graphs import graph_names
from tests.helpers.js_sdk import result

pytestmark = pytest.mark.django_db(transaction=True)

JS_SCRIPT = "routes.mjs"


def test_info_and_ok(js_results):
    r = result(js_results, "info")
    assert r["info"]["status"] == 200
    assert {"version", "flags"} <= set(r["info"]["body"])
    assert r["ok"] == {"status": 200, "body": {"ok": True}}


def test_assistant_graph_schemas_subgraphs_and_count(js_results):
    r = result(js_results, "assistant_graphs")
    nodes = {n["id"] for n in r["graph"]["nodes"]}
    assert {"__start__", "validate", "request_approval", "pay", "reject", "__end__"} <= nodes
    assert {"source": "__start__", "target": "validate"} in [
        {"source": e["source"], "target": e["target"]} for e in r["graph"]["edges"]
    ]
    # xray draws the subgraphs' own nodes inside their parent's.
    assert {"left:ask", "right:ask"} <= {n["id"] for n in r["xray"]["nodes"]}
    schemas = r["schemas"]
    assert schemas["graph_id"] == "expense_approval"
    assert {"employee", "amount", "description"} <= set(schemas["input_schema"]["properties"])
    assert "payment" in schemas["state_schema"]["properties"]
    assert set(r["subgraphs"]) == {"left", "right"}
    assert r["count"] == len(graph_names())
    assert r["count_email"] == 1


def test_copy_a_thread_and_patch_its_state_metadata(js_results):
    r = result(js_results, "copy_and_patch_state")
    assert r["copy_id"] != r["original_id"]
    assert r["copied_values"] == r["original_values"]
    assert r["copied_next"] == ["request_approval"]
    # The copy is resumed on its own; the original stays at its interrupt.
    assert r["paid_status"] == "paid"
    assert r["original_after"] == "validated"
    assert r["original_metadata"]["reviewed"] is True


def test_delete_a_run(js_results):
    r = result(js_results, "delete_run")
    assert r["listed"] == []
    assert r["got"]["status"] == 404


def test_stateless_and_batch_runs(js_results):
    r = result(js_results, "stateless_runs")
    assert r["waited"]["__interrupt__"][0]["value"]["action_requests"][0]["name"] == ("pay_expense")
    assert r["streamed_events"][0] == "metadata"
    assert "updates" in r["streamed_events"]
    assert r["kept_thread"] == "interrupted"  # on_completion keep
    assert r["joined_status"] == "validated"
    assert [b["assistant_id"] for b in r["batch"]] == ["expense_approval", "email_reply"]
    # The waited and streamed runs' threads are gone (on_completion delete, the default);
    # the batch's may not have ended yet.
    batch_threads = {b["thread_id"] for b in r["batch"]}
    assert set(r["threads_left"]) - batch_threads == {r["kept_id"]}


def test_bulk_cancel_and_the_status_of_a_cancelled_run(js_results):
    r = result(js_results, "cancel_many")
    assert r["cancelled_status"] == "interrupted"  # the SDK's RunStatus has no "cancelled"
    assert r["running_status"] == "success"


def test_cancel_with_rollback_removes_the_run_and_its_checkpoints(js_results):
    r = result(js_results, "cancel_rollback")
    assert r["got"]["status"] == 404
    assert r["runs"] == []
    assert r["values"] == {}


def test_join_a_threads_stream(js_results):
    r = result(js_results, "thread_stream")
    assert r["events"][0] == "metadata"
    assert r["metadata"][0]["run_id"] == r["run_id"]
    assert r["values"][-1]["log"] == ["fast", "slow", "after"], r["events"]


def test_prune_threads(js_results):
    r = result(js_results, "prune")
    assert r["pruned"] == {"pruned_count": 2}
    assert r["first"]["status"] == 404
    assert r["left"] == [r["kept"]]


def test_answers_as_the_sdk_types_them(js_results):
    r = result(js_results, "answers_as_typed")
    assert r["earlier_ids"] == r["history_ids"][3:]
    assert r["missing_item"] is None
    assert {"config", "state_updated_at"} <= set(r["thread"])
