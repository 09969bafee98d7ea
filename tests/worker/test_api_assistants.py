"""Stored assistants through the official ``langgraph-sdk`` client against the live
server and worker: every ``client.assistants.*`` call, and runs on an assistant whose
config and context reach the graph (``options`` logs what it was given)."""

from __future__ import annotations

import uuid

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from durable.graphs import graph_names
from durable.models import Assistant, AssistantVersion, Tenant
from durable.tenancy import create_token

pytestmark = pytest.mark.django_db(transaction=True)

CONFIG = {"configurable": {"x": 1, "user": "ann"}, "tags": ["t-a"]}


@pytest.fixture
def client(web, api_key):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk:
        yield sdk


def test_every_assistants_call_of_the_sdk(client):
    made = client.assistants.create(
        "options",
        CONFIG,
        context={"user": "ann"},
        metadata={"team": "ops"},
        name="Ann",
        description="Ann's runs",
    )
    aid = made["assistant_id"]
    assert uuid.UUID(aid) and made["version"] == 1 and made["graph_id"] == "options"
    assert made["description"] == "Ann's runs"
    assert client.assistants.get(aid) == made

    changed = client.assistants.update(aid, context={"user": "bob"}, metadata={"tier": 2})
    assert changed["version"] == 2 and changed["context"] == {"user": "bob"}
    assert changed["metadata"] == {"team": "ops", "tier": 2}
    versions = client.assistants.get_versions(aid)
    assert [(v["version"], v["context"]["user"]) for v in versions] == [(2, "bob"), (1, "ann")]
    back = client.assistants.set_latest(aid, 1)
    assert back["version"] == 1 and back["context"] == {"user": "ann"}

    found = client.assistants.search(metadata={"team": "ops"})
    assert [a["assistant_id"] for a in found] == [aid]
    every = client.assistants.search(limit=100)
    assert [a["assistant_id"] for a in every] == [*graph_names(), aid]
    page = client.assistants.search(graph_id="options", response_format="object")
    assert [a["assistant_id"] for a in page["assistants"]] == ["options", aid]
    named = client.assistants.search(name="ANN", select=["assistant_id", "name"])
    assert named == [{"assistant_id": aid, "name": "Ann"}]
    assert client.assistants.count(graph_id="options") == 2
    assert client.assistants.count(metadata={"tier": 2}) == 0  # version 1 is the latest

    assert client.assistants.get_graph(aid) == client.assistants.get_graph("options")
    schemas = client.assistants.get_schemas(aid)
    assert schemas["graph_id"] == "options"
    assert schemas["config_schema"]["properties"]["configurable"]
    assert client.assistants.get_subgraphs(aid) == {}

    client.assistants.delete(aid)
    with pytest.raises(NotFoundError, match=f"Assistant '{aid}' not found"):
        client.assistants.get(aid)
    assert not AssistantVersion.objects.exists()


def test_an_existing_id_and_bad_input(client):
    aid = str(uuid.uuid4())
    client.assistants.create("options", assistant_id=aid, name="first")
    with pytest.raises(ConflictError, match="already exists"):
        client.assistants.create("options", assistant_id=aid)
    same = client.assistants.create("chat", assistant_id=aid, if_exists="do_nothing")
    assert same["name"] == "first" and same["graph_id"] == "options"
    with pytest.raises(UnprocessableEntityError) as unknown:
        client.assistants.create("nope")
    assert unknown.value.response.json()["field"] == "graph_id"
    with pytest.raises(UnprocessableEntityError) as refused:
        client.assistants.update(aid, config={"configurable": {"user": 7}})
    assert refused.value.response.json()["field"] == "config.configurable.user"
    assert Assistant.objects.get().version == 1 and AssistantVersion.objects.count() == 1


def test_another_tenants_assistant_is_not_found(client, web):
    aid = client.assistants.create("options")["assistant_id"]
    key = create_token(Tenant.objects.create(slug="globex", name="Globex"), "theirs")[1]
    with get_sync_client(url=f"{web.url}/api", api_key=key) as theirs:
        with pytest.raises(NotFoundError):
            theirs.assistants.get(aid)
        with pytest.raises(httpx.HTTPStatusError) as refused:
            theirs.runs.wait(None, aid, input={})
        assert refused.value.response.status_code == 404
        assert theirs.assistants.search(graph_id="options") != []  # the graph's own
        assert aid not in [a["assistant_id"] for a in theirs.assistants.search(limit=100)]


def test_a_run_on_an_assistant_gets_its_config_and_context_under_its_own(client, worker):
    aid = client.assistants.create("options", CONFIG, context={"user": "ann"})["assistant_id"]
    client.assistants.update(aid, config={"configurable": {"x": 2}, "tags": ["t-a"]})
    thread = client.threads.create()
    out = client.runs.wait(
        thread["thread_id"], aid, input={}, config={"configurable": {"y": 3}, "tags": ["t-b"]}
    )
    # Version 2's config (x=2, its tags replaced by the run's) and version 1's context.
    assert out["log"][:3] == ["x=2", "own_thread=True", "user=ann"]
    assert out["log"][3] == "tags=t-b"
    [run] = client.runs.list(thread["thread_id"])
    assert run["assistant_id"] == aid and run["assistant_version"] == 2

    # The run's own context wins; a stateless run takes the assistant too.
    own = client.runs.wait(None, aid, input={}, context={"user": "bob"})
    assert own["log"][:3] == ["x=2", "own_thread=True", "user=bob"]
    # The graph's name runs it as before, with nothing of the assistant's.
    plain = client.runs.wait(None, "options", input={})
    assert plain["log"][:3] == ["x=None", "own_thread=True", "user=None"]
