"""The operations on threads: start a run, resume an interrupt, and execute a run.

The console and (later) the API call only these. Each request is validated before
anything is written; a rejected request raises ``InvalidRequest`` naming the field and
leaves no Run row and no checkpoint behind. Accepted requests write a ``pending`` Run
in one transaction and enqueue ``durable.tasks.execute_run`` when it commits; a Celery
worker then calls ``execute``.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone
from langgraph.types import Command, StateSnapshot

from durable.checkpoint import check_thread_id
from durable.graphs import UnknownGraph, get_graph
from durable.metadata import canonical
from durable.models import Checkpoint, Run, Thread
from durable.values import jsonable

logger = logging.getLogger(__name__)

_THREAD_STATUS_AFTER = {
    Run.Status.SUCCESS: Thread.Status.IDLE,
    Run.Status.INTERRUPTED: Thread.Status.INTERRUPTED,
    Run.Status.ERROR: Thread.Status.ERROR,
}


class InvalidRequest(ValueError):
    """A request that was refused before anything changed. ``field`` names the input at
    fault (``"graph"``, ``"input"``, ``"resume"``, ``"answers"``, ``"thread"``)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


# -- reading a thread -------------------------------------------------------------


def _config(thread: Thread) -> dict:
    return {"configurable": {"thread_id": thread.thread_id}}


def _empty_state(thread: Thread) -> StateSnapshot:
    return StateSnapshot(
        values={},
        next=(),
        config=_config(thread),
        metadata=None,
        created_at=None,
        parent_config=None,
        tasks=(),
        interrupts=(),
    )


def thread_state(thread: Thread, *, subgraphs: bool = False) -> StateSnapshot:
    """The thread's latest ``StateSnapshot`` (values, next, tasks, interrupts); with
    ``subgraphs``, the state of each task's subgraph in ``task.state``. A thread that no
    graph has run on yet (created bare through the API) has an empty snapshot."""
    if not thread.graph:
        return _empty_state(thread)
    return get_graph(thread.graph).get_state(_config(thread), subgraphs=subgraphs)


def state_at(thread: Thread, checkpoint_id: str, *, subgraphs: bool = False) -> StateSnapshot:
    """The ``StateSnapshot`` of ``thread`` at root checkpoint ``checkpoint_id``. Raises
    ``InvalidRequest("checkpoint_id")`` when that is not one of the thread's checkpoints."""
    if (
        not thread.graph
        or not Checkpoint.objects.filter(
            thread_id=thread.thread_id, checkpoint_ns="", checkpoint_id=checkpoint_id
        ).exists()
    ):
        raise InvalidRequest(
            "checkpoint_id",
            f"Checkpoint {checkpoint_id!r} is not a checkpoint of thread {thread.thread_id!r}.",
        )
    config = {"configurable": {"thread_id": thread.thread_id, "checkpoint_id": checkpoint_id}}
    return get_graph(thread.graph).get_state(config, subgraphs=subgraphs)


def thread_history(
    thread: Thread,
    limit: int = 50,
    *,
    before: str | None = None,
    filter: dict[str, Any] | None = None,
) -> list[StateSnapshot]:
    """The thread's checkpoints as ``StateSnapshot``s, newest first, at most ``limit``:
    only those older than checkpoint id ``before``, and whose metadata has every
    key/value of ``filter``."""
    if not thread.graph:
        return []
    config = _config(thread)
    before_config = None
    if before is not None:
        before_config = {"configurable": {**config["configurable"], "checkpoint_id": before}}
    history = get_graph(thread.graph).get_state_history(
        config, limit=limit, before=before_config, filter=filter
    )
    return list(history)


def create_thread(
    thread_id: str | None = None,
    *,
    graph: str | None = None,
    metadata: dict[str, Any] | None = None,
    if_exists: str = "raise",
) -> tuple[Thread, bool]:
    """A thread with no run yet: ``(thread, created)``. Without ``graph`` the thread is
    bound to the graph of its first run. With ``if_exists="do_nothing"`` an existing
    ``thread_id`` is returned unchanged; with ``"raise"`` it is refused. Raises
    ``InvalidRequest`` naming ``thread_id``, ``graph`` or ``metadata``."""
    if graph is not None:
        try:
            get_graph(graph)
        except UnknownGraph as exc:
            raise InvalidRequest("graph", str(exc)) from None
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidRequest("metadata", "metadata must be a JSON object.")
    check_storable(metadata, "metadata")
    if thread_id is None:
        thread_id = str(uuid.uuid4())
    elif not isinstance(thread_id, str) or not thread_id.strip():
        raise InvalidRequest("thread_id", "thread_id must be a non-empty string.")
    try:
        thread_id = check_thread_id(thread_id)
    except ValueError as exc:
        raise InvalidRequest("thread_id", str(exc)) from None
    check_storable(thread_id, "thread_id")
    with transaction.atomic():
        thread, created = Thread.objects.get_or_create(
            thread_id=thread_id,
            # Sorted keys: SQLite compares nested metadata as text (durable.metadata).
            defaults={"graph": graph or "", "metadata": json.loads(canonical(metadata or {}))},
        )
    if not created and if_exists != "do_nothing":
        raise InvalidRequest("thread_id", f"Thread {thread_id!r} already exists.")
    return thread, created


def pending_interrupts(thread: Thread) -> list:
    """The ``Interrupt``s (``.id``, ``.value``) waiting on the thread's latest checkpoint,
    from every task (``StateSnapshot.interrupts``)."""
    return list(thread_state(thread).interrupts)


# -- requests -----------------------------------------------------------------------


def start(graph: str, input: Any, *, thread_id: str | None = None) -> Run:
    """Start ``graph`` on a new thread (or on ``thread_id``) with ``input``, a JSON object
    whose keys are the graph's input channels. Returns the pending Run."""
    try:
        compiled = get_graph(graph)
    except UnknownGraph as exc:
        raise InvalidRequest("graph", str(exc)) from None
    _check_input(compiled, input)
    if thread_id is not None:
        try:
            thread_id = check_thread_id(thread_id)
        except ValueError as exc:
            raise InvalidRequest("thread", str(exc)) from None
    with transaction.atomic():
        thread, created = Thread.objects.get_or_create(
            thread_id=thread_id or str(uuid.uuid4()), defaults={"graph": graph}
        )
        thread = Thread.objects.select_for_update().get(pk=thread.pk)
        if not thread.graph:  # created bare: its first run binds it to a graph
            thread.graph = graph
            thread.save(update_fields=["graph", "updated_at"])
        if not created and thread.graph != graph:
            raise InvalidRequest(
                "graph", f"Thread {thread.thread_id!r} runs graph {thread.graph!r}, not {graph!r}."
            )
        return _enqueue(thread, kind=Run.Kind.START, input=input)


def resume(thread: Thread, value: Any = None, *, answers: dict[str, Any] | None = None) -> Run:
    """Answer the thread's pending interrupt(s) with a ``resume`` run.

    Pass ``value`` when one interrupt is pending: the graph is resumed with
    ``Command(resume=value)``. Pass ``answers`` ``{interrupt_id: value}`` to answer
    several at once: ``Command(resume=answers)`` (LangGraph's resume map). Raises
    ``InvalidRequest`` when nothing is pending, when an id is not pending, or when
    several are pending and ``answers`` is not used.
    """
    pending = {i.id for i in pending_interrupts(thread)}
    if not pending:
        raise InvalidRequest(
            "resume", f"Thread {thread.thread_id!r} has no pending interrupt to resume."
        )
    if answers is not None:
        if not isinstance(answers, dict) or not answers:
            raise InvalidRequest("answers", "answers must map interrupt ids to values.")
        if unknown := sorted(set(answers) - pending):
            raise InvalidRequest("answers", f"Not pending on this thread: {', '.join(unknown)}.")
        check_storable(answers, "answers")
        command = {"resume": answers}
    elif len(pending) > 1:
        raise InvalidRequest(
            "resume",
            f"{len(pending)} interrupts are pending; answer each by its interrupt id.",
        )
    else:
        check_storable(value, "resume")
        command = {"resume": value}
    with transaction.atomic():
        thread = Thread.objects.select_for_update().get(pk=thread.pk)
        return _enqueue(thread, kind=Run.Kind.RESUME, command=command)


def _check_input(compiled, input: Any) -> None:
    if not isinstance(input, dict):
        raise InvalidRequest("input", "input must be a JSON object.")
    check_storable(input, "input")
    # The input schema's keys (the state's, unless the graph declares ``input_schema``),
    # read from the builder rather than a JSON schema, which not every type can produce.
    allowed = set(compiled.builder.schemas[compiled.builder.input_schema])
    if unknown := sorted(set(input) - allowed):
        raise InvalidRequest(
            "input",
            f"Unknown input key(s): {', '.join(unknown)}. "
            f"The graph takes: {', '.join(sorted(allowed))}.",
        )


MAX_JSON_DEPTH = 100


def check_storable(value: Any, field: str) -> None:
    """Refuse a value that cannot be kept as JSON on a Run in every supported database:
    NaN and infinities (not JSON), NUL characters (PostgreSQL's jsonb rejects
    ``\\u0000``), non-JSON types, and nesting deeper than ``MAX_JSON_DEPTH`` (SQLite's
    JSON functions stop at 1,000). Raises ``InvalidRequest(field)``."""
    if problem := _json_problem(value, 0):
        raise InvalidRequest(field, f"{field} {problem}.")


def _json_problem(value: Any, depth: int) -> str | None:
    if depth > MAX_JSON_DEPTH:
        return f"is nested more than {MAX_JSON_DEPTH} levels deep"
    if value is None or isinstance(value, (bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "holds NaN or Infinity, which JSON cannot store"
    if isinstance(value, str):
        if "\x00" in value:
            return "holds a NUL character (\\u0000), which cannot be stored"
        return None
    if isinstance(value, dict):
        children = [*value.keys(), *value.values()]
    elif isinstance(value, list):
        children = value
    else:
        return f"holds a {type(value).__name__}, which is not JSON"
    return next(filter(None, (_json_problem(v, depth + 1) for v in children)), None)


def _enqueue(thread: Thread, **fields) -> Run:
    """Inside the caller's transaction, with ``thread`` locked: refuse a second active
    run, write the pending Run, mark the thread busy, and enqueue on commit."""
    if thread.runs.filter(status__in=Run.ACTIVE).exists():
        raise InvalidRequest("thread", f"Thread {thread.thread_id!r} already has an active run.")
    run = Run.objects.create(thread=thread, graph=thread.graph, **fields)
    thread.status = Thread.Status.BUSY
    thread.save(update_fields=["status", "updated_at"])
    transaction.on_commit(lambda: _send(run.pk))
    return run


def _send(run_id: int) -> None:
    from durable.tasks import execute_run  # tasks imports this module

    execute_run.delay(run_id)


# -- execution (in a worker) ----------------------------------------------------------


def execute(run_id: int) -> str:
    """Claim pending run ``run_id``, stream its graph to the end or to an interrupt, and
    record the outcome on the Run and its Thread. Returns the run's final status; a run
    that is not pending (already claimed or finished) is left alone, and a run that no
    longer exists returns ``"missing"``."""
    claimed = Run.objects.filter(pk=run_id, status=Run.Status.PENDING).update(
        status=Run.Status.RUNNING, started_at=timezone.now()
    )
    run = Run.objects.select_related("thread").filter(pk=run_id).first()
    if run is None:  # its thread was deleted before a worker got to it
        logger.warning("run %s no longer exists", run_id)
        return "missing"
    if not claimed:
        return run.status
    config = {
        "configurable": {"thread_id": run.thread.thread_id},
        "metadata": {"run_id": str(run.pk)},
    }
    graph = get_graph(run.graph)
    try:
        payload = Command(**run.command) if run.kind == Run.Kind.RESUME else run.input
        for _ in graph.stream(payload, config, stream_mode="updates"):
            pass
        snapshot = graph.get_state(config)
    except Exception as exc:
        logger.exception("run %s failed", run.pk)
        run.error_type = type(exc).__name__
        run.error_message = str(exc)
        return _finish(run, Run.Status.ERROR)
    run.interrupts = [{"id": i.id, "value": jsonable(i.value)} for i in snapshot.interrupts]
    return _finish(run, Run.Status.INTERRUPTED if run.interrupts else Run.Status.SUCCESS)


def _finish(run: Run, status: str) -> str:
    run.status = status
    run.ended_at = timezone.now()
    with transaction.atomic():
        run.save()
        Thread.objects.filter(pk=run.thread_id).update(
            status=_THREAD_STATUS_AFTER[status], updated_at=run.ended_at
        )
    return status
