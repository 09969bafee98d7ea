"""DjangoStore's values at rest: plain JSON without ``DURABLE_ENCRYPTION_KEY``,
encrypted (vectors too) with it, unreadable with another key."""

from __future__ import annotations

import pytest
from django.db import connections
from django.test.utils import override_settings

from durable.models import StoreItem
from durable.persistence.store import DjangoStore
from tests.helpers.stores import INDEX, KEY, keys

pytestmark = pytest.mark.django_db(transaction=True)


def raw_table_bytes() -> bytes:
    """Every column of every StoreItem row, as the database hands it back."""
    with connections["default"].cursor() as cursor:
        cursor.execute(f"SELECT * FROM {StoreItem._meta.db_table}")
        rows = cursor.fetchall()
    return b"".join(
        bytes(v) if isinstance(v, (bytes, memoryview)) else str(v).encode()
        for row in rows
        for v in row
    )


SECRET = "correct horse battery staple"


def test_values_are_plain_json_without_a_key():
    DjangoStore().put(("vault",), "k", {"secret": SECRET})
    assert SECRET.encode() in raw_table_bytes()  # so the check below means something


@override_settings(DURABLE_ENCRYPTION_KEY=KEY)
def test_encrypted_values_are_not_stored_in_plain_text():
    store = DjangoStore(index={**INDEX, "fields": ["secret"]})
    assert store.encrypted
    store.put(("vault",), "k", {"secret": SECRET, "n": 7})
    store.put(("vault",), "other", {"secret": "zzz", "n": 1})
    raw = raw_table_bytes()
    assert SECRET.encode() not in raw
    assert b"horse" not in raw
    row = StoreItem.objects.get(key="k")
    assert row.value is None and row.vectors is None and row.blob
    assert store.get(("vault",), "k").value == {"secret": SECRET, "n": 7}
    assert keys(store.search(("vault",), filter={"n": {"$gt": 5}})) == ["k"]
    assert keys(store.search(("vault",), query="horse battery")) == ["k", "other"]


def test_encrypted_values_need_the_key():
    with override_settings(DURABLE_ENCRYPTION_KEY=KEY):
        DjangoStore().put(("vault",), "k", {"secret": SECRET})
    with override_settings(DURABLE_ENCRYPTION_KEY="fedcba9876543210"):
        with pytest.raises(ValueError, match="MAC check failed"):
            DjangoStore().get(("vault",), "k")
