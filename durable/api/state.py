"""``/threads/{thread_id}/state`` and ``/history``: a thread's state, latest or at a
checkpoint, its checkpoints newest first, and ``update_state``, which forks the thread
at a checkpoint (history is never edited)."""

from __future__ import annotations

from ninja import Query, Router

from durable import engine
from durable.api import access, answers, shapes
from durable.api.authentication import caller, may_change
from durable.api.errors import ApiError
from durable.api.schemas import (
    CheckpointRef,
    ConfigRef,
    HistoryQuery,
    StateAtCheckpoint,
    StatePatch,
    StateQuery,
    StateUpdate,
    ThreadId,
    chosen_checkpoint,
)
from durable.models import Thread
from durable.redaction import restore
from durable.values import jsonable

state = Router(tags=["threads"])


def _state_at(
    thread: Thread, checkpoint_id: str | None, field: str, subgraphs: bool, checkpoint_ns: str = ""
) -> dict:
    """The state at ``checkpoint_id`` (in ``checkpoint_ns``); a refusal names ``field``,
    where the request gave the id."""
    try:
        snapshot = engine.state_at(
            thread, checkpoint_id, checkpoint_ns=checkpoint_ns, subgraphs=subgraphs
        )
    except engine.InvalidRequest as exc:
        if exc.field == "checkpoint_ns":
            raise engine.InvalidRequest("checkpoint.checkpoint_ns", exc.message) from None
        raise engine.InvalidRequest(field, exc.message) from None
    return shapes.state_json(snapshot, thread)


@state.get(
    "/{thread_id}/state", summary="Get a thread's latest state", response=answers.ThreadState
)
def get_state(request, thread_id: ThreadId, query: Query[StateQuery]):
    """The latest ``ThreadState``; with ``subgraphs``, each task's subgraph state."""
    thread = access.thread(request, thread_id)
    return shapes.state_json(engine.thread_state(thread, subgraphs=query.subgraphs), thread)


@state.post(
    "/{thread_id}/state",
    summary="Update a thread's state (fork)",
    response=answers.ThreadStateUpdateResponse,
)
def update_state(request, thread_id: ThreadId, body: StateUpdate):
    """``update_state`` at ``checkpoint`` (default: the latest) with ``values`` (state
    keys; reducers apply), as if node ``as_node`` had written them (or LangGraph's
    ``__copy__``, ``__input__``, ``__end__``). History is not edited: a new checkpoint
    branches off that one. Returns ``{"checkpoint": ...}``, the new checkpoint. The
    thread's status follows it, as the Agent Server's does: ``error`` if the thread's
    last run failed, else ``interrupted`` if the new checkpoint has next tasks, else
    ``idle``. A value still equal to the mask answers showed (``[redacted]``) where the
    checkpoint has a value keeps that value."""
    thread = access.thread(request, thread_id)
    may_change(request)
    checkpoint_id = chosen_checkpoint(body)
    if checkpoint_id is None:
        latest = engine.thread_state(thread).config["configurable"].get("checkpoint_id")
        if latest is None:
            raise ApiError(
                409, f"Thread {thread.name!r} has no checkpoint to update yet.", "checkpoint"
            )
        checkpoint_id = latest
    field = "checkpoint.checkpoint_id" if body.checkpoint else "checkpoint_id"
    try:
        values = body.values
        if isinstance(values, dict):
            # A client sending back the masked state it read keeps the stored values.
            stored = jsonable(engine.state_at(thread, checkpoint_id).values)
            values = restore(values, stored)
        forked = engine.fork(
            thread, checkpoint_id, values, as_node=body.as_node, requested_by=caller(request)
        )
    except engine.InvalidRequest as exc:
        if exc.field == "checkpoint_id":
            raise engine.InvalidRequest(field, exc.message) from None
        raise
    return {"checkpoint": shapes.checkpoint_json(forked.config, thread)}


@state.patch(
    "/{thread_id}/state",
    summary="Patch the metadata of a thread's latest checkpoint",
    response={204: None},
)
def patch_state(request, thread_id: ThreadId, body: StatePatch):
    """Merges ``metadata`` into that of the thread's latest checkpoint (the SDKs'
    ``patch_state``): its keys replace the same keys, the others stay; values and
    history are untouched. Answers 204. 422 (``checkpoint_id``) when the thread has no
    checkpoint yet."""
    thread = access.thread(request, thread_id)
    may_change(request)
    engine.patch_checkpoint_metadata(thread, body.metadata, requested_by=caller(request))
    return 204, None


@state.post(
    "/{thread_id}/state/checkpoint",
    summary="Get a thread's state at a checkpoint",
    response=answers.ThreadState,
)
def post_state_at(request, thread_id: ThreadId, body: StateAtCheckpoint):
    """The state at ``checkpoint``; a subgraph's pointer (``checkpoint_ns`` set,
    ``checkpoint_id`` null, as a task's ``state`` gives it) is that subgraph's latest
    state."""
    thread = access.thread(request, thread_id)
    point = body.checkpoint
    return _state_at(
        thread, point.checkpoint_id, "checkpoint.checkpoint_id", body.subgraphs, point.checkpoint_ns
    )


@state.get(
    "/{thread_id}/state/{checkpoint_id}",
    summary="Get a thread's state at a checkpoint",
    response=answers.ThreadState,
)
def get_state_at(request, thread_id: ThreadId, checkpoint_id: str, query: Query[StateQuery]):
    thread = access.thread(request, thread_id)
    return _state_at(thread, checkpoint_id, "checkpoint_id", query.subgraphs)


@state.post(
    "/{thread_id}/history",
    summary="List a thread's checkpoints, newest first",
    response=list[answers.ThreadState],
)
def get_history(request, thread_id: ThreadId, body: HistoryQuery = None):
    """At most ``limit`` (1-1000) states, newest first: older than checkpoint ``before``
    (an id, a checkpoint object, or a config ``{"configurable": {"checkpoint_id"}}``),
    with metadata matching ``metadata`` (also accepted
    as ``filter``)."""
    body = body or HistoryQuery()
    thread = access.thread(request, thread_id)
    if body.checkpoint and body.checkpoint.checkpoint_ns:
        raise ApiError(422, "Subgraph histories are not served yet.", "checkpoint.checkpoint_ns")
    before = body.before
    if isinstance(before, ConfigRef):
        before = before.configurable
    if isinstance(before, CheckpointRef):
        before = before.checkpoint_id
    history = engine.thread_history(thread, body.limit, before=before, filter=body.metadata)
    return [shapes.state_json(s, thread) for s in history]
