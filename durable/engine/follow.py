"""Following runs from the web process: the one event source behind the console's
server-sent events and the API's run streams, waits and joins. A stream reads the run's
new events on a borrowed connection, then pauses until there may be more: until a
NOTIFY on PostgreSQL, else for a poll interval (``_Pause``; settings: ``durable.conf``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections

from durable import conf
from durable.db import borrow
from durable.engine.records import CHANNEL, CHUNKS_ONLY
from durable.models import Run, RunEvent

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _status(run_id: int) -> str | None:
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).first()


async def wait_until_final(run_id: int) -> str | None:
    """Wait until run ``run_id`` has left ``pending`` and ``running``; return its final
    status, or ``None`` when the run no longer exists (its thread was deleted)."""
    return await read_when_final(run_id)


def _final_then(run_id: int, read: Callable[[int], T] | None) -> tuple[bool, Any]:
    status = _status(run_id)
    if status in Run.ACTIVE:
        return False, None
    return True, status if read is None else read(run_id)


async def read_when_final(run_id: int, read: Callable[[int], T] | None = None) -> T:
    """Wait until run ``run_id`` has ended (or no longer exists), then return
    ``read(run_id)``, an ORM function run on the borrowed connection that saw the
    status (one borrow fewer than waiting, then reading); without ``read``, the final
    status, as ``wait_until_final``."""
    async with _watching(run_id, ends_only=True) as pause:
        while True:
            pause.clear()
            final, value = await borrow(_final_then, run_id, read)
            if final:
                return value
            await pause()


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
    once the run has ended and its last event is out.

    Workers and web processes share nothing but the database, so the web process learns
    what a worker did by reading it. Each read borrows a connection and gives it back
    before the pause (``durable.db.borrow``: to the process's pool on PostgreSQL; on
    SQLite the file is closed), and at most ``DURABLE_EVENT_READERS`` reads of a process
    hold one at once: any number of open streams hold at most that many connections."""
    async with _watching(run_id) as pause:
        quiet_since = time.monotonic()
        while True:
            pause.clear()
            status, batch = await borrow(_poll, run_id, after)
            for event in batch:
                yield event
            if batch:
                after, quiet_since = batch[-1].seq, time.monotonic()
                pause.news()
                if len(batch) == BATCH:
                    continue
            if status not in Run.ACTIVE:
                yield End(status)
                return
            if time.monotonic() - quiet_since >= KEEPALIVE_SECONDS:
                yield KEEPALIVE
                quiet_since = time.monotonic()
            await pause()


# -- waking streams: LISTEN/NOTIFY on PostgreSQL, else polling ---------------------------


class _Pause:
    """What a stream waits on between two reads: a notification for its run (``woken``,
    set from the listener thread) when this process listens, else a poll interval.

    On PostgreSQL each new ``RunEvent`` sends ``NOTIFY durable_run_events, '<run id>'``
    (``records.CHANNEL``, from the writer's transaction, so it arrives once the event is
    committed), and the process's ``_Listener`` wakes the streams that follow that run.
    They still read every ``DURABLE_EVENTS_FALLBACK_SECONDS``, for what sends no
    notification (a run deleted by a rollback) and while the listener reconnects.
    Otherwise (SQLite, or ``DURABLE_EVENTS_LISTEN`` off) a stream polls: first after
    ``FIRST_POLL``, then each interval ``GROWTH`` times the last, up to
    ``DURABLE_EVENTS_POLL_SECONDS``, and soon again after a read that found events
    (``news``). Most runs move within their first moments, where a fixed interval cost
    each wait up to a whole interval; a quiet stream reads about 10 times in its
    first second, then once an interval."""

    FIRST_POLL = 0.01
    GROWTH = 1.5

    def __init__(self, listener: _Listener | None):
        self.listener = listener
        self.woken = asyncio.Event()
        self.interval = self.FIRST_POLL

    def clear(self) -> None:
        # Cleared before each read: a notification that arrives during the read is kept.
        self.woken.clear()

    def news(self) -> None:
        """The last read found events: poll soon again, as more are likely."""
        self.interval = self.FIRST_POLL

    def _poll(self) -> float:
        interval = self.interval
        self.interval = min(interval * self.GROWTH, conf.DURABLE_EVENTS_POLL_SECONDS)
        return interval

    async def __call__(self) -> None:
        if self.listener is None:
            await asyncio.sleep(self._poll())
            return
        # Until the listener is connected, poll; it wakes every stream once it is.
        listening = self.listener.listening.is_set()
        timeout = conf.DURABLE_EVENTS_FALLBACK_SECONDS if listening else self._poll()
        try:
            await asyncio.wait_for(self.woken.wait(), timeout)
        except TimeoutError:
            pass


@asynccontextmanager
async def _watching(run_id: int, ends_only: bool = False):
    """A ``_Pause`` woken by the run's notifications; with ``ends_only``, by those that
    may change its status only (not by ``CHUNKS_ONLY`` ones)."""
    listener = _listener()
    pause = _Pause(listener)
    waiter = (asyncio.get_running_loop(), pause.woken, ends_only)
    _here.watch(run_id, waiter)
    if listener is not None:
        listener.watch(run_id, waiter)
    try:
        yield pause
    finally:
        _here.unwatch(run_id, waiter)
        if listener is not None:
            listener.unwatch(run_id, waiter)


class _Waiters:
    """The streams of this process that follow each run: ``(loop, woken, ends_only)``."""

    def __init__(self):
        self._lock = threading.Lock()
        self._waiting: dict[int, set] = defaultdict(set)

    def watch(self, run_id: int, waiter) -> None:
        with self._lock:
            self._waiting[run_id].add(waiter)

    def unwatch(self, run_id: int, waiter) -> None:
        with self._lock:
            self._waiting[run_id].discard(waiter)
            if not self._waiting[run_id]:
                del self._waiting[run_id]

    def wake(self, run_ids, chunks_only: bool = False) -> None:
        with self._lock:
            waiters = [w for run_id in run_ids for w in self._waiting.get(run_id, ())]
        for loop, woken, ends_only in waiters:
            if chunks_only and ends_only:
                continue
            try:
                loop.call_soon_threadsafe(woken.set)
            except RuntimeError:  # that stream's event loop has closed
                pass


_here = _Waiters()


def wake_here(run_id: int, chunks_only: bool = False) -> None:
    """Wake this process's streams that follow run ``run_id``, from any thread: its
    events were just written by this process (a run the web process executes:
    ``durable.engine.inline``), so they need not wait for a notification or a poll.
    ``chunks_only``: stream chunks only, no change of status."""
    _here.wake([run_id], chunks_only)


class _Listener(_Waiters):
    """One per process: a daemon thread on one connection of its own that LISTENs on
    ``CHANNEL`` and wakes the streams following each notified run. It reconnects after
    a lost connection; meanwhile streams poll."""

    def __init__(self):
        super().__init__()
        self.listening = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="durable-events", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except Exception:
                if self._stop.is_set():
                    return
                logger.warning("run events listener lost its connection", exc_info=True)
            self.listening.clear()
            self._stop.wait(1.0)

    def _listen(self) -> None:
        with psycopg.connect(**_connection_params(), autocommit=True) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            self.listening.set()
            with self._lock:  # whatever happened while no one listened
                everyone = list(self._waiting)
            self.wake(everyone)
            while not self._stop.is_set():
                # A timeout, so that stop() is seen within a second.
                for note in conn.notifies(timeout=1.0):
                    run_id, chunks = note.payload, False
                    if run_id.endswith(CHUNKS_ONLY):
                        run_id, chunks = run_id.removesuffix(CHUNKS_ONLY), True
                    if run_id.isdigit():
                        self.wake([int(run_id)], chunks)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _connection_params() -> dict:
    db = connections[DEFAULT_DB_ALIAS].settings_dict
    params = {
        "dbname": db["NAME"],
        "user": db.get("USER"),
        "password": db.get("PASSWORD"),
        "host": db.get("HOST"),
        "port": db.get("PORT"),
    }
    return {key: value for key, value in params.items() if value}


_listener_lock = threading.Lock()
_the_listener: _Listener | None = None


def _listener() -> _Listener | None:
    """This process's listener, started on first use; ``None`` when it does not listen."""
    global _the_listener
    if not conf.DURABLE_EVENTS_LISTEN or connections[DEFAULT_DB_ALIAS].vendor != "postgresql":
        return None
    with _listener_lock:
        if _the_listener is None:
            _the_listener = _Listener()
        return _the_listener


def stop_listening() -> None:
    """Stop this process's listener and close its connection (tests use this before the
    test database is dropped)."""
    global _the_listener
    with _listener_lock:
        if _the_listener is not None:
            _the_listener.stop()
            _the_listener = None
