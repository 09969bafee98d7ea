"""``/runs``: stateless runs, each on a thread of its own that the client never names
(created for it, deleted once the run has ended unless ``on_completion`` is ``keep``,
as the Agent Server does), in the background, waited for or streamed, or a batch of
them; and cancelling many runs at once (``/runs/cancel``). Each run is made as
``POST /threads/{thread_id}/runs`` makes one (``runs._create_run``)."""

from __future__ import annotations

import uuid

from django.http import HttpResponse
from ninja import Query, Router

from durable import engine
from durable.api import access, answers, shapes
from durable.api.authentication import caller, may_change
from durable.api.errors import ApiError, json_response
from durable.api.runs import _create_run, _located, _stream_response, _wait_output
from durable.api.schemas import BatchRunCreate, CancelQuery, RunsCancel, StatelessRunCreate
from durable.db import borrow
from durable.engine import inline
from durable.models import Run

stateless = Router(tags=["runs"])


def _create(request, body: StatelessRunCreate) -> Run:
    """The run on a new thread of the tenant's; ``on_completion`` recorded on it."""
    for field in ("checkpoint", "checkpoint_id"):
        if getattr(body, field) is not None:
            raise ApiError(422, "A stateless run has no past checkpoint to start from.", field)
    if body.command is not None:
        raise ApiError(422, "A stateless run has nothing to resume; send input.", "command")
    if body.input is None:
        raise ApiError(422, "A run needs an input.", "input")
    body.if_not_exists = "create"
    run = _create_run(request, str(uuid.uuid4()), body)
    engine.set_on_completion(run, body.on_completion)
    return run


def _ended(run: Run, body: StatelessRunCreate) -> None:
    """Once the request has the run's output: its thread goes, when it should."""
    if body.on_completion == "delete":
        engine.end_stateless(run.thread_pk)


@stateless.post("", summary="Create a stateless background run", response=answers.Run)
def create_stateless_run(request, body: StatelessRunCreate):
    """Starts ``input`` on a new thread; returns the pending run (its ``thread_id``
    names the thread). Fields as for ``POST /threads/{thread_id}/runs``, and
    ``on_completion``: ``delete`` (the default) deletes the thread once the run has
    ended, ``keep`` keeps it."""
    run = _create(request, body)
    return _located(json_response(request, shapes.run_json(run)), run)


@stateless.post(
    "/wait",
    summary="Create a stateless run and wait for its output",
    response=answers.RunOutput,
)
async def wait_stateless_run(request, body: StatelessRunCreate):
    """As ``POST /runs``, then waits for the run to end and returns what
    ``/threads/{thread_id}/runs/wait`` returns."""
    with inline.awaited():  # it may execute in this process
        run = await borrow(_create, request, body)
    output = await _wait_output(run.pk)
    response = _located(json_response(request, output), run)
    await borrow(_ended, run, body)
    return response


@stateless.post(
    "/stream",
    summary="Create a stateless run and stream its events (SSE)",
    openapi_extra=answers.EVENT_STREAM,
)
async def stream_stateless_run(request, body: StatelessRunCreate):
    """As ``POST /runs``, answered with the run's events as server-sent events, as
    ``/threads/{thread_id}/runs/stream`` sends them."""
    with inline.awaited():  # it may execute in this process
        run = await borrow(_create, request, body)
    response = _stream_response(request, run, body.modes(), body.stream_subgraphs, 0)
    response.streaming_content = _then_ended(response.streaming_content, run, body)
    return response


async def _then_ended(events, run: Run, body: StatelessRunCreate):
    try:
        async for chunk in events:
            yield chunk
    finally:
        # The stream ends with the run, or its client left (the thread then stays
        # while the run is active, for the reaper to delete after it).
        await borrow(_ended, run, body)


@stateless.post(
    "/batch",
    summary="Create a batch of stateless background runs",
    response=list[answers.Run],
)
def create_stateless_batch(request, body: list[BatchRunCreate]):
    """Starts each run of the list (1 to 100) as ``POST /runs`` does; returns the
    pending runs in the same order. One refused run refuses the batch (its field named
    ``<index>.<field>``) before any starts."""
    if not 1 <= len(body) <= 100:
        raise ApiError(422, "A batch holds 1 to 100 runs.", "body")
    for index, item in enumerate(body):
        try:
            item.modes()
            access.graph(request, item.assistant_id)
        except ApiError as exc:
            raise ApiError(exc.status, exc.message, f"{index}.{exc.field}") from None
        except engine.UnknownAssistant as exc:
            raise ApiError(404, exc.message, f"{index}.assistant_id") from None
    return [shapes.run_json(_create(request, item)) for item in body]


@stateless.post("/cancel", summary="Cancel runs", response={204: None})
def cancel_runs(request, body: RunsCancel, query: Query[CancelQuery]):
    """Cancels the tenant's active runs with ``status`` (``pending``, ``running`` or
    ``all``), or those of ``run_ids`` on thread ``thread_id``, as
    ``POST /threads/{thread_id}/runs/{run_id}/cancel`` cancels one (``action``
    ``interrupt`` or ``rollback``); a run that ended meanwhile is passed over. Answers
    204. 404 for an unknown thread or run."""
    may_change(request)
    if body.status is None:
        if body.thread_id is None or body.run_ids is None:
            raise ApiError(422, "Send status, or thread_id and run_ids.", "status")
        named = [access.run(request, body.thread_id, run_id) for run_id in body.run_ids]
        found = [run for run in named if run.is_active]
    elif body.thread_id is not None or body.run_ids is not None:
        raise ApiError(422, "Send status, or thread_id and run_ids, not both.", "status")
    else:
        found = engine.runs_to_cancel(request.auth.tenant, body.status)
    cancel = engine.cancel_with_rollback if query.action == "rollback" else engine.cancel
    for run in found:
        try:
            cancel(run, requested_by=caller(request))
        except engine.InvalidRequest as exc:
            if exc.field != "run":  # ended since it was found: nothing left to cancel
                raise
    return HttpResponse(status=204)
