"""``/threads/{thread_id}/runs``: a thread's runs, started in the background, waited
for or streamed; listed, read, joined (their output or their stream) and cancelled.
A run starts, resumes, replays or answers again as its body asks (``durable.engine``);
a worker executes it, and its events reach clients as the Agent Server's SSE stream."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Query, Router

from durable import engine, sse
from durable.api import access, answers, shapes
from durable.api.authentication import caller, may_change
from durable.api.errors import ApiError, json_response
from durable.api.schemas import (
    CancelQuery,
    JoinStreamQuery,
    RunCreate,
    RunsQuery,
    ThreadId,
    chosen_checkpoint,
    stream_modes,
)
from durable.db import borrow
from durable.engine import follow
from durable.models import Run, Thread
from durable.values import jsonable

runs = Router(tags=["threads"])


def _options(request: HttpRequest, body: RunCreate) -> dict:
    """What every run the body asks for takes, as ``durable.engine`` names it."""
    return {
        "metadata": body.metadata,
        "durability": body.durability,
        "multitask_strategy": body.multitask_strategy,
        "requested_by": caller(request),
    }


def _resume_args(pending: list[str], value: Any) -> dict:
    """``command.resume`` as ``engine.resume`` arguments: a map whose keys are all pending
    interrupt ids answers each by id (LangGraph's resume map); anything else is the
    answer to the one pending interrupt."""
    if isinstance(value, dict) and value and set(value) <= set(pending):
        return {"answers": value}
    return {"value": value}


def _create_run(request, name: str, body: RunCreate) -> Run:
    """The run ``body`` asks for on the thread named ``name``: ``input`` starts the
    graph (from ``checkpoint_id``: not served); ``command.resume`` answers the pending
    interrupt(s), or, with ``checkpoint_id``, those pending at that past checkpoint
    (``answer_again``); neither, with ``checkpoint_id``, replays from that checkpoint."""
    graph = access.graph(body.assistant_id)
    body.modes()
    thread = access.find_thread(request, name)
    if thread is None:
        if body.if_not_exists != "create" or body.input is None:
            raise access.thread_not_found(name)
        access.check_reachable(name)
    may_change(request)
    if thread is not None and thread.graph and thread.graph != graph:
        raise ApiError(
            422,
            f"Thread {name!r} runs graph {thread.graph!r}, not {graph!r}.",
            "assistant_id",
        )
    checkpoint_id = chosen_checkpoint(body)
    if body.command is not None and body.input is not None:
        raise ApiError(422, "Send either input or command, not both.", "input")
    if body.command is not None:
        return _resume(request, thread, body, checkpoint_id)
    if checkpoint_id is not None:
        if body.input is not None:
            raise ApiError(
                422, "A run from a past checkpoint takes no input; fork with update_state.", "input"
            )
        return engine.replay(thread, checkpoint_id, **_options(request, body))
    if body.input is None:
        raise ApiError(422, "A run needs an input (or a command).", "input")
    return engine.start(
        graph,
        body.input,
        name=name,
        tenant=request.auth.tenant,
        **_options(request, body),
    )


def _resume(request, thread: Thread, body: RunCreate, checkpoint_id: str | None) -> Run:
    value = body.command.resume
    if checkpoint_id is None:
        pending = [i.id for i in engine.pending_interrupts(thread)]
        return engine.resume(thread, **_resume_args(pending, value), **_options(request, body))
    if body.multitask_strategy != "reject":
        raise ApiError(
            422,
            "An answer given again forks the thread, which needs it idle: "
            "multitask_strategy must be reject.",
            "multitask_strategy",
        )
    pending = [i.id for i in engine.state_at(thread, checkpoint_id).interrupts]
    options = {k: v for k, v in _options(request, body).items() if k != "multitask_strategy"}
    return engine.answer_again(thread, checkpoint_id, **_resume_args(pending, value), **options)


def _run_path(run: Run) -> str:
    return reverse("api:get_run", args=[run.thread.name, run.pk])


def _located(response: HttpResponse, run: Run) -> HttpResponse:
    """Name the run in ``Content-Location``, where the SDK reads a new run's ids."""
    response["Content-Location"] = _run_path(run)
    return response


@runs.post("/{thread_id}/runs", summary="Create a background run", response=answers.Run)
def create_run(request, thread_id: ThreadId, body: RunCreate):
    """Starts a run with ``input``, resumes the thread's interrupt(s) with
    ``command.resume`` (one value, or ``{interrupt_id: value}``), or replays from
    ``checkpoint_id``; ``multitask_strategy`` decides what happens to an active run,
    ``durability`` when checkpoints are saved. Returns the pending run; a worker
    executes it."""
    run = _create_run(request, thread_id, body)
    return _located(json_response(request, shapes.run_json(run)), run)


def _output(run_id: int) -> dict:
    """What ``wait`` and ``join`` return once the run has ended: the thread's values,
    with ``__interrupt__`` when it stopped at interrupts, or ``__error__``."""
    run = Run.objects.select_related("thread").filter(pk=run_id).first()
    if run is None:
        return {"__error__": {"error": "RunDeleted", "message": "The run no longer exists."}}
    if run.status == Run.Status.ERROR:
        return {"__error__": {"error": run.error_type, "message": run.error_message}}
    state = engine.thread_state(run.thread)
    values = jsonable(state.values)
    if state.interrupts and isinstance(values, dict):
        values["__interrupt__"] = [shapes.interrupt_json(i) for i in state.interrupts]
    return values


async def _wait_output(run_id: int) -> dict:
    await follow.wait_until_final(run_id)
    return await borrow(_output, run_id)


@runs.post(
    "/{thread_id}/runs/wait",
    summary="Create a run and wait for its output",
    response=answers.RunOutput,
)
async def wait_run(request, thread_id: ThreadId, body: RunCreate):
    """As ``POST /threads/{thread_id}/runs``, then waits for the run to end and returns
    the thread's values (with ``__interrupt__``), or ``{"__error__": ...}``."""
    run = await borrow(_create_run, request, thread_id, body)
    output = await _wait_output(run.pk)
    return _located(json_response(request, output), run)


def _stream_response(request, run: Run, modes: list[str], subgraphs: bool, after: int):
    """The run's events in the Agent Server's SSE format, from the shared event source."""
    query = urlencode([("stream_mode", m) for m in modes] + [("stream_subgraphs", subgraphs)])
    response = sse.response(_sdk_events(run.pk, modes, subgraphs, after))
    # Where the SDK reconnects (with Last-Event-ID) if the stream is cut, and the run.
    response["Location"] = request.build_absolute_uri(f"{_run_path(run)}/stream?{query}")
    return _located(response, run)


async def _sdk_events(run_id: int, modes: list[str], subgraphs: bool, after: int):
    """``metadata`` first; then each recorded chunk of a wanted mode as ``event: mode``
    (``mode|ns`` for a subgraph's, with ``stream_subgraphs``) with ``id: seq``; when the
    run has ended, ``values`` (the thread's values, with ``__interrupt__``) and, for a
    failed run, ``error``."""
    if after == 0:
        yield sse.event("metadata", {"run_id": str(run_id), "attempt": 1})
    async for item in follow.follow(run_id, after):
        if isinstance(item, follow.Event):
            if item.event in modes and (subgraphs or not item.ns):
                name = f"{item.event}|{item.ns}" if item.ns else item.event
                yield sse.event(name, item.data, id=item.seq)
        elif isinstance(item, follow.Keepalive):
            yield sse.KEEPALIVE
        else:
            output = await borrow(_output, run_id)
            if "__error__" in output:
                yield sse.event("error", output["__error__"])
            elif "values" in modes:
                yield sse.event("values", output)


@runs.post(
    "/{thread_id}/runs/stream",
    summary="Create a run and stream its events (SSE)",
    openapi_extra=answers.EVENT_STREAM,
)
async def stream_run(request, thread_id: ThreadId, body: RunCreate):
    """As ``POST /threads/{thread_id}/runs``, answered with the run's events as
    server-sent events while it runs (see ``GET .../runs/{run_id}/stream``)."""
    run = await borrow(_create_run, request, thread_id, body)
    return _stream_response(request, run, body.modes(), body.stream_subgraphs, 0)


@runs.get(
    "/{thread_id}/runs", summary="List a thread's runs, newest first", response=list[answers.Run]
)
def list_runs(request, thread_id: ThreadId, query: Query[RunsQuery]):
    thread = access.thread(request, thread_id)
    found = thread.runs.select_related("thread")
    if query.status:
        found = found.filter(status=query.status)
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
    the ``Last-Event-ID`` header's event; the stream ends when the run has. Modes:
    ``stream_mode`` (repeatable; default all of values, updates, custom, tasks)."""
    if query.cancel_on_disconnect:
        raise ApiError(422, "cancel_on_disconnect is not supported.", "cancel_on_disconnect")
    try:
        after = sse.last_event_id(request)
    except ValueError as exc:
        raise ApiError(422, str(exc), "Last-Event-ID") from None
    modes = stream_modes(query.stream_mode)
    run = await borrow(access.run, request, thread_id, run_id)
    return _stream_response(request, run, modes, query.stream_subgraphs, after)


@runs.post(
    "/{thread_id}/runs/{run_id}/cancel",
    summary="Cancel a run",
    response={200: answers.Run, 202: answers.Run},
)
async def cancel_run(request, thread_id: ThreadId, run_id: str, query: Query[CancelQuery]):
    """Cancels a pending run at once, or stops a running one at its next super-step
    boundary (its checkpoints are kept). With ``wait``, answers once the run has ended.
    Returns the run. 409 when it has already ended."""
    if query.action == "rollback":
        raise ApiError(
            422,
            "Cancelling with rollback is not supported; a cancelled run keeps its "
            "checkpoints (start a run with multitask_strategy rollback to discard them).",
            "action",
        )
    run = await borrow(_cancel, request, thread_id, run_id)
    if query.wait:
        await follow.wait_until_final(run.pk)
    run = await borrow(lambda: Run.objects.select_related("thread").get(pk=run.pk))
    return json_response(request, shapes.run_json(run), 200 if query.wait else 202)


def _cancel(request, name: str, run_id: str) -> Run:
    run = access.run(request, name, run_id)
    may_change(request)
    return engine.cancel(run, requested_by=caller(request))
