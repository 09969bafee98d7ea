"""What counts as a fault of the database itself (``durable.db.is_fault``), which the engine
outlives, and what is the query's own error, which it does not; and ``retrying``, which
tries work again on a fresh connection after a fault only."""

from __future__ import annotations

import psycopg
import pytest
from django.conf import settings
from django.db import DatabaseError, connection, transaction

from durable import db as sql
from durable.models import Thread

postgresql_only = pytest.mark.skipif(
    not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
    reason="terminates a PostgreSQL backend; SQLite has no server connection to lose",
)


def raised(work) -> Exception:
    with pytest.raises(Exception) as info:
        work()
    return info.value


def count_threads() -> int:
    return Thread.objects.count()


def terminate_this_threads_backend() -> None:
    """End this thread's server session from another connection, as a failover does."""
    pid = connection.cursor().connection.info.backend_pid
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_dropped_connection_is_a_fault_and_the_next_try_reconnects():
    count_threads()
    terminate_this_threads_backend()
    exc = raised(count_threads)
    assert sql.is_fault(exc), repr(exc)
    # Django keeps the dead connection: without a new one, every later query fails too.
    assert sql.is_fault(raised(count_threads))
    assert sql.retrying(count_threads) == 0


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_raw_cursors_dropped_connection_is_a_fault():
    def select_one():
        with sql.cursor("default") as cur:
            cur.execute("SELECT 1")
            return cur.fetchone()[0]

    select_one()
    terminate_this_threads_backend()
    assert sql.is_fault(raised(select_one))
    assert sql.retrying(select_one) == 1


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_statement_timeout_is_the_querys_own_error():
    def slow():
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("SET LOCAL statement_timeout = 10")
            cur.execute("SELECT pg_sleep(1)")

    exc = raised(slow)
    assert isinstance(exc, DatabaseError)
    assert not sql.is_fault(exc)


@pytest.mark.django_db(transaction=True)
def test_a_bad_query_and_the_codes_own_errors_are_not_faults():
    def bad_query():
        with connection.cursor() as cur:
            cur.execute("SELECT * FROM no_such_table")

    assert not sql.is_fault(raised(bad_query))
    assert not sql.is_fault(ValueError("a node's own"))
    assert not sql.is_fault(RuntimeError("wrapped"))


@pytest.mark.django_db(transaction=True)
def test_retrying_gives_up_at_once_on_an_error_that_is_not_a_fault():
    calls = []

    def refuse():
        calls.append(1)
        raise ValueError("not the database's")

    with pytest.raises(ValueError):
        sql.retrying(refuse)
    assert len(calls) == 1


def test_a_fault_wrapped_by_another_error_is_still_a_fault():
    try:
        try:
            raise psycopg.errors.AdminShutdown("terminating connection")
        except psycopg.Error as inner:
            raise RuntimeError("the checkpointer failed") from inner
    except RuntimeError as outer:
        assert sql.is_fault(outer)
