"""The console's store browser through Django's test client: the namespace tree of
the operator's tenant, filters, and reads that leave time to live alone."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboard.forms import parse_filter
from durable.models import StoreItem
from durable.persistence.store import DjangoStore, ScopedStore

pytestmark = pytest.mark.django_db(transaction=True)

# -- the store browser ---------------------------------------------------------------------


def test_the_store_browser_shows_the_namespace_tree_and_filters_items(client):
    store = ScopedStore(DjangoStore(), ("default",))  # the operator's tenant's part
    store.put(("users", "ada"), "prefs", {"theme": "dark", "size": 3})
    store.put(("users", "bob"), "prefs", {"theme": "light", "size": 1})
    store.put(("docs",), "readme", {"title": "Hello"})

    page = client.get(reverse("store")).content.decode()
    for label in ("users", "ada", "bob", "docs"):
        assert f">{label}</a>" in page
    assert page.count("<code>prefs</code>") == 2

    under = client.get(reverse("store"), {"ns": "users"}).content.decode()
    assert "readme" not in under and under.count("<code>prefs</code>") == 2
    for text in ("theme=dark", '{"size": {"$gt": 2}}'):
        found = client.get(reverse("store"), {"ns": "users", "filter": text}).content.decode()
        assert "<code>users.ada</code>" in found and "<code>users.bob</code>" not in found


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{bad", "filter: not valid JSON"),
        ("theme", "filter: &#x27;theme&#x27; is not key=value"),
        ('{"size": {"$near": 1}}', "filter: SearchOp.filter[&#x27;size&#x27;]: unknown operator"),
    ],
)
def test_a_bad_store_filter_is_explained(client, text, message):
    response = client.get(reverse("store"), {"filter": text})
    assert response.status_code == 400
    assert message in response.content.decode()


def test_browsing_the_store_does_not_refresh_time_to_live(client):
    ScopedStore(DjangoStore(ttl={"default_ttl": 60}), ("default",)).put(("tmp",), "k", {"v": 1})
    expires = StoreItem.objects.get().expires_at
    assert "tmp" in client.get(reverse("store"), {"ns": "tmp"}).content.decode()
    assert StoreItem.objects.get().expires_at == expires


def test_store_filters_parse_pairs_and_json():
    assert parse_filter("a=1, b = x\nc=true") == {"a": 1, "b": "x", "c": True}
    assert parse_filter(' {"a": {"$ne": 2}} ') == {"a": {"$ne": 2}}
    assert parse_filter("  ") is None
