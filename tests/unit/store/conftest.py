"""The store tests compare DjangoStore with LangGraph's InMemoryStore.

Cases that InMemoryStore gets right run on three stores: ``memory`` (the reference),
``django`` (values as JSON, filters in SQL) and ``django-encrypted`` (values encrypted,
filters in Python). Each deliberate difference from InMemoryStore has its own test, run
on the Django stores only, with a comment saying why. The fixtures give a test one store
factory at a time (``tests.helpers.stores``).
"""

from __future__ import annotations

import pytest

from tests.helpers.stores import django, django_encrypted, django_pgvector, memory


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
