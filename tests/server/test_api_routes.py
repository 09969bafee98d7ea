"""The Agent Server routes the SDKs and UIs call beyond runs, through the official
``langgraph-sdk`` client against the console served by uvicorn (``web``), no worker:
the server's info, assistants' drawings and schemas, copying, pruning and patching
threads, deleting a run, and answers shaped as the SDK types them. Threads are run up
to their interrupt in this process (``tests.helpers.threads``)."""

from __future__ import annotations

import json

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from durable.models import AuditEvent, Checkpoint, Role, Run, Tenant, Thread
from durable.tenancy import create_token
from tests.helpers.threads import at_interrupt, counts, head, made_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(web, api_key):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk:
        yield sdk


def test_info_and_ok_answer_without_a_key(web):
    """Agent Chat UI calls /info before anything else; the Agent Server serves it and
    /ok outside its authenticated routes."""
    info = httpx.get(f"{web.url}/api/info")
    assert info.status_code == 200
    assert set(info.json()) == {"version", "langgraph_py_version", "flags", "metadata"}
    flags = info.json()["flags"]
    assert flags == {"assistants": True, "crons": True, "langsmith": False}
    assert httpx.get(f"{web.url}/api/ok").json() == {"ok": True}
    assert httpx.get(f"{web.url}/api/ok", params={"check_db": 1}).json() == {"ok": True}
    refused = httpx.get(f"{web.url}/api/ok", params={"check_db": 2})
    assert (refused.status_code, refused.json()["field"]) == (422, "check_db")


def test_info_says_crons_are_served_and_they_are(web, api_key):
    """A client such as Agent Chat UI hides its cron features when flags.crons is
    false: it is true, since /runs/crons is served."""
    assert httpx.get(f"{web.url}/api/info").json()["flags"]["crons"] is True
    found = httpx.post(f"{web.url}/api/runs/crons/search", json={}, headers={"x-api-key": api_key})
    assert found.status_code == 200 and found.json() == []


def test_a_keyed_request_may_send_json_as_text_plain(web, api_key):
    """Agent Chat UI's passthrough forwards JSON as text/plain: with the key header,
    which no cross-site form can set, the body is taken; a body that is not JSON is
    still refused as the wrong content type, and nothing is made."""
    url = f"{web.url}/api/threads"
    made = httpx.post(
        url,
        content=json.dumps({"thread_id": "plain", "metadata": {"via": "proxy"}}),
        headers={"Content-Type": "text/plain;charset=UTF-8", "x-api-key": api_key},
    )
    assert made.status_code == 200, made.text
    assert Thread.objects.get(name="plain").metadata == {"via": "proxy"}
    refused = httpx.post(
        url, content="thread_id=x", headers={"Content-Type": "text/plain", "x-api-key": api_key}
    )
    assert (refused.status_code, refused.json()["field"]) == (415, "body")
    anonymous = httpx.post(url, content="{}", headers={"Content-Type": "text/plain"})
    assert anonymous.status_code == 401
    assert Thread.objects.count() == 1


def test_assistants_draw_their_graph_and_give_their_schemas(client):
    drawn = client.assistants.get_graph("expense_approval")
    names = {n["id"] for n in drawn["nodes"]}
    assert {"__start__", "request_approval", "__end__"} <= names
    assert all("id" not in n.get("data", {}) for n in drawn["nodes"])
    assert {"source": "__start__", "target": "validate"} in [
        {k: e[k] for k in ("source", "target")} for e in drawn["edges"]
    ]
    # The nested graph's subgraphs appear in the drawing with xray.
    flat = {n["id"] for n in client.assistants.get_graph("nested")["nodes"]}
    deep = {n["id"] for n in client.assistants.get_graph("nested", xray=True)["nodes"]}
    assert "left:ask" in deep and "left:ask" not in flat
    assert client.assistants.get_graph("nested", xray=1)["nodes"]

    schemas = client.assistants.get_schemas("expense_approval")
    assert schemas["graph_id"] == "expense_approval"
    assert {"employee", "amount"} <= set(schemas["input_schema"]["properties"])
    assert "status" in schemas["state_schema"]["properties"]
    assert set(schemas) >= {"output_schema", "config_schema", "context_schema"}

    subgraphs = client.assistants.get_subgraphs("nested")
    assert set(subgraphs) == {"left", "right"}
    assert "answers" in subgraphs["left"]["state_schema"]["properties"]
    assert set(client.assistants.get_subgraphs("nested", namespace="left")) == {"left"}
    assert client.assistants.get_subgraphs("expense_approval") == {}

    assert client.assistants.count() == len(client.assistants.search(limit=100))
    assert client.assistants.count(graph_id="nested") == 1
    assert client.assistants.count(metadata={"team": "x"}) == 0
    with pytest.raises(NotFoundError):
        client.assistants.get_graph("nope")
    with pytest.raises(UnprocessableEntityError) as refused:
        client.http.get("/assistants/nested/graph", params={"xray": "deep"})
    assert refused.value.body["field"] == "xray"


def test_a_thread_carries_its_config_and_when_its_state_changed(client):
    thread = at_interrupt()
    got = client.threads.get(thread.name)
    assert got["config"] == {}
    state = client.threads.get_state(thread.name)
    assert got["state_updated_at"] == state["created_at"]
    bare = client.threads.create()
    assert bare["state_updated_at"] == bare["created_at"]


def test_history_takes_before_as_id_checkpoint_or_config(client):
    thread = at_interrupt()
    states = client.threads.get_history(thread.name, limit=10)
    newest = states[0]["checkpoint"]["checkpoint_id"]
    older = [s["checkpoint"]["checkpoint_id"] for s in states[1:]]
    for before in (
        newest,
        {"checkpoint_id": newest},
        {"configurable": {"checkpoint_id": newest}},
    ):
        found = client.http.post(
            f"/threads/{thread.name}/history", json={"before": before, "limit": 10}
        )
        assert [s["checkpoint"]["checkpoint_id"] for s in found] == older
    with pytest.raises(UnprocessableEntityError):
        client.threads.get_history(thread.name, before={"configurable": {"nope": 1}})


def test_a_subgraph_pointer_reads_as_the_subgraphs_latest_state(client):
    thread = _nested()
    state = client.threads.get_state(thread.name)
    pointers = [t["checkpoint"] for t in state["tasks"]]
    assert all(p["checkpoint_ns"] and p["checkpoint_id"] is None for p in pointers)
    pointer = pointers[0]
    sub = client.threads.get_state(thread.name, checkpoint=pointer)
    assert sub["next"] == ["ask"]
    assert sub["checkpoint"]["checkpoint_ns"] == pointer["checkpoint_ns"]
    assert sub["tasks"][0]["interrupts"][0]["value"]["question"].endswith("?")
    with pytest.raises(UnprocessableEntityError) as refused:
        client.threads.get_state(
            thread.name, checkpoint={"checkpoint_ns": "left:nope", "checkpoint_id": None}
        )
    assert refused.value.body["field"] == "checkpoint.checkpoint_ns"


def _nested() -> Thread:
    from durable import engine
    from durable.graphs import get_graph

    thread = engine.create_thread("nested")
    get_graph("nested").invoke({"answers": []}, engine.config_for(thread))
    return thread


def test_missing_store_items_are_null(client):
    assert client.store.get_item(["prefs"], key="nothing") is None
    client.store.put_item(["prefs"], "theme", {"mode": "dark"})
    assert client.store.get_item(["prefs"], key="theme")["value"] == {"mode": "dark"}


def test_copy_a_thread_with_its_history(client):
    thread = at_interrupt()
    thread.metadata = {"customer": "acme"}
    thread.save()
    copied = client.threads.copy(thread.name)
    assert copied["thread_id"] != thread.name
    assert copied["metadata"]["customer"] == "acme"
    assert copied["status"] == "interrupted"
    values = client.threads.get_state(thread.name)["values"]
    assert client.threads.get_state(copied["thread_id"])["values"] == values
    ours = [s["checkpoint"]["checkpoint_id"] for s in client.threads.get_history(thread.name)]
    theirs = [
        s["checkpoint"]["checkpoint_id"] for s in client.threads.get_history(copied["thread_id"])
    ]
    assert ours == theirs
    with pytest.raises(NotFoundError):
        client.threads.copy("nope")


def test_patch_state_merges_the_latest_checkpoints_metadata(client):
    thread = at_interrupt()
    checkpoint = head(thread)
    before = Checkpoint.objects.filter(thread_id=thread.thread_id).count()
    client.http.patch(f"/threads/{thread.name}/state", json={"metadata": {"reviewed": True}})
    state = client.threads.get_state(thread.name)
    assert state["checkpoint"]["checkpoint_id"] == checkpoint
    assert state["metadata"]["reviewed"] is True
    assert state["metadata"]["source"] == "loop"  # LangGraph's own keys stay
    assert Checkpoint.objects.filter(thread_id=thread.thread_id).count() == before
    event = AuditEvent.objects.get(action="patch_state")
    assert (event.thread_name, event.checkpoint_id) == (thread.name, checkpoint)
    bare = client.threads.create()
    with pytest.raises(UnprocessableEntityError) as refused:
        client.http.patch(f"/threads/{bare['thread_id']}/state", json={"metadata": {"a": 1}})
    assert refused.value.body["field"] == "checkpoint_id"
    with pytest.raises(UnprocessableEntityError) as refused:
        client.http.patch(f"/threads/{thread.name}/state", json={"metadata": [1]})
    assert refused.value.body["field"] == "metadata"


def test_prune_threads_deletes_or_keeps_the_latest(client):
    deleted, kept, elsewhere = at_interrupt(), at_interrupt(), at_interrupt()
    latest = head(kept)
    assert client.threads.prune([deleted.name, "nope"]) == {"pruned_count": 1}
    assert not Thread.objects.filter(pk=deleted.pk).exists()
    assert client.threads.prune([kept.name], strategy="keep_latest") == {"pruned_count": 1}
    assert Checkpoint.objects.filter(thread_id=kept.thread_id, checkpoint_ns="").count() == 1
    assert client.threads.get_state(kept.name)["checkpoint"]["checkpoint_id"] == latest
    assert Thread.objects.filter(pk=elsewhere.pk).exists()
    with pytest.raises(UnprocessableEntityError) as refused:
        client.threads.prune([kept.name], strategy="all")
    assert refused.value.body["field"] == "strategy"
    # A thread named "prune" could never be reached: POST /threads/prune is that route.
    with pytest.raises(UnprocessableEntityError, match="'prune'"):
        client.threads.create(thread_id="prune")


def test_delete_a_run_that_ended(client):
    running = made_run()
    ended = made_run(status=Run.Status.SUCCESS)
    with pytest.raises(ConflictError, match="cancel it before"):
        client.runs.delete(running.thread.name, str(running.pk))
    client.runs.delete(ended.thread.name, str(ended.pk))
    assert not Run.objects.filter(pk=ended.pk).exists()
    assert AuditEvent.objects.filter(action="delete", run_id=ended.pk).exists()
    with pytest.raises(NotFoundError):
        client.runs.delete(ended.thread.name, str(ended.pk))


def test_listing_runs_by_status_uses_the_sdks_names(client):
    cancelled = made_run(status=Run.Status.CANCELLED)
    name = cancelled.thread.name
    assert client.runs.get(name, str(cancelled.pk))["status"] == "interrupted"
    assert [r["run_id"] for r in client.runs.list(name, status="interrupted")] == [
        str(cancelled.pk)
    ]
    assert client.runs.list(name, status="cancelled") == []


def test_a_viewer_cannot_copy_prune_patch_or_delete(web):
    thread = at_interrupt()
    ended = made_run(status=Run.Status.SUCCESS)
    token = create_token(Tenant.default(), "dashboards", role=Role.VIEWER)[1]
    before = counts()
    with get_sync_client(url=f"{web.url}/api", api_key=token) as viewer:
        for call in (
            lambda: viewer.threads.copy(thread.name),
            lambda: viewer.threads.prune([thread.name]),
            lambda: viewer.http.patch(f"/threads/{thread.name}/state", json={"metadata": {}}),
            lambda: viewer.runs.delete(ended.thread.name, str(ended.pk)),
        ):
            with pytest.raises(httpx.HTTPStatusError) as refused:
                call()
            assert refused.value.response.status_code == 403
    assert counts() == before


def test_another_tenants_thread_is_not_found_by_the_new_routes(web, globex):
    thread = at_interrupt()
    theirs = create_token(globex, "theirs")[1]
    with get_sync_client(url=f"{web.url}/api", api_key=theirs) as other:
        with pytest.raises(NotFoundError):
            other.threads.copy(thread.name)
        with pytest.raises(NotFoundError):
            other.http.patch(f"/threads/{thread.name}/state", json={"metadata": {"a": 1}})
        assert other.threads.prune([thread.name]) == {"pruned_count": 0}
    assert Thread.objects.filter(pk=thread.pk).exists()
