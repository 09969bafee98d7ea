"""``/threads/{thread_id}/runs``: a thread's runs, started in the background, waited
for or streamed; listed, read, joined (their output or their stream) and cancelled.
A run starts, resumes, replays or answers again as its body asks (``durable.engine``);
a worker executes it, and its events reach clients as the Agent Server's SSE stream."""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

from django.http import HttpResponse
from django.urls import reverse
from ninja import Query, Router

from durable import engine, sse
from durable.api import access, answers, shapes, streaming
from durable.api.authentication import caller, may_change
from durable.api.errors import ApiError, json_response
from durable.api.schemas import (
    JOIN_MODES,
    CancelQuery,
    JoinStreamQuery,
    RunCreate,
    RunsQuery,
    ThreadId,
    stream_modes,
)
from durable.db import borrow
from durable.engine import follow, inline
from durable.models import Run, Thread
from durable.values import jsonable

runs = Router(tags=["threads"])


def _create_run(request, name: str, body: RunCreate) -> Run:
    """The run ``body`` asks for on the thread named ``name`` (``RunCreate.to_request``;
    ``engine.submit`` checks it and decides what it is): ``input`` starts the graph (no
    input goes on from the thread's next tasks); ``command`` (``resume``, ``goto``,
    ``update``, beside an empty ``input``) resumes the thread with LangGraph's
    ``Command``, or, ``resume`` with ``checkpoint_id``, answers again those pending at
    that past checkpoint; no input, with ``checkpoint_id``, replays from that
    checkpoint. ``assistant_id`` is a stored assistant of the tenant or a registered
    graph (``engine.resolve_assistant``; 404 for neither)."""
    chosen = engine.resolve_assistant(
        request.auth.tenant,
        body.assistant_id,
        body.config.model_dump(exclude_none=True) if body.config else None,
        body.context,
    )
    asked = body.to_request(chosen, caller(request))
    thread = access.find_thread(request, name)
    if thread is None:
        if body.if_not_exists != "create" or body.input is None or body.command is not None:
            raise access.thread_not_found(name)
        access.check_reachable(name)
    may_change(request)
    return engine.submit(asked, thread=thread, name=name, tenant=request.auth.tenant)


def _run_path(run: Run) -> str:
    return reverse("api:get_run", args=[run.thread.name, run.pk])


def _located(response: HttpResponse, run: Run) -> HttpResponse:
    """Name the run in ``Content-Location``, where the SDK reads a new run's ids."""
    response["Content-Location"] = _run_path(run)
    return response


@runs.post("/{thread_id}/runs", summary="Create a background run", response=answers.Run)
def create_run(request, thread_id: ThreadId, body: RunCreate):
    """Starts a run with ``input`` (none: goes on from the thread's next tasks), resumes
    the thread with ``command`` (``resume``: one value, or ``{interrupt_id: value}``;
    ``goto``; ``update``), or replays from ``checkpoint_id``; ``multitask_strategy``
    decides what happens to an active run, ``durability`` when checkpoints are saved;
    ``config``, ``context``, breakpoints, ``after_seconds`` and ``webhook`` as the API's
    description says. Returns the pending run; a worker executes it."""
    run = _create_run(request, thread_id, body)
    return _located(json_response(request, shapes.run_json(run)), run)


def _output(run_id: int, with_values: bool = True) -> dict:
    """What ``wait`` and ``join`` return once the run has ended: the thread's values,
    with ``__interrupt__`` when it stopped at interrupts, or ``__error__``. Without
    ``with_values`` (a stream whose events already carried them), only the run's recorded
    outcome is read: ``{"__error__": ...}``, or ``{}``."""
    run = Run.objects.select_related("thread__tenant").filter(pk=run_id).first()
    if run is None:
        return {"__error__": {"error": "RunDeleted", "message": "The run no longer exists."}}
    if run.status == Run.Status.ERROR:
        return {"__error__": {"error": run.error_type, "message": run.error_message}}
    if not with_values:
        return {}
    state = engine.thread_state(run.thread)
    values = jsonable(state.values)
    if state.interrupts and isinstance(values, dict):
        values["__interrupt__"] = [shapes.interrupt_json(i) for i in state.interrupts]
    return values


async def _wait_output(run_id: int) -> dict:
    return await follow.read_when_final(run_id, _output)


@runs.post(
    "/{thread_id}/runs/wait",
    summary="Create a run and wait for its output",
    response=answers.RunOutput,
)
async def wait_run(request, thread_id: ThreadId, body: RunCreate):
    """As ``POST /threads/{thread_id}/runs``, then waits for the run to end and returns
    the thread's values (with ``__interrupt__``), or ``{"__error__": ...}``. With
    ``on_disconnect: cancel``, a client that goes away first cancels the run."""
    with inline.awaited():  # it may execute in this process
        run = await borrow(_create_run, request, thread_id, body)
    try:
        output = await _wait_output(run.pk)
    except asyncio.CancelledError:  # the client went away (django/core/handlers/asgi.py)
        if body.on_disconnect == "cancel":
            await borrow(_cancel_if_active, run.pk, caller(request))
        raise
    return _located(json_response(request, output), run)


def _stream_response(request, run: Run, modes: list[str], subgraphs: bool, after: int):
    """The run's events in the Agent Server's SSE format, from the shared event source."""
    query = urlencode([("stream_mode", m) for m in modes] + [("stream_subgraphs", subgraphs)])
    events = _sdk_events(
        run.pk, modes, subgraphs, after, run.stream_modes, thread_ids=_thread_ids(run.thread)
    )
    response = sse.response(events)
    # Where the SDK reconnects (with Last-Event-ID) if the stream is cut: a path under the
    # API's root, as the Agent Server's, which both SDKs resolve against their base URL.
    path = _run_path(run).removeprefix(reverse("api:api-root").rstrip("/"))
    response["Location"] = f"{path}/stream?{query}"
    return _located(response, run)


def _thread_ids(thread: Thread) -> tuple[str, str]:
    """LangGraph's id for ``thread`` and its client's (``streaming.Shaper``)."""
    return thread.thread_id, thread.name


async def _sdk_events(
    run_id: int,
    modes: list[str],
    subgraphs: bool,
    after: int,
    recorded: list[str] = (),
    *,
    thread_ids: tuple[str, str],
    ids=None,
):
    """``metadata`` first (unless ``ids`` is given); then the recorded events of the
    wanted modes, shaped as the Agent Server's (``durable.api.streaming``, the thread
    named by ``thread_ids``), each with ``id: seq``, or ``ids(seq)``; when the run has
    ended, ``error`` for a failed run, and, for a run that did not record ``values``
    after each super-step (``recorded``, its ``stream_modes``), ``values``: the
    thread's values, with ``__interrupt__`` (with ``id: ids(None)`` if given)."""
    shaper = streaming.Shaper(modes, subgraphs, thread_ids)
    if after == 0 and ids is None:
        yield sse.event("metadata", {"run_id": str(run_id), "attempt": 1})
    ids = ids or (lambda seq: seq)
    # A reconnect in ``messages`` mode reads the messages' earlier chunks again, to add
    # them up, and sends what came after its event.
    async for item in follow.follow(run_id, 0 if shaper.replays_messages else after):
        if isinstance(item, follow.Event):
            shaped = shaper.shape(item)
            if item.seq > after:
                for i, (name, data) in enumerate(shaped, 1):
                    yield sse.event(name, data, id=ids(item.seq) if i == len(shaped) else None)
        elif isinstance(item, follow.Keepalive):
            yield sse.KEEPALIVE
        else:
            # The thread's values are read only for a stream that wants them and whose
            # run did not record them; otherwise the run's outcome says all.
            wanted = "values" in modes and "values" not in recorded
            output = await borrow(_output, run_id, wanted)
            if "__error__" in output:
                yield sse.event("error", output["__error__"], id=ids(None))
            elif wanted:
                yield sse.event("values", output, id=ids(None))


def _cancel_on_disconnect(request, response: HttpResponse, run: Run) -> HttpResponse:
    """``response`` (a run's stream), made to cancel ``run`` if its client goes away
    before the stream's end, as the Agent Server's ``on_disconnect: cancel`` and
    ``cancel_on_disconnect`` do. Django's ASGI handler cancels the response's task when
    the client disconnects (``django/core/handlers/asgi.py``), which stops the events
    where they wait."""
    response.streaming_content = _cancelling(response.streaming_content, run.pk, caller(request))
    return response


async def _cancelling(events, run_id: int, who: str):
    ended = False
    try:
        async for item in events:
            yield item
        ended = True
    finally:
        if not ended:
            await borrow(_cancel_if_active, run_id, who)


def _cancel_if_active(run_id: int, who: str) -> None:
    run = Run.objects.select_related("thread").filter(pk=run_id).first()
    if run is None or not run.is_active:
        return
    try:
        engine.cancel(run, requested_by=who, reason="the client of its stream went away")
    except engine.InvalidRequest:
        pass  # it ended meanwhile


@runs.post(
    "/{thread_id}/runs/stream",
    summary="Create a run and stream its events (SSE)",
    openapi_extra=answers.EVENT_STREAM,
)
async def stream_run(request, thread_id: ThreadId, body: RunCreate):
    """As ``POST /threads/{thread_id}/runs``, answered with the run's events as
    server-sent events while it runs (see ``GET .../runs/{run_id}/stream``). With
    ``on_disconnect: cancel``, a client that goes away before the stream's end cancels
    the run (default ``continue``: it runs on, and its stream can be joined again)."""
    with inline.awaited():  # it may execute in this process
        run = await borrow(_create_run, request, thread_id, body)
    response = _stream_response(request, run, body.modes(), body.stream_subgraphs, 0)
    if body.on_disconnect == "cancel":
        return _cancel_on_disconnect(request, response, run)
    return response


@runs.get(
    "/{thread_id}/runs", summary="List a thread's runs, newest first", response=list[answers.Run]
)
def list_runs(request, thread_id: ThreadId, query: Query[RunsQuery]):
    thread = access.thread(request, thread_id)
    found = thread.runs.select_related("thread", "assistant")
    if query.status:
        found = found.filter(status__in=shapes.run_statuses(query.status))
    return [shapes.run_json(r) for r in found[query.offset : query.offset + query.limit]]


@runs.get(
    "/{thread_id}/runs/{run_id}", summary="Get a run", url_name="get_run", response=answers.Run
)
def get_run(request, thread_id: ThreadId, run_id: str):
    return shapes.run_json(access.run(request, thread_id, run_id))


@runs.get(
    "/{thread_id}/runs/{run_id}/join",
    summary="Wait for a run's output",
    response=answers.RunOutput,
)
async def join_run(request, thread_id: ThreadId, run_id: str):
    """Waits for the run to end; returns what ``runs/wait`` returns."""
    run = await borrow(access.run, request, thread_id, run_id)
    return await _wait_output(run.pk)


@runs.get(
    "/{thread_id}/runs/{run_id}/stream",
    summary="Stream a run's events (SSE)",
    openapi_extra=answers.EVENT_STREAM,
)
async def join_stream(request, thread_id: ThreadId, run_id: str, query: Query[JoinStreamQuery]):
    """The run's events as server-sent events, from the start or, on reconnect, after
    the ``Last-Event-ID`` header's event (``-1``: from the start, as the JS SDK asks
    after a page reload); the stream ends when the run has.

    Modes: ``stream_mode`` (repeatable; default: those the run was created with, or,
    for a run created with none, values, updates, custom and tasks). A run records what
    it was asked for when it was created (its ``stream_mode``; a background run's
    default is ``values``), and always ``updates``, ``custom`` and ``tasks``; a mode
    it did not record gives no events here, as the Agent Server's join gives none of a
    mode its run did not stream (the SDK's ``join_stream``: "must be a subset of the
    stream modes passed when creating the run"); ``messages`` and ``messages-tuple``
    are two shapes of the same records. ``values`` of a run that did not record them
    come once, when the run ends: the thread's values. With ``cancel_on_disconnect``, a
    client that goes away first cancels the run."""
    try:
        after = sse.last_event_id(request)
    except ValueError as exc:
        raise ApiError(422, str(exc), "Last-Event-ID") from None
    modes = stream_modes(query.stream_mode)
    run = await borrow(access.run, request, thread_id, run_id)
    modes = modes or run.stream_modes or list(JOIN_MODES)
    response = _stream_response(request, run, modes, query.stream_subgraphs, after)
    if query.cancel_on_disconnect:
        return _cancel_on_disconnect(request, response, run)
    return response


@runs.post(
    "/{thread_id}/runs/{run_id}/cancel",
    summary="Cancel a run",
    response={200: answers.Run, 202: answers.Run},
)
async def cancel_run(request, thread_id: ThreadId, run_id: str, query: Query[CancelQuery]):
    """Cancels a pending run at once, or stops a running one at its next super-step
    boundary: with ``action=interrupt`` (the default) its checkpoints are kept and it
    ends ``interrupted``; with ``action=rollback`` the run and the checkpoints it wrote
    are deleted once it has stopped (a 204 then, when it is already gone). With
    ``wait``, answers once the run has ended. Returns the run. 409 when it has already
    ended."""
    run = await borrow(_cancel, request, thread_id, run_id, query.action)
    if query.wait:
        await follow.wait_until_final(run.pk)
    found = await borrow(
        lambda: Run.objects.select_related("thread", "assistant").filter(pk=run.pk).first()
    )
    if found is None:  # rolled back: the run is gone, as the Agent Server's is
        return HttpResponse(status=204)
    return json_response(request, shapes.run_json(found), 200 if query.wait else 202)


def _cancel(request, name: str, run_id: str, action: str) -> Run:
    """Cancel the run (``action`` ``interrupt``: it keeps its checkpoints; ``rollback``:
    they and the run are deleted once it has stopped). Returns the run as it was."""
    run = access.run(request, name, run_id)
    may_change(request)
    if action == "rollback":
        engine.cancel_with_rollback(run, requested_by=caller(request))
        return run
    return engine.cancel(run, requested_by=caller(request))


@runs.delete("/{thread_id}/runs/{run_id}", summary="Delete a run", response={204: None})
def delete_run(request, thread_id: ThreadId, run_id: str):
    """Deletes a run that has ended and its events; the checkpoints it wrote stay in
    the thread's history. 409 while it is pending or running (cancel it first)."""
    run = access.run(request, thread_id, run_id)
    may_change(request)
    engine.delete_run(run, requested_by=caller(request))
    return 204, None
