"""DjangoStore's time to live: items expire after ``ttl`` minutes, reads refresh it,
``sweep_ttl`` deletes what has expired."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from langgraph.store.base import GetOp, PutOp

from durable.models import StoreItem
from tests.helpers.stores import keys

pytestmark = pytest.mark.django_db(transaction=True)


def expire(**lookup):
    """Make matching rows expired, as if their TTL had run out."""
    StoreItem.objects.filter(**lookup).update(expires_at=timezone.now() - timedelta(seconds=1))


def test_ttl_is_minutes_and_expired_items_are_never_returned(make_django):
    store = make_django()
    before = timezone.now()
    store.put(("t",), "short", {"v": 1}, ttl=0.5)
    store.put(("t",), "forever", {"v": 2})
    row = StoreItem.objects.get(key="short")
    assert row.ttl_minutes == 0.5
    assert before + timedelta(seconds=29) < row.expires_at < timezone.now() + timedelta(seconds=31)
    assert StoreItem.objects.get(key="forever").expires_at is None
    store.put(("gone",), "x", {"v": 3}, ttl=5)
    expire(key="short")
    expire(key="x")
    assert store.get(("t",), "short") is None
    assert keys(store.search(("t",))) == ["forever"]
    assert store.list_namespaces() == [("t",)]
    assert StoreItem.objects.count() == 3  # still there until swept


def test_one_batch_mixes_whole_fractional_and_no_ttls(make_django):
    # PostgreSQL receives each column of a put batch as one typed array.
    store = make_django()
    store.batch(
        [
            PutOp(("t",), "whole", {"v": 1}, ttl=2),
            PutOp(("t",), "half", {"v": 2}, ttl=0.5),
            PutOp(("t",), "untimed", {"v": 3}),
        ]
    )
    ttls = dict(StoreItem.objects.values_list("key", "ttl_minutes"))
    assert ttls == {"whole": 2.0, "half": 0.5, "untimed": None}
    assert [store.get(("t",), key).value for key in ttls] == [{"v": 1}, {"v": 2}, {"v": 3}]


def test_a_fractional_ttl_runs_out_on_its_own(make_django):
    store = make_django()
    store.put(("t",), "k", {"v": 1}, ttl=0.001)  # 60 ms
    time.sleep(0.15)
    assert store.get(("t",), "k") is None


def test_put_over_an_expired_item_makes_a_new_item(make_django):
    store = make_django()
    store.put(("t",), "k", {"v": 1}, ttl=1)
    StoreItem.objects.filter(key="k").update(
        created_at=timezone.now() - timedelta(days=1), expires_at=timezone.now()
    )
    store.put(("t",), "k", {"v": 2})
    item = store.get(("t",), "k")
    assert item.value == {"v": 2}
    assert item.created_at > timezone.now() - timedelta(minutes=1)
    assert StoreItem.objects.get(key="k").expires_at is None


def _soon():
    return timezone.now() + timedelta(seconds=5)


def _expires_at(key):
    return StoreItem.objects.get(key=key).expires_at


def test_reads_refresh_ttl_by_default(make_django):
    store = make_django(ttl={"default_ttl": 1})
    store.put(("t",), "a", {"v": 1})
    store.put(("t",), "b", {"v": 2})
    StoreItem.objects.update(expires_at=_soon())
    store.get(("t",), "a")
    assert _expires_at("a") > timezone.now() + timedelta(seconds=55)
    assert _expires_at("b") < timezone.now() + timedelta(seconds=6)
    store.search(("t",), filter={"v": 2})
    assert _expires_at("b") > timezone.now() + timedelta(seconds=55)


def test_refresh_on_read_off_and_per_op_override(make_django):
    store = make_django(ttl={"default_ttl": 1, "refresh_on_read": False})
    store.put(("t",), "a", {"v": 1})
    store.put(("t",), "untimed", {"v": 2}, ttl=None)
    StoreItem.objects.filter(key="a").update(expires_at=_soon())
    store.get(("t",), "a")
    store.search(("t",))
    assert _expires_at("a") < timezone.now() + timedelta(seconds=6)
    store.get(("t",), "a", refresh_ttl=True)
    assert _expires_at("a") > timezone.now() + timedelta(seconds=55)
    StoreItem.objects.filter(key="a").update(expires_at=_soon())
    store.search(("t",), refresh_ttl=True)
    assert _expires_at("a") > timezone.now() + timedelta(seconds=55)
    assert _expires_at("untimed") is None  # reads never give an untimed item a TTL
    store.batch([GetOp(("t",), "a", refresh_ttl=False)])
    StoreItem.objects.filter(key="a").update(expires_at=_soon())
    store.batch([GetOp(("t",), "a", refresh_ttl=False)])
    assert _expires_at("a") < timezone.now() + timedelta(seconds=6)


def test_sweep_deletes_expired_items_in_batches(make_django):
    store = make_django()
    store.batch([PutOp(("s",), f"old{i}", {"i": i}, ttl=1) for i in range(25)])
    store.batch([PutOp(("s",), f"live{i}", {"i": i}, ttl=1) for i in range(2)])
    store.put(("s",), "untimed", {"i": 0})
    expire(key__startswith="old")
    with CaptureQueriesContext(connections["default"]) as queries:
        assert store.sweep_ttl(batch_size=10) == 25
    deletes = [q for q in queries.captured_queries if q["sql"].startswith("DELETE")]
    assert len(deletes) == 3
    assert sorted(StoreItem.objects.values_list("key", flat=True)) == ["live0", "live1", "untimed"]
    assert store.sweep_ttl() == 0
    with pytest.raises(ValueError, match="batch_size"):
        store.sweep_ttl(batch_size=0)


def test_async_sweep(make_django):
    store = make_django()
    store.put(("s",), "old", {"v": 1}, ttl=1)
    expire(key="old")
    assert asyncio.run(store.asweep_ttl()) == 1
