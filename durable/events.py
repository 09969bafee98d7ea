"""Following runs from the web process: the one event source behind the console's
server-sent events and the API's run streams, waits and joins.

Workers and web processes share nothing but the database, so the web process learns
what a worker did by reading it: each open stream polls every ``POLL_SECONDS``. A poll
*borrows* a database connection and gives it back before it sleeps (on PostgreSQL the
connection returns to the process's pool; on SQLite the file is closed), and at most
``READERS`` polls of one process hold a connection at the same time, so any number of
open streams hold at most ``READERS`` connections between them.

Settings: ``DURABLE_EVENTS_POLL_SECONDS`` (default 0.2) and ``DURABLE_EVENT_READERS``
(default 4).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connections

from durable.models import Run, RunEvent

T = TypeVar("T")

POLL_SECONDS: float = getattr(settings, "DURABLE_EVENTS_POLL_SECONDS", 0.2)
READERS: int = getattr(settings, "DURABLE_EVENT_READERS", 4)

# A thread semaphore, taken in the thread that runs the query: a stream whose client
# goes away while its read is in flight still holds its slot until the read ends.
_slots = threading.BoundedSemaphore(READERS)


def _borrowing(read: Callable[..., T]) -> Callable[..., T]:
    """``read`` run under a reader slot, giving its connection back when done."""

    def borrowed(*args) -> T:
        with _slots:
            try:
                return read(*args)
            finally:
                connections.close_all()

    return borrowed


async def borrow(read: Callable[..., T], *args) -> T:
    """``read(*args)``, an ORM function, run from async code on a borrowed connection."""
    return await sync_to_async(_borrowing(read))(*args)


def _status(run_id: int) -> str | None:
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).first()


async def wait_until_final(run_id: int) -> str | None:
    """Poll run ``run_id`` until it has left ``pending`` and ``running``; return its
    final status, or ``None`` when the run no longer exists (its thread was deleted)."""
    while True:
        status = await borrow(_status, run_id)
        if status not in Run.ACTIVE:
            return status
        await asyncio.sleep(POLL_SECONDS)


# -- following a run's events ----------------------------------------------------------

# Events read per poll; a full batch is followed at once by the next.
BATCH = 500
KEEPALIVE_SECONDS = 15.0


@dataclass(frozen=True)
class Event:
    """One ``RunEvent``: ``seq`` (1, 2, ... per run), ``event`` (a stream mode, or
    ``lifecycle``), ``ns`` (the subgraph, ``""`` for the graph) and JSON ``data``."""

    seq: int
    event: str
    ns: str
    data: Any


@dataclass(frozen=True)
class End:
    """The run ended with ``status`` (``None``: the run was deleted, by a rollback or
    with its thread), and every event it wrote has been yielded."""

    status: str | None


class Keepalive:
    """Nothing happened for ``KEEPALIVE_SECONDS``: a stream writes a comment, so that
    proxies keep the connection open."""


KEEPALIVE = Keepalive()


def _poll(run_id: int, after: int) -> tuple[str | None, list[Event]]:
    # The status first: a worker writes a run's last event in the transaction that ends
    # it, so when the status read is final, the events read next include the last one.
    status = _status(run_id)
    rows = (
        RunEvent.objects.filter(run_id=run_id, seq__gt=after)
        .order_by("seq")
        .values_list("seq", "event", "ns", "data")[:BATCH]
    )
    return status, [Event(*row) for row in rows]


async def follow(run_id: int, after: int = 0) -> AsyncIterator[Event | End | Keepalive]:
    """Yield run ``run_id``'s events with ``seq`` greater than ``after`` as they are
    written, a ``KEEPALIVE`` after each quiet ``KEEPALIVE_SECONDS``, then ``End``
    once the run has ended and its last event is out. Polls every ``POLL_SECONDS``
    on a borrowed connection (see the module's docstring)."""
    quiet = 0.0
    while True:
        status, batch = await borrow(_poll, run_id, after)
        for event in batch:
            yield event
        if batch:
            after, quiet = batch[-1].seq, 0.0
            if len(batch) == BATCH:
                continue
        if status not in Run.ACTIVE:
            yield End(status)
            return
        if quiet >= KEEPALIVE_SECONDS:
            yield KEEPALIVE
            quiet = 0.0
        await asyncio.sleep(POLL_SECONDS)
        quiet += POLL_SECONDS


def sse(event: str | None, data: Any, id: int | None = None) -> bytes:
    """One server-sent event: ``id:`` (when given), ``event:`` (when given) and the
    ``data`` as one line of JSON."""
    lines = []
    if id is not None:
        lines.append(f"id: {id}")
    if event is not None:
        lines.append(f"event: {event}")
    lines.append(f"data: {json.dumps(data, cls=DjangoJSONEncoder, separators=(',', ':'))}")
    return ("\n".join(lines) + "\n\n").encode()


SSE_HEADERS = {
    "Cache-Control": "no-store",
    # nginx buffers responses unless told not to.
    "X-Accel-Buffering": "no",
}


def last_event_id(request) -> int:
    """The seq a reconnecting client already has: its ``Last-Event-ID`` header (sent by
    browsers' EventSource and the SDK on reconnect), else the ``after`` query
    parameter, else 0. Raises ``ValueError`` for one that is not a whole number."""
    value = request.headers.get("Last-Event-ID") or request.GET.get("after") or "0"
    if not value.isdigit():
        raise ValueError(f"Last-Event-ID must be an event id (a whole number), not {value!r}.")
    return int(value)
