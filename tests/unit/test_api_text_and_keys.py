# ruff: noqa: E501  (the table of refused requests reads best one request a line)
"""The API refuses what no database can take, and a body that says two things, before
anything is stored: a NUL character or a lone UTF-16 surrogate anywhere in a body, a
query or a path is a 422 naming where it is (PostgreSQL refuses NUL in text and jsonb,
and no database can be sent a surrogate, which UTF-8 cannot encode); a thread id longer
than the table's column is a 422 on every route that takes one; an object with a key
twice is a 400 naming the key. Through Django's test client, on the test database."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from durable import engine
from durable.models import THREAD_ID_MAX_LENGTH, StoreItem, Thread
from durable.persistence.store import tenant_store
from tests.helpers.threads import EXPENSE, counts

pytestmark = pytest.mark.django_db(transaction=True)

RUN = {"assistant_id": "expense_approval"}
START = {**RUN, "input": EXPENSE, "if_not_exists": "create"}
LONG = "x" * 300


@pytest.fixture
def api(api_key) -> Client:
    """A client of the API with an operator's token; thread ``t1`` (expense_approval)
    and the store item ``("a",) "k"`` exist."""
    from durable.models import Tenant

    engine.create_thread("expense_approval", name="t1", metadata={"team": "ops"})
    tenant_store(Tenant.default()).put(("a",), "k", {"v": 1})
    return Client(headers={"x-api-key": api_key})


def send(api: Client, method: str, path: str, body=None):
    """``body`` (a JSON string as it is, anything else as JSON) to ``/api`` + ``path``."""
    if body is None:
        return api.generic(method, "/api" + path)
    text = body if isinstance(body, str) else json.dumps(body)
    return api.generic(method, "/api" + path, text, content_type="application/json")


def stored() -> tuple:
    """What a refused request must leave as it was: the threads (their names and
    metadata), runs, checkpoints and store items."""
    threads = list(Thread.objects.order_by("pk").values_list("name", "metadata", "updated_at"))
    items = list(StoreItem.objects.order_by("pk").values_list("namespace", "key", "value"))
    return counts(), threads, items


# (method, path under /api, body, field, part of the message)
# fmt: off
UNSTORABLE_TEXT = [
    ("POST", "/threads", {"metadata": {"k": "\udfff"}}, "metadata.k", "lone UTF-16 surrogate (\\udfff)"),
    ("POST", "/threads", {"metadata": {"k": "a\u0000b"}}, "metadata.k", "NUL character"),
    ("POST", "/threads", {"thread_id": "t\ud800"}, "thread_id", "surrogate"),
    ("POST", "/threads", '{"\\u0000": 1}', "body", "The key '\\x00' holds a NUL character"),
    ("PATCH", "/threads/t1", {"metadata": {"a\u0000": 1}}, "metadata", "the key 'a\\x00' holds a NUL"),
    ("PATCH", "/threads/t1", {"metadata": {"team": ["ok", "\ud800"]}}, "metadata.team.1", "surrogate"),
    ("POST", "/threads/t1/runs", {**RUN, "input": {"employee": "\ud800"}}, "input.employee", "lone UTF-16 surrogate (\\ud800)"),
    ("POST", "/threads/t1/runs", {**RUN, "input": {"employee": "\u0000"}}, "input.employee", "NUL character"),
    ("POST", "/threads/t1/runs/wait", {**RUN, "input": {"employee": "\ud800"}}, "input.employee", "surrogate"),
    ("POST", "/threads/t1/runs/stream", {**RUN, "input": {"employee": "\ud800"}}, "input.employee", "surrogate"),
    ("POST", "/threads/t1/runs", {**RUN, "input": EXPENSE, "metadata": {"by": "\ud800"}}, "metadata.by", "surrogate"),
    ("POST", "/threads/t1/runs", {**RUN, "command": {"resume": {"note": "\u0000"}}}, "command.resume.note", "NUL"),
    ("POST", "/threads/a%00b/runs", START, "thread_id", "NUL character"),
    ("GET", "/threads/a%00b", None, "thread_id", "NUL character"),
    ("GET", "/threads/t1/runs?status=%00", None, "status", "NUL character"),
    ("GET", "/threads/t1/state/a%00b", None, "checkpoint_id", "NUL character"),
    ("POST", "/threads/t1/state", {"values": {"status": "\ud800"}}, "values.status", "surrogate"),
    ("POST", "/threads/t1/state/checkpoint", {"checkpoint": {"checkpoint_id": "\u0000"}}, "checkpoint.checkpoint_id", "NUL"),
    ("POST", "/threads/t1/history", {"metadata": {"source": "\u0000"}}, "metadata.source", "NUL character"),
    ("POST", "/threads/t1/history", {"before": "c\u0000"}, "before", "NUL character"),
    ("POST", "/threads/search", {"metadata": {"team": "ops\u0000"}}, "metadata.team", "NUL character"),
    ("POST", "/threads/search", {"ids": ["t1", "a\u0000"]}, "ids.1", "NUL character"),
    ("POST", "/threads/search", {"ids": ["\udc00"]}, "ids.0", "surrogate"),
    ("POST", "/threads/count", {"metadata": {"\ud800": 1}}, "metadata", "the key '\\ud800'"),
    ("GET", "/store/items?namespace=a&key=%00", None, "key", "NUL character"),
    ("GET", "/store/items?namespace=a%00&key=k", None, "namespace", "NUL character"),
    ("PUT", "/store/items", {"namespace": ["a"], "key": "k\u0000", "value": {}}, "key", "NUL character"),
    ("PUT", "/store/items", {"namespace": ["a\ud800"], "key": "k", "value": {}}, "namespace.0", "surrogate"),
    ("PUT", "/store/items", {"namespace": ["a"], "key": "k", "value": {"v": {"w": "\u0000"}}}, "value.v.w", "NUL character"),
    ("DELETE", "/store/items", {"namespace": ["a"], "key": "k\u0000"}, "key", "NUL character"),
    ("POST", "/store/items/search", {"filter": {"a\u0000": 1}}, "filter", "the key 'a\\x00' holds a NUL"),
    ("POST", "/store/items/search", {"filter": {"v": {"$eq": "\ud800"}}}, "filter.v.$eq", "surrogate"),
    ("POST", "/store/items/search", {"query": "\ud800"}, "query", "surrogate"),
    ("POST", "/store/namespaces", {"prefix": ["a", "\u0000"]}, "prefix.1", "NUL character"),
]
# fmt: on


@pytest.mark.parametrize(("method", "path", "body", "field", "message"), UNSTORABLE_TEXT)
def test_text_no_database_takes_is_a_422_naming_where_it_is(
    api, method, path, body, field, message
):
    before = stored()
    response = send(api, method, path, body)
    assert response.status_code == 422, response.content
    assert response.json()["field"] == field
    assert message in response.json()["detail"]
    assert stored() == before


def _thread_routes() -> list[tuple[str, str]]:
    """``(method, path)`` of every route of the API that takes a ``thread_id``, as its
    OpenAPI document lists them."""
    from durable.api import api as ninja_api

    paths = ninja_api.get_openapi_schema()["paths"]
    return [
        (method.upper(), path)
        for path, operations in paths.items()
        if "{thread_id}" in path
        for method in operations
    ]


@pytest.mark.parametrize(("method", "path"), _thread_routes())
def test_a_thread_id_longer_than_the_table_takes_is_a_422_on_every_route(api, method, path):
    before = stored()
    path = path.removeprefix("/api").format(thread_id=LONG, run_id="1", checkpoint_id="c")
    body = {"POST": START, "PATCH": {"metadata": {}}}.get(method)
    if path.endswith(("/state", "/history", "/checkpoint")) and method == "POST":
        body = {"checkpoint": {"checkpoint_id": "c"}} if path.endswith("/checkpoint") else {}
    if path.endswith("/cancel"):
        body = None
    response = send(api, method, path, body)
    assert response.status_code == 422, response.content
    assert response.json()["field"] == "thread_id"
    assert f"at most {THREAD_ID_MAX_LENGTH} characters" in response.json()["detail"]
    assert stored() == before


def test_a_run_on_a_new_thread_with_a_long_id_is_refused_not_a_conflict(api):
    """Found by hand: ``if_not_exists=create`` with a 300-character id answered 409,
    as if the thread were busy."""
    before = stored()
    response = send(api, "POST", f"/threads/{LONG}/runs", START)
    assert (response.status_code, response.json()["field"]) == (422, "thread_id")
    assert stored() == before
    longest = "y" * THREAD_ID_MAX_LENGTH
    assert send(api, "POST", f"/threads/{longest}/runs", START).status_code == 200
    assert Thread.objects.filter(name=longest).exists()


# (body, field, message): each a run on t1 that would otherwise start.
# fmt: off
REPEATED_KEYS = [
    ('{"assistant_id": "nope", "assistant_id": "expense_approval", "input": {}}', "assistant_id", "the key 'assistant_id' more than once;"),
    ('{"assistant_id": "expense_approval", "input": {"employee": "Ada", "employee": "Eve", "amount": 1, "description": "d"}}', "input.employee", "(in input)"),
    ('{"assistant_id": "expense_approval", "input": {"employee": "Ada", "amount": 1, "description": "d"}, "metadata": {"tags": [{"k": 1, "k": 2}]}}', "metadata.tags.0.k", "(in metadata.tags.0)"),
]
# fmt: on


@pytest.mark.parametrize(("body", "field", "message"), REPEATED_KEYS)
def test_a_body_with_a_key_twice_is_a_400_naming_the_key(api, body, field, message):
    before = stored()
    response = send(api, "POST", "/threads/t1/runs", body)
    assert response.status_code == 400
    assert response.json()["field"] == field
    assert message in response.json()["detail"]
    assert stored() == before


def test_the_openapi_document_says_what_is_refused(api):
    document = send(api, "GET", "/openapi.json").json()
    described = document["info"]["description"]
    assert "has an object with a key twice" in described
    assert "a NUL character" in described and "lone UTF-16" in described
    for path, operations in document["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["name"] == "thread_id":
                    assert parameter["schema"]["maxLength"] == THREAD_ID_MAX_LENGTH, path


def test_the_engine_refuses_alike_whoever_calls_it():
    """What the console and graphs hand ``durable.engine`` meets the same check, and a
    name too long for the table is a bad name, not a busy thread."""
    refusals = [
        (
            lambda: engine.start("expense_approval", {**EXPENSE, "employee": "\ud800"}),
            "input.employee",
        ),
        (lambda: engine.create_thread(None, metadata={"k": ["\x00"]}), "metadata.k.0"),
        (lambda: engine.create_thread(None, name="a\x00b"), "name"),
        (lambda: engine.create_thread(None, name=LONG), "name"),
        (lambda: engine.start("expense_approval", EXPENSE, name=LONG), "name"),
    ]
    for call, field in refusals:
        with pytest.raises(engine.InvalidRequest) as refused:
            call()
        assert refused.value.field == field
    assert stored() == ((0, 0, 0), [], [])
