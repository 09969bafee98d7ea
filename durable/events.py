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
import threading
from collections.abc import Callable
from typing import TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections

from durable.models import Run

T = TypeVar("T")

POLL_SECONDS: float = getattr(settings, "DURABLE_EVENTS_POLL_SECONDS", 0.2)
READERS: int = getattr(settings, "DURABLE_EVENT_READERS", 4)

# A thread semaphore, taken in the thread that runs the query: a stream whose client
# goes away while its read is in flight still holds its slot until the read ends.
_slots = threading.BoundedSemaphore(READERS)


def _borrowing(read: Callable[[], T]) -> Callable[[], T]:
    """``read`` run under a reader slot, giving its connection back when done."""

    def borrowed() -> T:
        with _slots:
            try:
                return read()
            finally:
                connections.close_all()

    return borrowed


async def borrow(read: Callable[[], T]) -> T:
    """Run the ORM function ``read`` from async code on a borrowed connection."""
    return await sync_to_async(_borrowing(read))()


def _status(run_id: int) -> str | None:
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).first()


async def wait_until_final(run_id: int) -> str | None:
    """Poll run ``run_id`` until it has left ``pending`` and ``running``; return its
    final status, or ``None`` when the run no longer exists (its thread was deleted)."""
    while True:
        status = await borrow(lambda: _status(run_id))
        if status not in Run.ACTIVE:
            return status
        await asyncio.sleep(POLL_SECONDS)
