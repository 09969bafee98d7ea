"""Tenants and API tokens over HTTP, against the console served by uvicorn (``web``):
a token is stored hashed and can be revoked, a viewer's token reads only, and two
tenants' threads and store items never meet."""

from __future__ import annotations

import httpx
import pytest
from django.db import connection
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import NotFoundError

from durable.models import ApiToken, Role, StoreItem, Tenant, Thread
from durable.tenancy import create_token, revoke
from tests.helpers.threads import at_interrupt, everything

pytestmark = pytest.mark.django_db(transaction=True)


def test_api_tokens_are_stored_hashed_and_can_be_revoked(web):
    row, token = create_token(Tenant.default(), "ci")
    stored = ApiToken.objects.filter(pk=row.pk).values_list("digest", "prefix").get()
    assert token not in stored and token.startswith(stored[1])
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM durable_apitoken")
        assert not any(token in str(cell) for r in cursor.fetchall() for cell in r)
    url = f"{web.url}/api/threads/search"
    assert httpx.post(url, json={}, headers={"x-api-key": token}).status_code == 200
    for headers in ({}, {"x-api-key": "dur_not-a-token"}, {"x-api-key": token + "x"}):
        refused = httpx.post(url, json={}, headers=headers)
        assert refused.status_code == 401
        assert refused.json()["field"] == "x-api-key"
    assert revoke(row)
    assert httpx.post(url, json={}, headers={"x-api-key": token}).status_code == 401


def test_two_tenants_use_the_same_thread_id_without_seeing_each_other(web, globex):
    ours = create_token(Tenant.default(), "ours")[1]
    theirs = create_token(globex, "theirs")[1]
    with (
        get_sync_client(url=f"{web.url}/api", api_key=ours) as a,
        get_sync_client(url=f"{web.url}/api", api_key=theirs) as b,
    ):
        a.threads.create(thread_id="order-1", metadata={"owner": "default"})
        b.threads.create(thread_id="order-1", metadata={"owner": "globex"})
        assert a.threads.get("order-1")["metadata"]["owner"] == "default"
        assert b.threads.get("order-1")["metadata"]["owner"] == "globex"
        a.threads.create(thread_id="only-ours")
        with pytest.raises(NotFoundError):
            b.threads.get("only-ours")
        with pytest.raises(NotFoundError):
            b.threads.get_state("only-ours")
        assert [t["thread_id"] for t in b.threads.search()] == ["order-1"]
    keys = set(Thread.objects.filter(name="order-1").values_list("thread_id", flat=True))
    assert len(keys) == 2 and "order-1" not in keys  # filed apart by the checkpointer


def test_a_viewers_token_reads_but_cannot_act(web):
    thread = at_interrupt()
    token = create_token(Tenant.default(), "dashboards", role=Role.VIEWER)[1]
    api = f"{web.url}/api/threads/{thread.name}"
    headers = {"x-api-key": token}
    assert httpx.get(api, headers=headers).status_code == 200
    before = everything()
    for method, url, body in (
        ("POST", f"{api}/runs", {"assistant_id": "expense_approval", "command": {"resume": 1}}),
        ("POST", f"{api}/state", {"values": {"amount": 1}}),
        ("DELETE", api, None),
        ("POST", f"{web.url}/api/threads", {}),
    ):
        response = httpx.request(method, url, json=body, headers=headers)
        assert response.status_code == 403, (method, url, response.text)
    assert everything() == before


def test_api_store_routes_stay_under_the_tenants_prefix(web, globex):
    ours = create_token(Tenant.default(), "ours")[1]
    theirs = create_token(globex, "theirs")[1]
    with (
        get_sync_client(url=f"{web.url}/api", api_key=ours) as a,
        get_sync_client(url=f"{web.url}/api", api_key=theirs) as b,
    ):
        a.store.put_item(["prefs", "ann"], key="theme", value={"mode": "dark"})
        b.store.put_item(["prefs", "ann"], key="theme", value={"mode": "light"})
        assert a.store.get_item(["prefs", "ann"], key="theme")["value"] == {"mode": "dark"}
        assert b.store.get_item(["prefs", "ann"], key="theme")["value"] == {"mode": "light"}
        found = a.store.search_items(["prefs"])["items"]
        assert [(i["namespace"], i["value"]) for i in found] == [
            (["prefs", "ann"], {"mode": "dark"})
        ]
        assert a.store.list_namespaces()["namespaces"] == [["prefs", "ann"]]
        # Naming the other tenant's prefix only reaches a namespace under one's own.
        assert a.store.get_item(["globex", "prefs", "ann"], key="theme") is None
        a.store.delete_item(["prefs", "ann"], key="theme")
        assert b.store.get_item(["prefs", "ann"], key="theme")["value"] == {"mode": "light"}
    stored = set(StoreItem.objects.values_list("namespace", flat=True))
    assert stored == {"globex.prefs.ann"}
    viewer = create_token(Tenant.default(), "viewer", role=Role.VIEWER)[1]
    refused = httpx.put(
        f"{web.url}/api/store/items",
        json={"namespace": ["x"], "key": "k", "value": {}},
        headers={"x-api-key": viewer},
    )
    assert refused.status_code == 403
