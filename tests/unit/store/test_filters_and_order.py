"""DjangoStore's search filters, its paging and order, and ``list_namespaces``,
against LangGraph's InMemoryStore (the stores: ``tests.helpers.stores``)."""

from __future__ import annotations

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext
from langgraph.store.base import PutOp

from tests.helpers.stores import INDEX, keys

pytestmark = pytest.mark.django_db(transaction=True)


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
