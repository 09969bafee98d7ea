"""Database plumbing below the ORM: the SQL DjangoSaver, DjangoStore and the run records share
on their hot paths, connections borrowed from async code, and what a fault of the database
itself is (``is_fault``) and how work goes on after one (``replace_connection``,
``retrying``).

Django's ORM wraps every ``bulk_create`` in a transaction of its own and, on PostgreSQL,
binds parameters on the client, so a blob travels as hex text inside the SQL. The saver
and the store write one ``INSERT ... ON CONFLICT`` statement instead and, on PostgreSQL,
run it on psycopg's own server-binding binary cursor, as LangGraph's PostgresSaver does.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from asgiref.sync import sync_to_async
from django.db import InterfaceError, connections
from django.db.models import BinaryField, DateTimeField, JSONField
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from durable import conf

T = TypeVar("T")

logger = logging.getLogger(__name__)


@contextmanager
def connection_as_found(using: str) -> Iterator[None]:
    """Close, on exit, a connection this block had to open (outside an atomic block).

    LangGraph calls savers, and ``abatch`` runs stores, from short-lived threads, and
    Django keeps one connection per thread: without this each thread would leave one
    open. A connection the thread already had (a Celery task's) is left alone. With
    PostgreSQL's pool (settings), closing returns the connection to the pool."""
    connection = connections[using]
    opened_here = connection.connection is None
    try:
        yield
    finally:
        if opened_here and not connection.in_atomic_block:
            connection.close()


@contextmanager
def cursor(using: str) -> Iterator[Any]:
    """A DB-API cursor on ``using``: psycopg's binary, server-binding cursor on
    PostgreSQL (Django's own connections bind on the client), Django's elsewhere."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        connection.ensure_connection()
        with psycopg.Cursor(connection.connection) as raw:
            raw.format = psycopg.pq.Format.BINARY
            yield raw
    else:
        with connection.cursor() as django_cursor:
            yield django_cursor


@contextmanager
def pipeline(using: str) -> Iterator[Callable[[str, Mapping | Sequence], Any]]:
    """PostgreSQL only, outside a transaction: statements sent together and run by the
    server one after the other as one implicit transaction (committed at the pipeline's
    end, rolled back if one fails), in one round trip. Each statement still takes its
    own snapshot (READ COMMITTED), so one that follows a row lock sees what the lock's
    previous holder committed. Yields ``execute(statement, params)``, which returns the
    statement's cursor (prepared and binary, as ``cursor``); read its rows once the
    block has ended."""
    connection = connections[using]
    if connection.in_atomic_block:
        raise RuntimeError("sql.pipeline runs its own transaction, not inside another")
    connection.ensure_connection()
    raw = connection.connection

    def execute(statement: str, params: Mapping | Sequence) -> Any:
        cur = psycopg.Cursor(raw)
        cur.format = psycopg.pq.Format.BINARY
        cur.execute(statement, params)
        return cur

    with raw.pipeline():
        yield execute


def upsert(using: str, model, rows: list[dict], update: Sequence[str] = ()) -> tuple[str, list]:
    """One ``INSERT ... ON CONFLICT`` statement for ``rows`` (dicts keyed by field name,
    all with the same keys) on ``model``'s single unique constraint: ``DO UPDATE`` of the
    ``update`` fields, or ``DO NOTHING``. Values go through each field's
    ``get_db_prep_save``, so JSON, dates and bytes are stored as the ORM would store
    them. Returns ``(sql, params)``; valid on SQLite and PostgreSQL. For many rows use
    ``upsert_columns`` (PostgreSQL) or ``upsert_each``: psycopg parses a statement anew
    on every call once it is over 4 kB or 50 parameters."""
    statement = _insert(using, model, list(rows[0]), update, _values(len(rows[0]), len(rows)), {})
    return statement, [value for row in _params(using, model, rows) for value in row]


def upsert_each(
    using: str,
    model,
    rows: list[dict],
    update: Sequence[str] = (),
    expressions: Mapping[str, str] | None = None,
) -> tuple[str, list[list]]:
    """``upsert`` as a one-row statement and a parameter list per row, for
    ``cursor.executemany`` (pipelined by psycopg on PostgreSQL). ``expressions`` maps
    more fields to SQL set on conflict (``EXCLUDED.<column>`` is the new row)."""
    statement = _insert(using, model, list(rows[0]), update, _values(len(rows[0]), 1), expressions)
    return statement, _params(using, model, rows)


def upsert_columns(
    using: str,
    model,
    rows: list[dict],
    update: Sequence[str] = (),
    expressions: Mapping[str, str] | None = None,
) -> tuple[str, list]:
    """PostgreSQL only: ``upsert_each`` as one statement, ``INSERT ... SELECT ... FROM
    ROWS FROM (<one set-returning function per column>) ON CONFLICT ...``, for
    ``cursor(using)``.

    Returns ``(sql, params)``: one parameter per field holding that column of every row,
    sent in binary: an array (``unnest``), or for a JSON field one JSON array
    (``jsonb_array_elements``) encoded in one call with the field's encoder, as the ORM
    would encode each value (per value, the encoding took longer than the insert). A
    None in a JSON field is stored as SQL NULL, as the ORM does. The statement's text
    depends on the fields, not on the number of rows, so psycopg parses it once and the
    server prepares it, and a batch is one statement (atomic without BEGIN and COMMIT).
    Other values are sent as given, not through ``get_db_prep_save`` (which also costs
    more than the insert), so they must already be what PostgreSQL takes for the field:
    ``str``, ``bytes``, aware ``datetime``, ``float`` (not ``int`` mixed with ``float`` in
    one column), or None."""
    connection = connections[using]
    fields = [model._meta.get_field(name) for name in rows[0]]
    sources, columns, params = [], [], []
    for i, field in enumerate(fields):
        values = [row[field.name] for row in rows]
        if isinstance(field, JSONField):
            sources.append("jsonb_array_elements(%b)")
            columns.append(f"NULLIF(c{i}, 'null')")
            params.append(connection.ops.adapt_json_value(values, field.encoder))
        else:
            sources.append(f"unnest(%b::{field.db_type(connection)}[])")
            columns.append(f"c{i}")
            params.append(values)
    names = ", ".join(f"c{i}" for i in range(len(fields)))
    source = f"SELECT {', '.join(columns)} FROM ROWS FROM ({', '.join(sources)}) AS r({names})"
    return _insert(using, model, list(rows[0]), update, source, expressions), params


def _values(width: int, count: int) -> str:
    """``VALUES`` with ``count`` rows of ``width`` placeholders."""
    one = "(" + ", ".join(["%s"] * width) + ")"
    return "VALUES " + ", ".join([one] * count)


def _insert(
    using: str,
    model,
    names: list[str],
    update: Sequence[str],
    source: str,
    expressions: Mapping[str, str] | None,
) -> str:
    """``INSERT INTO <model> (<names>) <source> ON CONFLICT <model's unique fields>``,
    then ``DO UPDATE`` of ``update`` and ``expressions`` (field -> SQL), or ``DO
    NOTHING``."""
    quote = connections[using].ops.quote_name

    def column(name: str) -> str:
        return quote(model._meta.get_field(name).column)

    [unique] = model._meta.constraints
    statement = (
        f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(map(column, names))})"
        f" {source} ON CONFLICT ({', '.join(map(column, unique.fields))}) "
    )
    sets = [f"{column(name)} = EXCLUDED.{column(name)}" for name in update]
    sets += [f"{column(name)} = {sql}" for name, sql in (expressions or {}).items()]
    if not sets:
        return statement + "DO NOTHING"
    return statement + "DO UPDATE SET " + ", ".join(sets)


def _params(using: str, model, rows: list[dict]) -> list[list]:
    connection = connections[using]
    fields = [model._meta.get_field(name) for name in rows[0]]
    return [[f.get_db_prep_save(row[f.name], connection) for f in fields] for row in rows]


def select(using: str, model, where: str, params: list, defer: Sequence[str] = ()) -> list:
    """``model`` instances for ``SELECT <every column> FROM <table> WHERE <where>`` (the
    condition, and any ORDER BY or LIMIT after it), read
    on ``cursor(using)`` (prepared and binary on PostgreSQL) instead of the ORM's query
    compiler, which costs more than the query on a hot read. Values are brought to what
    the ORM would return: JSON decoded, datetimes aware, bytes as ``bytes``. Fields
    named in ``defer`` are not read: they are deferred, as ``QuerySet.defer`` leaves
    them (reading one costs a query)."""
    connection = connections[using]
    fields = [f for f in model._meta.concrete_fields if f.name not in defer]
    quote = connection.ops.quote_name
    statement = (
        f"SELECT {', '.join(quote(f.column) for f in fields)}"
        f" FROM {quote(model._meta.db_table)} WHERE {where}"
    )
    with cursor(using) as raw:
        raw.execute(statement, params)
        rows = raw.fetchall()
    names = [f.attname for f in fields]
    return [
        model.from_db(using, names, [from_db(f, v) for f, v in zip(fields, row, strict=True)])
        for row in rows
    ]


def from_db(field, value):
    """A column's ``value`` as a raw cursor returned it, brought to what the ORM returns
    for model field ``field``: JSON decoded, datetimes aware (UTC), bytes as ``bytes``."""
    if value is None:
        return None
    if isinstance(field, JSONField):
        return json_value(value)
    if isinstance(field, DateTimeField):  # SQLite keeps naive UTC (text or datetime)
        value = parse_datetime(value) if isinstance(value, str) else value
        return value if timezone.is_aware(value) else timezone.make_aware(value, dt.UTC)
    if isinstance(field, BinaryField):
        return bytes(value)
    return value


def json_value(value):
    """A JSON column as a raw cursor returns it: text (SQLite, or Django's jsonb text
    loader) or already decoded (psycopg's binary jsonb loader)."""
    return json.loads(value) if isinstance(value, str | bytes) else value


# -- borrowed connections ---------------------------------------------------------------

# At most DURABLE_EVENT_READERS borrowed reads of one process hold a connection at the
# same time: a thread semaphore, made at the first read and taken in the thread that runs
# the query, so a stream whose client goes away while its read is in flight still holds
# its slot until the read ends.
_slots: threading.BoundedSemaphore | None = None
_slots_made = threading.Lock()


def _reader_slots() -> threading.BoundedSemaphore:
    global _slots
    with _slots_made:
        if _slots is None:
            _slots = threading.BoundedSemaphore(conf.DURABLE_EVENT_READERS)
        return _slots


def _borrowing(read: Callable[..., T]) -> Callable[..., T]:
    """``read`` run under a reader slot, giving its connection back when done."""

    def borrowed(*args) -> T:
        with _reader_slots():
            try:
                return read(*args)
            finally:
                connections.close_all()

    return borrowed


async def borrow(read: Callable[..., T], *args) -> T:
    """``read(*args)``, an ORM function, run from async code on a borrowed connection."""
    return await sync_to_async(_borrowing(read))(*args)


# -- faults of the database itself -------------------------------------------------------

# SQLSTATEs of a server-side error that is the database's own state, not the statement's
# (PostgreSQL's Appendix A): the connection (class 08), the server shutting down or
# starting (57P01-57P03), too many connections, a transaction that lost to another
# (serialization failure, deadlock). A client-side psycopg error (no SQLSTATE) is a lost
# connection or a pool that gave none in time (``psycopg_pool.PoolTimeout``).
_FAULT_SQLSTATES = {"57P01", "57P02", "57P03", "53300", "40001", "40P01"}
# SQLite's busy and locked result codes (the primary code is the low byte).
_SQLITE_BUSY = {5, 6}
# A delay between tries after a fault doubles from the first to the last (seconds).
RETRY_DELAYS = (0.1, 2.0)


def is_fault(exc: BaseException) -> bool:
    """Whether ``exc`` is a fault of the database itself (a connection lost or closed,
    the server shutting down, a serialization failure or deadlock, SQLite busy) rather
    than of the code that used it: ``exc`` or an exception it was raised from
    (``__cause__``: Django wraps the driver's errors so, as LangGraph wraps a few of its
    own). A query the server refused (a syntax error, a constraint, a statement
    timeout) is not: running it again would fail again."""
    while exc is not None:
        if isinstance(exc, psycopg.InterfaceError):
            return True
        if isinstance(exc, psycopg.OperationalError):
            state = exc.sqlstate
            return state is None or state.startswith("08") or state in _FAULT_SQLSTATES
        if isinstance(exc, sqlite3.OperationalError):
            return getattr(exc, "sqlite_errorcode", 0) & 0xFF in _SQLITE_BUSY
        if isinstance(exc, InterfaceError) and exc.__cause__ is None:
            return True  # Django's own: "connection already closed"
        exc = exc.__cause__
    return False


def replace_connection(using: str) -> None:
    """After a fault: this thread's connection on ``using`` closed, so that its next query
    opens another (a pooled one goes back to its pool, which drops it when broken), and
    the pool's idle connections checked (``ConnectionPool.check``: the broken ones are
    dropped), as a fault that ended one connection often ended them all. Errors of the
    close and the check are logged, not raised: the connection is gone either way."""
    connection = connections[using]
    try:
        connection.close()
    except Exception:
        logger.debug("closing a broken connection failed", exc_info=True)
    if connection.vendor == "postgresql" and connection.settings_dict["OPTIONS"].get("pool"):
        try:
            if not connection.pool.closed:
                connection.pool.check()
        except Exception:
            logger.debug("checking the pool failed", exc_info=True)


def retrying(
    work: Callable[..., T], *args, using: str = "default", wait: float | None = None, **kwargs
) -> T:
    """``work(*args, **kwargs)``, tried again on a fresh connection (``replace_connection``)
    after each fault of the database (``is_fault``), with a delay that doubles from
    ``RETRY_DELAYS[0]`` to ``RETRY_DELAYS[1]`` seconds, for up to ``wait`` seconds
    (default ``DURABLE_RUN_LEASE_SECONDS``: beyond it the reaper takes a worker's run
    over anyway). Then, or on any other error, the error propagates. ``work`` must be
    safe to run again after a fault: its own transaction, rolled back by the fault, or
    a write fenced so that a second one changes nothing. Inside a transaction the fault
    is the transaction's: it propagates at once."""
    deadline = time.monotonic() + (conf.DURABLE_RUN_LEASE_SECONDS if wait is None else wait)
    delay = RETRY_DELAYS[0]
    while True:
        try:
            return work(*args, **kwargs)
        except Exception as exc:
            if (
                not is_fault(exc)
                or connections[using].in_atomic_block
                or time.monotonic() + delay > deadline
            ):
                raise
            logger.warning(
                "database fault (%s: %s); trying again in %g s", type(exc).__name__, exc, delay
            )
            replace_connection(using)
            time.sleep(delay)
            delay = min(delay * 2, RETRY_DELAYS[1])
