"""A registered graph's nodes reach the store in the worker, and only their thread's
tenant's part of it (``examples/preferences.py``): what one thread remembers, a later
thread of the same tenant reads back; another tenant's threads, with the same user id,
neither see it nor overwrite it; the API's ``/store`` shows it to its tenant alone."""

from __future__ import annotations

import pytest
from langgraph_sdk import get_sync_client

from durable import engine
from durable.models import Run, StoreItem, Tenant, Thread
from durable.tenancy import create_token
from tests.helpers.runs import finished

pytestmark = pytest.mark.django_db(transaction=True)

NAMESPACE = ["users", "ada"]


def greeted(run: Run) -> tuple[Thread, dict]:
    """The thread of ``run`` once the worker has ended it, and its final values."""
    run = finished(run)
    assert run.status == Run.Status.SUCCESS, run.error_message
    thread = Thread.objects.get(pk=run.thread_pk)
    return thread, engine.thread_state(thread).values


def test_a_preference_remembered_on_one_thread_is_read_on_another_of_its_tenant_only(
    worker, web, globex
):
    ours = Tenant.default()
    first, told = greeted(engine.start("preferences", {"user_id": "ada", "language": "fr"}))
    assert told["greeting"] == "Bonjour, ada."

    second, later = greeted(engine.start("preferences", {"user_id": "ada"}))
    assert second.pk != first.pk and second.tenant == ours
    assert later == {"user_id": "ada", "language": "fr", "greeting": "Bonjour, ada."}

    # Another tenant, the same user id: nothing remembered there...
    _, theirs = greeted(engine.start("preferences", {"user_id": "ada"}, tenant=globex))
    assert theirs == {"user_id": "ada", "language": "en", "greeting": "Hello, ada."}
    # ...and what it remembers stays its own.
    greeted(engine.start("preferences", {"user_id": "ada", "language": "de"}, tenant=globex))
    _, again = greeted(engine.start("preferences", {"user_id": "ada"}))
    assert again["greeting"] == "Bonjour, ada."
    _, theirs = greeted(engine.start("preferences", {"user_id": "ada"}, tenant=globex))
    assert theirs["greeting"] == "Hallo, ada."
    assert sorted(StoreItem.objects.values_list("namespace", flat=True)) == [
        "default.users.ada",
        "globex.users.ada",
    ]

    ours_token = create_token(ours, "ours")[1]
    with get_sync_client(url=f"{web.url}/api", api_key=ours_token) as api:
        assert api.store.get_item(NAMESPACE, "preferences")["value"] == {"language": "fr"}
        [item] = api.store.search_items(["users"])["items"]
        assert item["namespace"] == NAMESPACE and item["value"] == {"language": "fr"}


def test_another_tenants_api_does_not_see_what_a_graph_remembered(worker, web, globex):
    greeted(engine.start("preferences", {"user_id": "ada", "language": "fr"}))
    theirs = create_token(globex, "theirs")[1]
    with get_sync_client(url=f"{web.url}/api", api_key=theirs) as api:
        assert api.store.get_item(NAMESPACE, "preferences") is None
        assert api.store.search_items(["users"])["items"] == []
        assert api.store.list_namespaces()["namespaces"] == []
