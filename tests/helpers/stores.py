"""The stores the store tests (``tests/unit/store/``) compare, each a factory taking the
store's keyword arguments: ``memory`` (LangGraph's InMemoryStore, the reference),
``django``, ``django_encrypted`` (under ``KEY``) and ``django_pgvector`` (DjangoStore on
the pgvector database: tests that use it carry ``RANKED``); a toy embedding (``INDEX``);
and ``keys``, the keys of a search's items in order."""

from __future__ import annotations

import pytest
from django.test.utils import override_settings
from langgraph.store.memory import InMemoryStore

from durable.persistence.store import DjangoStore
from tests.helpers.processes import PGVECTOR_ALIAS

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


def keys(items) -> list[str]:
    return [item.key for item in items]
