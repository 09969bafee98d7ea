"""``GET /threads/{thread_id}/stream``: a thread's runs streamed one after another, as
the Agent Server's thread stream carries them: each run's events as its own stream
sends them (``runs._sdk_events``: ``metadata`` first, then its modes' events), then a
``metadata`` event whose ``status`` is ``run_done``; the stream stays open for the next
run until the client leaves."""

from __future__ import annotations

import asyncio

from ninja import Query, Router, Schema

from durable import sse
from durable.api import access, answers
from durable.api.errors import ApiError
from durable.api.runs import _output, _sdk_events
from durable.api.schemas import STREAM_MODES, ThreadId
from durable.db import borrow
from durable.engine import follow
from durable.models import Run, Thread

thread_stream = Router(tags=["threads"])

THREAD_STREAM_MODES = ("run_modes", "lifecycle", "state_update")
# How often the stream looks for the thread's next run while none is active.
NEXT_RUN_POLL_SECONDS = 0.5


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


def _start_after(thread: Thread, from_start: bool) -> int:
    """The pk after which runs are streamed: every run with ``from_start``, else the
    active ones and those to come."""
    if from_start:
        return 0
    active = thread.runs.filter(status__in=Run.ACTIVE).order_by("pk").first()
    if active is not None:
        return active.pk - 1
    latest = thread.runs.order_by("-pk").values_list("pk", flat=True).first()
    return latest or 0


def _next_run(thread_pk: int, after: int) -> tuple[bool, Run | None]:
    """Whether the thread still exists, and its first run after pk ``after``."""
    if not Thread.objects.filter(pk=thread_pk).exists():
        return False, None
    return True, Run.objects.filter(thread=thread_pk, pk__gt=after).order_by("pk").first()


def _run_modes(run: Run) -> list[str]:
    """The modes the run was asked for that its events carry, else all of them."""
    asked = [m for m in (run.stream_modes or []) if m in STREAM_MODES]
    return asked or list(STREAM_MODES)


async def _thread_events(thread_pk: int, modes: set[str], after: int):
    waited = 0.0
    while True:
        exists, run = await borrow(_next_run, thread_pk, after)
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
        after = run.pk
        if "run_modes" in modes:
            async for chunk in _sdk_events(run.pk, _run_modes(run), True, 0):
                yield chunk
        else:
            yield sse.event("metadata", {"run_id": str(run.pk), "attempt": 1})
            status = await follow.wait_until_final(run.pk)
            if "state_update" in modes and status is not None:
                yield sse.event("values", await borrow(_output, run.pk))
        yield sse.event("metadata", {"run_id": str(run.pk), "status": "run_done"})


@thread_stream.get(
    "/{thread_id}/stream",
    summary="Join a thread's stream (SSE)",
    openapi_extra=answers.EVENT_STREAM,
)
async def join_thread_stream(request, thread_id: ThreadId, query: Query[ThreadStreamQuery]):
    """The thread's runs' events as server-sent events, run after run, from its active
    run on (or, with ``Last-Event-ID: -``, from its first run), until the client
    closes the stream. ``stream_mode`` (repeatable): ``run_modes`` (the default: each
    run's events in the modes it was asked for, then ``metadata`` with ``status``
    ``run_done``), ``lifecycle`` (only each run's first ``metadata`` and its
    ``run_done``), ``state_update`` (the thread's values after each run)."""
    modes = _modes(query)
    thread = await borrow(access.thread, request, thread_id)
    from_start = request.headers.get("Last-Event-ID") == "-"
    after = await borrow(_start_after, thread, from_start)
    return sse.response(_thread_events(thread.pk, modes, after))
