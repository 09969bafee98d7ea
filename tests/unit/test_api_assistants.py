"""Stored assistants over the API (Django's test client, no worker): create, versions,
set latest, search and count beside the registered graphs' default assistants, the
refusals that name their field and store nothing, another tenant's assistant a 404,
the audit trail, and a run on an assistant recording its config, context and version."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from durable.models import Assistant, AssistantVersion, AuditEvent, Role, Run, Tenant
from durable.tenancy import create_token

pytestmark = pytest.mark.django_db


class Api:
    def __init__(self, key: str):
        self.key = key

    def __call__(self, method: str, path: str, body=None):
        response = Client().generic(
            method,
            f"/api{path}",
            data=b"" if body is None else json.dumps(body),
            content_type="application/json",
            HTTP_X_API_KEY=self.key,
        )
        return response.status_code, (response.json() if response.content else None)


@pytest.fixture
def api(db) -> Api:
    return Api(create_token(Tenant.default(), "tests")[1])


def stored() -> tuple:
    return (
        list(Assistant.objects.values_list("assistant_id", "version")),
        AssistantVersion.objects.count(),
        Run.objects.count(),
    )


def test_create_change_and_set_back_an_assistant(api):
    status, made = api(
        "POST",
        "/assistants",
        {
            "graph_id": "options",
            "config": {"configurable": {"user": "ann", "x": 1}, "tags": ["t-a"]},
            "context": {"user": "ann"},
            "metadata": {"team": "ops"},
            "name": "Ann's options",
        },
    )
    assert status == 200, made
    assert uuid.UUID(made["assistant_id"])
    assert made["graph_id"] == "options" and made["version"] == 1
    assert made["config"] == {"configurable": {"user": "ann", "x": 1}, "tags": ["t-a"]}
    assert made["context"] == {"user": "ann"} and made["description"] is None
    aid = made["assistant_id"]

    status, changed = api(
        "PATCH", f"/assistants/{aid}", {"metadata": {"tier": 2}, "context": {"user": "bob"}}
    )
    assert status == 200, changed
    assert changed["version"] == 2
    assert changed["metadata"] == {"team": "ops", "tier": 2}
    assert changed["context"] == {"user": "bob"}
    assert changed["config"] == made["config"] and changed["name"] == "Ann's options"

    status, versions = api("POST", f"/assistants/{aid}/versions", {})
    assert [(v["version"], v["context"]) for v in versions] == [
        (2, {"user": "bob"}),
        (1, {"user": "ann"}),
    ]
    status, found = api("POST", f"/assistants/{aid}/versions", {"metadata": {"tier": 2}})
    assert [v["version"] for v in found] == [2]

    status, back = api("POST", f"/assistants/{aid}/latest", {"version": 1})
    assert status == 200 and back["version"] == 1 and back["context"] == {"user": "ann"}
    assert api("GET", f"/assistants/{aid}")[1]["context"] == {"user": "ann"}
    actions = list(AuditEvent.objects.order_by("pk").values_list("action", flat=True))
    assert actions == ["assistant_create", "assistant_update", "assistant_set_latest"]
    assert AuditEvent.objects.first().detail["assistant_id"] == aid

    assert api("DELETE", f"/assistants/{aid}")[0] == 204
    assert api("GET", f"/assistants/{aid}")[0] == 404
    assert AssistantVersion.objects.count() == 0


def test_search_and_count_list_the_graphs_first_then_the_stored(api):
    _, one = api("POST", "/assistants", {"graph_id": "expense_approval", "name": "Small claims"})
    _, two = api(
        "POST",
        "/assistants",
        {"graph_id": "email_reply", "name": "Support", "metadata": {"team": "help"}},
    )
    status, found = api("POST", "/assistants/search", {"limit": 1000})
    ids = [a["assistant_id"] for a in found]
    graphs = [a["assistant_id"] for a in found if a["assistant_id"] == a["name"]]
    assert ids == [*graphs, two["assistant_id"], one["assistant_id"]]
    assert "expense_approval" in graphs
    _, by_meta = api("POST", "/assistants/search", {"metadata": {"team": "help"}})
    assert [a["assistant_id"] for a in by_meta] == [two["assistant_id"]]
    _, by_name = api(
        "POST", "/assistants/search", {"name": "small", "graph_id": "expense_approval"}
    )
    assert [a["name"] for a in by_name] == ["Small claims"]
    _, chosen = api(
        "POST", "/assistants/search", {"metadata": {"team": "help"}, "select": ["name"]}
    )
    assert chosen == [{"name": "Support"}]
    assert api("POST", "/assistants/count", {"graph_id": "email_reply"})[1] == 2
    assert api("POST", "/assistants/count", {})[1] == len(graphs) + 2
    _, paged = api("POST", "/assistants/search", {"offset": len(graphs), "limit": 1})
    assert [a["assistant_id"] for a in paged] == [two["assistant_id"]]


def test_a_graph_is_its_own_default_assistant_with_one_version(api):
    status, got = api("GET", "/assistants/expense_approval")
    assert status == 200 and got["version"] == 1 and got["config"] == {}
    assert [v["version"] for v in api("POST", "/assistants/expense_approval/versions")[1]] == [1]
    status, refused = api("PATCH", "/assistants/expense_approval", {"name": "x"})
    assert status == 409 and refused["field"] == "assistant_id"
    assert api("DELETE", "/assistants/expense_approval")[0] == 409
    assert not Assistant.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"graph_id": "nope"}, "graph_id"),
        (
            {"graph_id": "options", "config": {"configurable": {"user": 5}}},
            "config.configurable.user",
        ),
        ({"graph_id": "options", "config": {"recursion_limit": 0}}, "config.recursion_limit"),
        ({"graph_id": "options", "config": {"callbacks": []}}, "config"),
        ({"graph_id": "options", "context": {"nobody": 1}}, "context"),
        ({"graph_id": "options", "assistant_id": "not-a-uuid"}, "assistant_id"),
        ({"graph_id": "options", "name": ""}, "name"),
    ],
)
def test_bad_input_is_a_422_naming_the_field_and_stores_nothing(api, body, field):
    before = stored()
    status, refused = api("POST", "/assistants", body)
    assert status == 422, refused
    assert refused["field"] == field
    assert stored() == before and not AuditEvent.objects.exists()


def test_a_patch_the_graph_refuses_makes_no_version(api):
    _, made = api("POST", "/assistants", {"graph_id": "options"})
    before = stored()
    status, refused = api(
        "PATCH", f"/assistants/{made['assistant_id']}", {"config": {"configurable": {"user": []}}}
    )
    assert status == 422 and refused["field"] == "config.configurable.user"
    status, refused = api("POST", f"/assistants/{made['assistant_id']}/latest", {"version": 9})
    assert status == 422 and refused["field"] == "version"
    assert stored() == before


def test_an_existing_id_is_a_409_or_given_back(api):
    aid = str(uuid.uuid4())
    api("POST", "/assistants", {"graph_id": "options", "assistant_id": aid, "name": "one"})
    status, refused = api("POST", "/assistants", {"graph_id": "options", "assistant_id": aid})
    assert status == 409 and refused["field"] == "assistant_id"
    again = {"graph_id": "chat", "assistant_id": aid, "if_exists": "do_nothing"}
    status, same = api("POST", "/assistants", again)
    assert status == 200 and same["name"] == "one" and same["graph_id"] == "options"


def test_another_tenants_assistant_is_a_404(api):
    _, made = api("POST", "/assistants", {"graph_id": "options"})
    globex = Tenant.objects.create(slug="globex", name="Globex")
    other = Api(create_token(globex, "theirs")[1])
    aid = made["assistant_id"]
    before = stored()
    assert other("GET", f"/assistants/{aid}")[0] == 404
    assert other("PATCH", f"/assistants/{aid}", {"name": "mine"})[0] == 404
    assert other("DELETE", f"/assistants/{aid}")[0] == 404
    assert other("POST", f"/assistants/{aid}/latest", {"version": 1})[0] == 404
    assert other("POST", f"/assistants/{aid}/versions", {})[0] == 404
    status, refused = other("POST", "/runs", {"assistant_id": aid, "input": {}})
    assert status == 404 and refused["field"] == "assistant_id"
    assert other("POST", "/assistants/count", {})[1] == api("POST", "/assistants/count")[1] - 1
    assert stored() == before


def test_a_viewer_reads_assistants_and_changes_none(api):
    _, made = api("POST", "/assistants", {"graph_id": "options"})
    viewer = Api(create_token(Tenant.default(), "viewer", role=Role.VIEWER)[1])
    before = stored()
    assert viewer("GET", f"/assistants/{made['assistant_id']}")[0] == 200
    assert viewer("POST", "/assistants", {"graph_id": "options"})[0] == 403
    assert viewer("PATCH", f"/assistants/{made['assistant_id']}", {"name": "v"})[0] == 403
    assert viewer("DELETE", f"/assistants/{made['assistant_id']}")[0] == 403
    assert stored() == before


def test_a_run_on_an_assistant_takes_its_config_under_its_own(api):
    _, made = api(
        "POST",
        "/assistants",
        {
            "graph_id": "options",
            "config": {"configurable": {"x": 1, "user": "ann"}, "tags": ["t-a"]},
            "context": {"user": "ann"},
        },
    )
    aid = made["assistant_id"]
    api("PATCH", f"/assistants/{aid}", {"config": {"configurable": {"x": 2, "user": "ann"}}})
    body = {"assistant_id": aid, "input": {}, "config": {"configurable": {"y": 3}}}
    status, run = api("POST", "/runs", body | {"on_completion": "keep"})
    assert status == 200, run
    assert run["assistant_id"] == aid and run["assistant_version"] == 2
    row = Run.objects.get(pk=run["run_id"])
    assert row.config == {"configurable": {"x": 2, "user": "ann", "y": 3}}
    assert row.context == {"user": "ann"}
    assert row.assistant.assistant_id == uuid.UUID(aid) and row.graph == "options"
    # The run's own keys win over the assistant's.
    _, own = api("POST", "/runs", body | {"context": {"user": "bob"}, "on_completion": "keep"})
    assert Run.objects.get(pk=own["run_id"]).context == {"user": "bob"}
    # A graph's name runs it with the run's config alone, as before.
    _, plain = api("POST", "/runs", {"assistant_id": "options", "input": {}})
    assert plain["assistant_id"] == "options" and plain["assistant_version"] is None
    assert Run.objects.get(pk=plain["run_id"]).config == {}


def test_deleting_an_assistant_with_its_threads(api):
    _, made = api("POST", "/assistants", {"graph_id": "options"})
    aid = made["assistant_id"]
    _, on_it = api("POST", "/runs", {"assistant_id": aid, "input": {}, "on_completion": "keep"})
    _, other = api(
        "POST", "/runs", {"assistant_id": "options", "input": {}, "on_completion": "keep"}
    )
    Run.objects.update(status=Run.Status.SUCCESS)
    assert api("DELETE", f"/assistants/{aid}?delete_threads=true")[0] == 204
    assert api("GET", f"/threads/{on_it['thread_id']}")[0] == 404
    assert api("GET", f"/threads/{other['thread_id']}")[0] == 200
    deleted = AuditEvent.objects.filter(action="delete").get()
    assert deleted.thread_name == on_it["thread_id"] and aid in deleted.reason


def test_a_thread_names_the_assistant_its_latest_run_was_on(api):
    _, made = api("POST", "/assistants", {"graph_id": "options"})
    aid = made["assistant_id"]
    _, on_it = api("POST", "/runs", {"assistant_id": aid, "input": {}, "on_completion": "keep"})
    _, plain = api(
        "POST", "/runs", {"assistant_id": "options", "input": {}, "on_completion": "keep"}
    )
    _, thread = api("GET", f"/threads/{on_it['thread_id']}")
    assert thread["metadata"] == {"graph_id": "options", "assistant_id": aid}
    assert api("GET", f"/threads/{plain['thread_id']}")[1]["metadata"]["assistant_id"] == "options"
    # As Agent Chat UI finds a stored assistant's threads: by its id in the metadata.
    _, found = api("POST", "/threads/search", {"metadata": {"assistant_id": aid}})
    assert [t["thread_id"] for t in found] == [on_it["thread_id"]]
    _, by_graph = api("POST", "/threads/search", {"metadata": {"assistant_id": "options"}})
    assert {t["thread_id"] for t in by_graph} == {on_it["thread_id"], plain["thread_id"]}
    # A client may send back the metadata it read.
    status, _ = api("PATCH", f"/threads/{on_it['thread_id']}", {"metadata": thread["metadata"]})
    assert status == 200
