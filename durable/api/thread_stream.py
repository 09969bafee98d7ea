"""``GET /threads/{thread_id}/stream``: a thread's runs streamed one after another, as
the Agent Server's thread stream carries them: each run's events as its own stream
sends them (``runs._sdk_events``: ``metadata`` first, then its modes' events), then a
``metadata`` event whose ``status`` is ``run_done``; the stream stays open for the next
run until the client leaves.

Every event has an id, ``<run id>-<n>``: the shape of the Agent Server's (a Redis stream
id, ``<ms>-<seq>``), which sort as the events came. ``n`` is 0 for the run's first
``metadata``, a recorded event's ``seq``, ``OUTPUT`` for what is sent once the run has
ended (its ``error``, or the thread's values) and ``DONE`` for its ``run_done``. A client
that sends one back as ``Last-Event-ID`` gets what came after it.
"""

from __future__ import annotations

import asyncio
import re

from ninja import Query, Router, Schema

from durable import sse
from durable.api import access, answers
from durable.api.errors import ApiError
from durable.api.runs import _output, _sdk_events, _thread_ids
from durable.api.schemas import STREAM_MODES, ThreadId
from durable.db import borrow
from durable.engine import follow
from durable.models import Run, Thread

thread_stream = Router(tags=["threads"])

THREAD_STREAM_MODES = ("run_modes", "lifecycle", "state_update")
# How often the stream looks for the thread's next run while none is active.
NEXT_RUN_POLL_SECONDS = 0.5
# The ``n`` of a run's events sent after every recorded one (a seq never gets this high).
OUTPUT, DONE = 2**31 - 2, 2**31 - 1
EVENT_ID = re.compile(r"(\d+)-(\d+)")


class ThreadStreamQuery(Schema):
    # The Python and JS SDKs send stream_mode; the OpenAPI names it stream_modes.
    stream_mode: list[str] = []
    stream_modes: list[str] = []


def _modes(query: ThreadStreamQuery) -> set[str]:
    modes = {m for value in query.stream_mode + query.stream_modes for m in value.split(",") if m}
    if unknown := sorted(modes - set(THREAD_STREAM_MODES)):
        raise ApiError(
            422,
            f"Thread stream mode(s) {', '.join(unknown)} are not served; choose from "
            f"{', '.join(THREAD_STREAM_MODES)}.",
            "stream_mode",
        )
    return modes or {"run_modes"}


def _start_after(thread: Thread) -> int:
    """The pk after which runs are streamed when the client names no event: the active
    ones and those to come."""
    active = thread.runs.filter(status__in=Run.ACTIVE).order_by("pk").first()
    if active is not None:
        return active.pk - 1
    latest = thread.runs.order_by("-pk").values_list("pk", flat=True).first()
    return latest or 0


def _resumed_at(request) -> tuple[int, int] | None:
    """``(run id, n)`` of the ``Last-Event-ID`` header's event (``-``: before the first
    run's first event), or ``None`` without one. 422 for one of another shape."""
    value = request.headers.get("Last-Event-ID")
    if not value:
        return None
    if value == "-":
        return 0, DONE
    if (found := EVENT_ID.fullmatch(value)) is None:
        raise ApiError(
            422,
            "Last-Event-ID must be an event id of this stream (<run id>-<n>) or -, "
            f"not {sse.echoed_id(value)}.",
            "Last-Event-ID",
        )
    return int(found[1]), int(found[2])


def _resumable(thread: Thread, resumed: tuple[int, int]) -> bool:
    """Whether the event named is of a run of this thread (or ``-``, before its first).
    Another id (a run of another thread, or none at all) names no place in this
    stream: the stream then starts as without the header, as the Agent Server's
    resumes from where it is for an id it holds nothing after, and later runs stream."""
    run_pk, _ = resumed
    return run_pk == 0 or thread.runs.filter(pk=run_pk).exists()


def _next_run(thread_pk: int, after: int) -> tuple[bool, Run | None]:
    """Whether the thread still exists, and its first run after pk ``after``."""
    if not Thread.objects.filter(pk=thread_pk).exists():
        return False, None
    return True, Run.objects.filter(thread=thread_pk, pk__gt=after).order_by("pk").first()


def _run_modes(run: Run) -> list[str]:
    """The modes the run was asked for that its events carry, else all of them."""
    asked = [m for m in (run.stream_modes or []) if m in STREAM_MODES]
    return asked or list(STREAM_MODES)


async def _thread_events(thread: Thread, modes: set[str], after: int, had: int = DONE):
    """The runs of ``thread`` after pk ``after`` (or, with ``had`` below ``DONE``, from
    run ``after`` on, whose events up to ``n == had`` the client has), run after run."""
    waited = 0.0
    thread_pk = thread.pk
    while True:
        exists, run = await borrow(_next_run, thread_pk, after if had == DONE else after - 1)
        if not exists:
            return
        if run is None:
            await asyncio.sleep(NEXT_RUN_POLL_SECONDS)
            waited += NEXT_RUN_POLL_SECONDS
            if waited >= follow.KEEPALIVE_SECONDS:
                waited = 0.0
                yield sse.KEEPALIVE
            continue
        waited = 0.0
        if run.pk != after:  # not the run the client was in: all of it
            had = -1
        after = run.pk
        async for chunk in _run_events(thread, run, modes, had):
            yield chunk
        had = DONE


async def _run_events(thread: Thread, run: Run, modes: set[str], had: int):
    """One run's events after ``n == had`` (-1: all of them)."""

    def ids(n: int | None) -> str:
        return f"{run.pk}-{OUTPUT if n is None else n}"

    if had < 0:
        yield sse.event("metadata", {"run_id": str(run.pk), "attempt": 1}, id=ids(0))
    if had < OUTPUT and "run_modes" in modes:
        events = _sdk_events(
            run.pk,
            _run_modes(run),
            True,
            max(had, 0),
            run.stream_modes,
            thread_ids=_thread_ids(thread),
            ids=ids,
        )
        async for chunk in events:
            yield chunk
    else:
        status = await follow.wait_until_final(run.pk)
        if had < OUTPUT and "state_update" in modes and status is not None:
            yield sse.event("values", await borrow(_output, run.pk), id=ids(None))
    yield sse.event("metadata", {"run_id": str(run.pk), "status": "run_done"}, id=ids(DONE))


@thread_stream.get(
    "/{thread_id}/stream",
    summary="Join a thread's stream (SSE)",
    openapi_extra=answers.EVENT_STREAM,
)
async def join_thread_stream(request, thread_id: ThreadId, query: Query[ThreadStreamQuery]):
    """The thread's runs' events as server-sent events, run after run, from its active
    run on (or, with ``Last-Event-ID: -``, from its first run; with an event's id, from
    the event after it), until the client closes the stream. ``stream_mode``
    (repeatable): ``run_modes`` (the default: each run's events in the modes it was
    asked for, then ``metadata`` with ``status`` ``run_done``), ``lifecycle`` (only
    each run's first ``metadata`` and its ``run_done``), ``state_update`` (the
    thread's values after each run). A ``Last-Event-ID`` naming no run of this thread
    starts the stream as without one. 422 for a ``Last-Event-ID`` of another shape."""
    modes = _modes(query)
    resumed = _resumed_at(request)
    thread = await borrow(access.thread, request, thread_id)
    if resumed is None or not await borrow(_resumable, thread, resumed):
        after = await borrow(_start_after, thread)
        return sse.response(_thread_events(thread, modes, after))
    return sse.response(_thread_events(thread, modes, *resumed))
