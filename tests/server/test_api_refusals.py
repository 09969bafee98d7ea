# ruff: noqa: E501  (the table of refused requests reads best one request a line)
"""The HTTP API's refusals, against the console served by uvicorn (``web``), no worker:
a refused request answers with a clear error naming the field, and nothing changes;
paths and methods the API does not serve answer in JSON too."""

from __future__ import annotations

import httpx
import pytest

from durable.models import Checkpoint, Thread
from tests.helpers.threads import EXPENSE, counts

pytestmark = pytest.mark.django_db(transaction=True)


# -- refused requests: a clear error naming the field, and nothing changes -----------


@pytest.fixture
def arranged(web, api_key):
    """Thread ``t1`` of expense_approval stopped at its interrupt, a bare thread, and a
    checkpoint of another thread the console does not know; the graph runs in this
    process through the real saver, so no worker is needed."""
    from durable import engine
    from durable.graphs import get_graph

    graph = get_graph("expense_approval")
    t1 = {
        "configurable": {"thread_id": engine.create_thread("expense_approval", name="t1").thread_id}
    }
    graph.invoke(EXPENSE, t1)
    engine.create_thread(None, name="bare")
    graph.invoke(EXPENSE, {"configurable": {"thread_id": "elsewhere"}})
    foreign = graph.get_state({"configurable": {"thread_id": "elsewhere"}}).config
    latest = graph.get_state(t1).config
    *_, first, _ = graph.get_state_history(t1)
    return {
        "headers": {"x-api-key": api_key},
        "first": first.config["configurable"]["checkpoint_id"],
        "url": f"{web.url}/api",
        "foreign": foreign["configurable"]["checkpoint_id"],
        "latest": latest["configurable"]["checkpoint_id"],
    }


RUN = {"assistant_id": "expense_approval"}
ON_T1 = "/threads/t1"
# (method, path, body, status, field, part of the message)
# fmt: off
BAD_REQUESTS = [
    ("POST", "/threads", '{"thread_id": ', 400, "body", "not valid JSON"),
    ("POST", "/threads", "[" * 50_000 + "]" * 50_000, 400, "body", "nested too deeply"),
    ("POST", "/threads", "[1, 2]", 422, "body", "a JSON object"),
    ("POST", "/threads/search", {"limit": True}, 422, "limit", "must be a number"),
    ("POST", "/assistants/search", "[1]", 422, "body", "a JSON object"),
    ("POST", "/threads", {"thread_id": 7}, 422, "thread_id", "valid string"),
    ("POST", "/threads", {"thread_id": "x" * 256}, 422, "thread_id", "at most 255 characters"),
    ("POST", "/threads", {"thread_id": ""}, 422, "thread_id", "at least 1 character"),
    ("POST", "/threads", {"thread_id": "a/b"}, 422, "thread_id", "cannot hold '/'"),
    ("POST", "/threads", {"thread_id": ".."}, 422, "thread_id", "cannot hold '/'"),
    ("POST", "/threads", {"thread_id": "count"}, 422, "thread_id", "'count' or 'prune'"),
    ("POST", "/threads/search", {"offset": 2**63}, 422, "offset", "less than or equal"),
    ("GET", ON_T1 + "/runs?offset=" + "9" * 30, None, 422, "offset", "less than or equal"),
    ("POST", "/threads", {"thread_id": "a\u0000b"}, 422, "thread_id", "NUL character"),
    ("POST", "/threads", {"metadata": {"a": "\u0000"}}, 422, "metadata.a", "NUL character"),
    ("POST", "/threads", {"metadata": {"graph_id": "nope"}}, 404, "graph_id", "not registered"),
    ("POST", "/threads", {"supersteps": []}, 422, "supersteps", "not supported"),
    ("POST", "/threads", {"if_exists": "maybe"}, 422, "if_exists", "'raise' or 'do_nothing'"),
    ("POST", "/threads/search", {"limit": "ten"}, 422, "limit", "valid integer"),
    ("POST", "/threads/search", {"limit": 0}, 422, "limit", "greater than or equal to 1"),
    ("POST", "/threads/search", {"status": "asleep"}, 422, "status", "'idle'"),
    ("POST", "/threads/count", {"status": "asleep"}, 422, "status", "'idle'"),
    ("POST", "/threads/count", {"values": {"status": "paid"}}, 422, "values", "not supported"),
    ("POST", "/threads/count", {"metadata": [1]}, 422, "metadata", "valid dictionary"),
    ("PATCH", "/threads/nope", {"metadata": {"a": 1}}, 404, "thread_id", "Thread 'nope' not found"),
    ("PATCH", ON_T1, None, 422, "body", "needs a JSON body"),
    ("PATCH", ON_T1, {"metadata": [1]}, 422, "metadata", "valid dictionary"),
    ("PATCH", ON_T1, {"metadata": {"a": "\u0000"}}, 422, "metadata.a", "NUL character"),
    ("PATCH", ON_T1, {"metadata": {"a": 1}, "ttl": {"ttl": 5}}, 422, "ttl", "not supported"),
    ("PATCH", ON_T1, {"metadata": {"a": 1, "graph_id": "parallel_review"}}, 422, "metadata.graph_id", "cannot change"),
    ("PATCH", "/threads/bare", {"metadata": {"assistant_id": "expense_approval"}}, 422, "metadata.assistant_id", "no graph yet"),
    ("GET", "/threads/nope", None, 404, "thread_id", "Thread 'nope' not found"),
    ("GET", "/threads/a%00b", None, 422, "thread_id", "NUL character"),
    ("DELETE", "/threads/nope", None, 404, "thread_id", "not found"),
    ("GET", "/threads/nope/state", None, 404, "thread_id", "not found"),
    ("GET", f"{ON_T1}/state/nope", None, 422, "checkpoint_id", "has no checkpoint 'nope'"),
    ("GET", f"{ON_T1}/state/{{foreign}}", None, 422, "checkpoint_id", "has no checkpoint"),
    ("GET", f"{ON_T1}/state?subgraphs=perhaps", None, 422, "subgraphs", "valid boolean"),
    ("POST", f"{ON_T1}/state/checkpoint", {"checkpoint": {}}, 422, "checkpoint.checkpoint_id", "must be a checkpoint id"),
    ("POST", f"{ON_T1}/state", {"values": {"status": "paid"}, "as_node": "nowhere"}, 422, "as_node", "Unknown node 'nowhere'"),
    ("POST", f"{ON_T1}/state", {"values": {"salary": 1}}, 422, "values", "Unknown state key(s): salary"),
    ("POST", f"{ON_T1}/state", {"values": [1]}, 422, "values", "valid dictionary"),
    ("POST", f"{ON_T1}/state", {"values": {}, "checkpoint_id": "{foreign}"}, 422, "checkpoint_id", "has no checkpoint"),
    ("POST", f"{ON_T1}/state", {"values": {}, "checkpoint": {"checkpoint_id": "x"}}, 422, "checkpoint.checkpoint_id", "has no checkpoint"),
    ("POST", "/threads/bare/state", {"values": {}}, 409, "checkpoint", "no checkpoint to update"),
    # validate's router reads "problems", which the state has no value for yet at the first step.
    ("POST", f"{ON_T1}/state", {"values": {"amount": 1}, "as_node": "validate", "checkpoint_id": "{first}"}, 422, "values", "could not apply this update: KeyError"),
    ("POST", f"{ON_T1}/history", {"limit": 0}, 422, "limit", "greater than or equal"),
    ("POST", f"{ON_T1}/history", {"before": "{foreign}"}, 422, "before", "has no checkpoint"),
    ("POST", f"{ON_T1}/history", {"metadata": "source"}, 422, "metadata", "valid dictionary"),
    ("POST", f"{ON_T1}/runs", {"input": {}}, 422, "assistant_id", "Field required"),
    ("POST", f"{ON_T1}/runs", {"assistant_id": "nope", "input": {}}, 404, "assistant_id", "not found"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": [1]}, 422, "input", "must be a JSON object"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {"salary": 1}}, 422, "input", "Unknown input key(s): salary"),
    ("POST", f"{ON_T1}/runs", '{"assistant_id": "expense_approval", "input": {"amount": NaN}}', 422, "input", "NaN"),
    ("POST", "/threads/bare/runs", RUN, 422, "input", "no next task"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {"amount": 1}, "command": {"resume": 1}}, 422, "input", "either input or command"),
    ("POST", f"{ON_T1}/runs", {**RUN, "command": {"goto": "nope"}}, 422, "command.goto", "Unknown node 'nope'"),
    ("POST", f"{ON_T1}/runs", {**RUN, "command": {"goto": [{"node": "nope", "input": {}}]}}, 422, "command.goto", "Unknown node 'nope'"),
    ("POST", f"{ON_T1}/runs", {**RUN, "command": {"update": {"salary": 1}}}, 422, "command.update", "Unknown state key(s): salary"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {}, "config": {"callbacks": []}}, 422, "config.callbacks", "not supported"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {}, "config": {"recursion_limit": 0}}, 422, "config.recursion_limit", "positive integer"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {}, "interrupt_before": ["nope"]}, 422, "interrupt_before", "Unknown node(s) 'nope'"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {}, "interrupt_after": "all"}, 422, "interrupt_after", '"*"'),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {}, "webhook": "http://example.com/hook"}, 422, "webhook", "DURABLE_WEBHOOK_ALLOWED_HOSTS"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {}, "webhook": "ftp://127.0.0.1/hook"}, 422, "webhook", "http(s)"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {}, "after_seconds": -1}, 422, "after_seconds", "between 0 and"),
    ("POST", f"{ON_T1}/runs/stream", {**RUN, "input": {}, "on_disconnect": "x"}, 422, "on_disconnect", "'cancel'"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {}, "stream_mode": ["values", "tokens"]}, 422, "stream_mode", "'tokens'"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {}, "durability": "forever"}, 422, "durability", "'sync'"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {}, "multitask_strategy": "x"}, 422, "multitask_strategy", "'reject'"),
    ("POST", f"{ON_T1}/runs", '{"assistant_id": "expense_approval", "input": {}, "metadata": {"x": Infinity}}', 422, "metadata", "NaN or Infinity"),
    ("POST", f"{ON_T1}/runs", {**RUN, "checkpoint_id": "{foreign}"}, 422, "checkpoint_id", "has no checkpoint"),
    ("POST", f"{ON_T1}/runs", {**RUN, "input": {"salary": 1}, "checkpoint_id": "{first}"}, 422, "input", "Unknown input key(s): salary"),
    ("POST", f"{ON_T1}/runs", {**RUN, "command": {"goto": "validate"}, "checkpoint_id": "{first}"}, 422, "command.goto", "takes only resume"),
    ("POST", f"{ON_T1}/runs", {"assistant_id": "parallel_review", "input": {}}, 422, "assistant_id", "runs graph 'expense_approval'"),
    ("POST", "/threads/nope/runs", {**RUN, "input": {}}, 404, "thread_id", "not found"),
    ("POST", "/threads/count/runs", {**RUN, "input": {}, "if_not_exists": "create"}, 422, "thread_id", "'count' or 'prune'"),
    ("POST", "/threads/bare/runs", {**RUN, "command": {"resume": 1}}, 422, "command.resume", "no pending interrupt"),
    ("POST", f"{ON_T1}/runs/wait", {**RUN, "input": {"salary": 1}}, 422, "input", "Unknown input key"),
    ("POST", f"{ON_T1}/runs/stream", {**RUN, "input": {"salary": 1}}, 422, "input", "Unknown input key"),
    ("GET", f"{ON_T1}/runs?limit=x", None, 422, "limit", "valid integer"),
    ("GET", f"{ON_T1}/runs/abc", None, 404, "run_id", "Run 'abc' not found"),
    ("GET", f"{ON_T1}/runs/999999", None, 404, "run_id", "not found"),
    ("GET", f"{ON_T1}/runs/{'9' * 40}", None, 404, "run_id", "not found"),
    ("GET", f"{ON_T1}/runs/999999/join", None, 404, "run_id", "not found"),
    ("GET", f"{ON_T1}/runs/999999/stream", None, 404, "run_id", "not found"),
    ("GET", f"{ON_T1}/runs/999999/stream?stream_mode=tokens", None, 422, "stream_mode", "'tokens'"),
    ("POST", f"{ON_T1}/runs/999999/cancel", None, 404, "run_id", "not found"),
    ("POST", f"{ON_T1}/runs/999999/cancel?action=rollback", None, 404, "run_id", "not found"),
    ("POST", f"{ON_T1}/runs/1/cancel?action=undo", None, 422, "action", "interrupt"),
    ("POST", "/runs", {**RUN, "input": {}, "command": {"resume": 1}}, 422, "command", "nothing to resume"),
    ("POST", "/runs/wait", {**RUN, "input": {}, "checkpoint_id": "{latest}"}, 422, "checkpoint_id", "no past checkpoint"),
    ("POST", "/runs", {**RUN, "input": {}, "on_completion": "later"}, 422, "on_completion", "delete"),
    ("POST", "/runs/stream", RUN, 422, "input", "needs an input"),
    ("POST", "/runs/batch", [], 422, "body", "1 to 100"),
    ("POST", "/runs/batch", [{**RUN, "input": {}}, {"assistant_id": "nope"}], 404, "1.assistant_id", "not found"),
    ("POST", "/runs/cancel", {}, 422, "status", "thread_id and run_ids"),
    ("POST", "/runs/cancel", {"status": "all", "thread_id": "t1"}, 422, "status", "not both"),
    ("POST", "/runs/cancel", {"thread_id": "t1", "run_ids": ["999999"]}, 404, "run_id", "not found"),
    ("POST", "/runs/cancel", {"thread_id": "nope", "run_ids": ["1"]}, 404, "thread_id", "not found"),
    ("POST", "/threads/prune", {"thread_ids": "t1"}, 422, "thread_ids", "valid list"),
    ("PATCH", f"{ON_T1}/state", {"metadata": {"a": "\u0000"}}, 422, "metadata.a", "NUL"),
    ("GET", f"{ON_T1}/stream?stream_mode=values", None, 422, "stream_mode", "not served"),
    ("GET", "/assistants/nested/subgraphs?recurse=maybe", None, 422, "recurse", "bool"),
]
# fmt: on


def test_bodies_must_be_json_and_not_too_large(arranged):
    """A cross-site page can POST a form without a preflight; a body that is not JSON
    and not said to be is refused (415). An oversized body is a 413, not a 500."""
    before = counts()
    sent = httpx.post(
        arranged["url"] + ON_T1 + "/runs/wait",
        content="assistant_id=expense_approval",
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Origin": "http://elsewhere.example",
            **arranged["headers"],
        },
    )
    assert (sent.status_code, sent.json()["field"]) == (415, "body")
    huge = {**RUN, "input": {"employee": "x" * 3_000_000}}
    sent = httpx.post(arranged["url"] + ON_T1 + "/runs", json=huge, headers=arranged["headers"])
    assert (sent.status_code, sent.json()["field"]) == (413, "body")
    assert counts() == before


@pytest.mark.parametrize(("method", "path", "body", "status", "field", "message"), BAD_REQUESTS)
def test_bad_requests_name_the_field_and_change_nothing(
    arranged, method, path, body, status, field, message
):
    before = stored()
    path = path.replace("{foreign}", arranged["foreign"])
    if isinstance(body, dict):
        body = {k: arranged.get(str(v).strip("{}"), v) for k, v in body.items()}
    content = (
        body
        if isinstance(body, str) or body is None
        else httpx.Request("POST", "/", json=body).content
    )
    response = httpx.request(
        method,
        arranged["url"] + path,
        content=content,
        headers={"Content-Type": "application/json", **arranged["headers"]},
    )
    assert response.status_code == status, response.text
    error = response.json()
    assert error["field"] == field
    assert message in error["detail"]
    assert stored() == before


def stored() -> tuple:
    """What a refused request must leave as it was."""
    return (
        counts(),
        list(Checkpoint.objects.values_list("checkpoint_id", flat=True)),
        list(Thread.objects.order_by("pk").values_list("metadata", "updated_at")),
    )


# (method, path under /api, status, part of the message, Allow); the threads and runs
# named need not exist: no route takes these requests.
# fmt: off
NOT_SERVED = [
    ("GET", "/", 404, "GET /api/ is not a route", None),
    ("GET", "/runs/stream", 405, "allowed: POST.", "POST"),
    ("POST", "/runs/nope", 404, "POST /api/runs/nope is not a route", None),
    ("GET", "/threads/t1/nope", 404, "GET /api/threads/t1/nope is not a route", None),
    ("PUT", "/threads/t1", 405, "PUT is not allowed on /api/threads/t1; allowed: DELETE, GET, PATCH.", "DELETE, GET, PATCH"),
    ("GET", "/threads/count", 405, "allowed: POST.", "POST"),
    ("DELETE", "/threads/search", 405, "DELETE is not allowed on /api/threads/search", "POST"),
    ("GET", "/threads/t1/runs/wait", 405, "allowed: POST.", "POST"),
    ("POST", "/threads/t1/runs/1/stream", 405, "allowed: GET.", "GET"),
    ("GET", "/threads/t1/runs/1/cancel", 405, "allowed: POST.", "POST"),
    ("PATCH", "/assistants/search", 405, "allowed: POST.", "POST"),
]
# fmt: on


@pytest.mark.parametrize(("method", "path", "status", "message", "allow"), NOT_SERVED)
def test_paths_and_methods_the_api_does_not_serve_answer_in_json(
    web, method, path, status, message, allow
):
    body = {} if method in ("POST", "PUT", "PATCH") else None
    response = httpx.request(method, f"{web.url}/api{path}", json=body)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["field"] is None
    assert message in response.json()["detail"]
    assert response.headers.get("Allow") == allow


def test_answers_must_match_the_interrupts_response_schema(arranged):
    from durable import engine
    from durable.graphs import get_graph

    graph = get_graph("parallel_review")
    review = engine.create_thread("parallel_review", name="review")
    config = {"configurable": {"thread_id": review.thread_id}}
    graph.invoke({"document": "contract"}, config)
    legal, finance = (i.id for i in graph.get_state(config).interrupts)
    before = counts()
    answers = {legal: {"approved": "yes"}, finance: {"approved": True}}
    sent = httpx.post(
        arranged["url"] + "/threads/review/runs",
        json={"assistant_id": "parallel_review", "command": {"resume": answers}},
        headers=arranged["headers"],
    )
    assert (sent.status_code, sent.json()["field"]) == (422, "command.resume")
    assert f"interrupt {legal} does not match its response_schema" in sent.json()["detail"]
    assert counts() == before
