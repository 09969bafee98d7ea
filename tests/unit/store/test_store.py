"""DjangoStore's get, put and delete, its batches, its async API and the input it
refuses, against LangGraph's InMemoryStore (the stores: ``tests.helpers.stores``)."""

from __future__ import annotations

import asyncio
import time

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from durable.models import StoreItem
from durable.persistence.store import DjangoStore
from tests.helpers.stores import INDEX, keys

pytestmark = pytest.mark.django_db(transaction=True)


# -- get, put, delete ---------------------------------------------------------------------


def test_put_get_delete(make):
    store = make()
    value = {"text": "hi", "n": 1, "nested": {"list": [1, 2.5, "x", None, True]}}
    store.put(("users", "u1"), "prefs", value)
    item = store.get(("users", "u1"), "prefs")
    assert (item.namespace, item.key, item.value) == (("users", "u1"), "prefs", value)
    assert item.created_at.tzinfo is not None and item.updated_at.tzinfo is not None
    assert store.get(("users", "u1"), "missing") is None
    assert store.get(("users",), "prefs") is None
    store.put(("users", "u1"), "prefs", {"text": "bye"})
    assert store.get(("users", "u1"), "prefs").value == {"text": "bye"}
    store.delete(("users", "u1"), "prefs")
    assert store.get(("users", "u1"), "prefs") is None
    store.delete(("users", "u1"), "prefs")  # deleting what is gone is fine


def test_update_keeps_created_at(make_django):
    # Differs from InMemoryStore, which stamps created_at anew on every put; PostgresStore
    # keeps it, and an item's creation time should not move when it changes.
    store = make_django()
    store.put(("docs",), "a", {"v": 1})
    first = store.get(("docs",), "a")
    store.put(("docs",), "a", {"v": 2})
    second = store.get(("docs",), "a")
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at


ODD = [
    ("user_1",),
    ("userX1",),
    ("a b", "ünï cødé", "100%"),
    ("Docs",),
    ("docs",),
    ("docsx",),
    ("back\\slash", "*", "sl/ash"),
    ('quote"s', "it's", "a!"),
    ("a",),
    ("a!",),
    ("a", "b"),
    ("DOCS", "sub"),
]


def test_namespaces_with_odd_characters(make):
    store = make()
    for i, namespace in enumerate(ODD):
        store.put(namespace, f"k{i}", {"i": i})
    for i, namespace in enumerate(ODD):
        assert store.get(namespace, f"k{i}").value == {"i": i}
    # A prefix matches whole labels, literally and case-sensitively.
    assert keys(store.search(("user_1",))) == ["k0"]
    assert keys(store.search(("docs",))) == ["k4"]
    assert keys(store.search(("Docs",))) == ["k3"]
    assert keys(store.search(("a b", "ünï cødé"))) == ["k2"]
    assert keys(store.search(("back\\slash", "*"))) == ["k6"]
    assert sorted(keys(store.search(("a",)))) == ["k10", "k8"]
    # Sorted as tuples: ("a", "b") before ("a!",), though "a!" < "a.b" as text.
    assert store.list_namespaces(limit=100) == sorted(ODD)
    assert store.list_namespaces(prefix=("user_1",)) == [("user_1",)]


def test_invalid_namespace_labels_are_refused(make_django):
    store = make_django()
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a.b",), "k", {"v": 1})])
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((), "k", {"v": 1})])
    with pytest.raises(InvalidNamespaceError):
        store.batch([SearchOp(("a", ""))])


# -- batches --------------------------------------------------------------------------------


def test_batch_results_in_op_order_reads_before_puts(make):
    store = make()
    store.put(("ns",), "old", {"v": 0})
    results = store.batch(
        [
            PutOp(("ns",), "new", {"v": 1}),
            GetOp(("ns",), "new"),
            GetOp(("ns",), "old"),
            PutOp(("ns",), "new", {"v": 2}),
            SearchOp(("ns",)),
            ListNamespacesOp(),
            PutOp(("ns",), "old", None),
        ]
    )
    assert results[0] is None and results[3] is None and results[6] is None
    assert results[1] is None  # reads see the store before the batch's puts
    assert results[2].value == {"v": 0}
    assert keys(results[4]) == ["old"]
    assert results[5] == [("ns",)]
    assert store.get(("ns",), "new").value == {"v": 2}  # the last put wins
    assert store.get(("ns",), "old") is None


def test_put_then_delete_in_one_batch(make):
    store = make()
    store.batch([PutOp(("ns",), "k", {"v": 1}), PutOp(("ns",), "k", None)])
    assert store.get(("ns",), "k") is None


# -- async ----------------------------------------------------------------------------------


def test_async_api(make):
    store = make(index=INDEX)

    async def scenario():
        await store.aput(("docs",), "a", {"text": "aaaa"})
        await store.aput(("docs", "sub"), "b", {"text": "bbbb"})
        got = await store.aget(("docs",), "a")
        found = await store.asearch(("docs",), query="b")
        namespaces = await store.alist_namespaces(prefix=("docs",))
        await store.adelete(("docs",), "a")
        return got, found, namespaces, await store.aget(("docs",), "a")

    got, found, namespaces, gone = asyncio.run(scenario())
    assert got.value == {"text": "aaaa"}
    assert keys(found) == ["b", "a"] and found[0].score == 1.0
    assert namespaces == [("docs",), ("docs", "sub")]
    assert gone is None


def test_abatch_does_not_block_the_event_loop(monkeypatch):
    store = DjangoStore()
    execute = DjangoStore._execute

    def slow_execute(self, *args):
        time.sleep(0.3)  # the database work, made slow
        return execute(self, *args)

    monkeypatch.setattr(DjangoStore, "_execute", slow_execute)

    async def scenario():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        await store.aput(("a",), "k", {"v": 1})
        item = await store.aget(("a",), "k")
        task.cancel()
        return ticks, item

    ticks, item = asyncio.run(scenario())
    assert item.value == {"v": 1}
    assert ticks >= 20  # ~60 expected over 0.6 s; a blocked loop would give 0 or 1


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, field",
    [
        (SearchOp(("docs",), limit=-1), "limit"),
        (SearchOp(("docs",), offset=-1), "offset"),
        (ListNamespacesOp(limit=-5), "limit"),
        (ListNamespacesOp(offset=-1), "offset"),
        (ListNamespacesOp(max_depth=0), "max_depth"),
        (ListNamespacesOp(match_conditions=(MatchCondition("infix", ("a",)),)), "match_type"),
        (SearchOp(("docs",), filter={"n": {"$regex": "x"}}), "filter"),
        (SearchOp(("docs",), filter={"n": {"$gt": [1]}}), "filter"),
        (SearchOp(("docs",), filter={"n": {"$lt": None}}), "filter"),
        (SearchOp(("docs",), filter={"n": {"$gt": float("inf")}}), "filter"),
        (SearchOp(("docs",), filter={"n": float("nan")}), "filter"),
        (PutOp(("docs",), "k", ["not", "a", "mapping"]), "value"),
        (PutOp(("docs",), "k", {"v": 1}, ttl=-1), "ttl"),
        # Text no database holds: PostgreSQL refuses NUL, and a lone surrogate has no UTF-8.
        (PutOp(("docs",), "k\x00", {"v": 1}), "key: holds a NUL"),
        (PutOp(("docs", "\ud800"), "k", {"v": 1}), "namespace: holds a lone UTF-16 surrogate"),
        (PutOp(("docs",), "k", {"v": ["ok", "\x00"]}), "value.v.1: holds a NUL"),
        (PutOp(("docs",), "k", {"\udfff": 1}), "value: the key"),
        (GetOp(("docs",), "\x00"), "key: holds a NUL"),
        (SearchOp(("docs",), filter={"a\x00": 1}), "filter: the key"),
        (SearchOp(("docs",), filter={"a": {"$eq": "\ud800"}}), "filter.a.\\$eq: holds a lone"),
        (SearchOp(("docs",), query="\ud800"), "query: holds a lone"),
        (ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("\x00",)),)), "namespace"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(make_django, op, field):
    # Differs from InMemoryStore, which slices with negative limits and offsets (counting
    # from the end) instead of refusing them.
    store = make_django()
    with pytest.raises(ValueError, match=field):
        store.batch([PutOp(("docs",), "written", {"v": 1}), op])
    assert StoreItem.objects.count() == 0


def test_bad_limit_through_the_public_methods(make_django):
    store = make_django()
    with pytest.raises(ValueError, match="SearchOp.limit"):
        store.search(("docs",), limit=-1)
    with pytest.raises(ValueError, match="SearchOp.offset"):
        asyncio.run(store.asearch(("docs",), offset=-1))
    with pytest.raises(ValueError, match="ListNamespacesOp.limit"):
        store.list_namespaces(limit=-1)
