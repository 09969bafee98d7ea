"""The requests on threads and runs: ``create_thread``, ``update_thread_metadata``,
``fork``, ``close``, ``cancel``, ``delete_thread``; the requests for a run (``submit``,
``start``, ``resume``, ``replay``, ``answer_again``) are ``durable.engine.runs``'. The
console and the API call these (through ``durable.engine``), and read state through
``durable.engine.state``.

Every request is validated before anything is written: a refused request raises
``InvalidRequest`` naming the field at fault and leaves no Run row, no checkpoint and no
changed status behind. An accepted request that runs the graph writes a ``pending`` Run in
one transaction (a fork's ``update_state`` included) and dispatches it when that
transaction commits (``durable.engine.queue``); a worker then executes it
(``durable.engine.execution``). Each request is recorded in the audit trail in the same
transaction.

One run at a time per thread; a request that finds an active run follows its
``multitask_strategy`` (``reject``, ``enqueue``, ``interrupt``, ``rollback``, as LangGraph's
Agent Server names them; see ``durable.engine.policy``).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone
from langgraph.constants import END

from durable import audit
from durable.engine import policy, queue, versions
from durable.engine.checks import (
    InvalidRequest,
    actor,
    check_update,
    checked_metadata,
    checked_name,
    checkpoint_config,
    compiled_graph,
    run_options,
)
from durable.engine.fit import thread_drift
from durable.engine.records import lock_thread, set_thread_status
from durable.engine.requests import RunRequest
from durable.engine.state import graph_of
from durable.engine.update import apply, run_refusal
from durable.graphs import get_graph
from durable.models import Run, Tenant, Thread
from durable.persistence.checkpoint import DjangoSaver
from durable.persistence.metadata import canonical


@dataclass(frozen=True)
class ForkResult:
    """What ``fork`` made: ``config`` of the new checkpoint (``{"configurable":
    {"thread_id", "checkpoint_ns", "checkpoint_id"}}``) and, when asked to run, the
    pending ``run`` (kind ``fork``) that continues from it."""

    config: dict
    run: Run | None = None

    @property
    def checkpoint_id(self) -> str:
        return self.config["configurable"]["checkpoint_id"]


# -- requests -----------------------------------------------------------------------


def create_thread(
    graph: str | None,
    *,
    name: str | None = None,
    metadata: dict | None = None,
    tenant: Tenant | None = None,
) -> Thread:
    """A new thread of ``graph`` in ``tenant`` (default: ``Tenant.default()``) with no
    run and no checkpoint yet. ``name`` is the id the tenant gives it (the API's
    ``thread_id``); without one, the thread's random UUID. With ``graph`` ``None`` the
    thread's first run binds it to a graph (the Agent Server's bare ``POST /threads``). Raises
    ``InvalidRequest`` for an unknown graph (``graph``), an id over 255 characters or
    with text no database holds (``name``), one already taken in the tenant
    (``thread``), or metadata that is not a JSON object or cannot be stored
    (``metadata``, or the path below it)."""
    if graph is not None:
        compiled_graph(graph)
    name = checked_name(name) if name is not None else None
    # Sorted keys: SQLite compares nested metadata as text (durable.persistence.metadata).
    metadata = json.loads(canonical(checked_metadata(metadata)))
    tenant = tenant or Tenant.default()
    with transaction.atomic():
        if name is not None and tenant.threads.filter(name=name).exists():
            raise InvalidRequest("thread", f"Thread {name!r} already exists.")
        return _new_thread(tenant, name, graph=graph or "", metadata=metadata)


def _new_thread(tenant: Tenant, name: str | None, **fields) -> Thread:
    """The checkpointer files a thread under a fresh UUID, whatever the tenant calls it,
    so that two tenants' threads of the same name never share a checkpoint."""
    key = str(uuid.uuid4())
    return Thread.objects.create(tenant=tenant, thread_id=key, name=name or key, **fields)


def update_thread_metadata(thread: Thread, metadata: dict) -> Thread:
    """Merge ``metadata`` into the thread's, as the Agent Server's ``PATCH /threads/{id}``
    does: its keys replace the same keys of the thread's metadata, the other keys stay.
    Returns the thread as it is now. Raises ``InvalidRequest("metadata")`` for metadata
    that is not a JSON object or cannot be stored."""
    metadata = checked_metadata(metadata)
    with transaction.atomic():
        thread = lock_thread(thread)
        # Sorted keys: SQLite compares nested metadata as text (durable.persistence.metadata).
        merged = json.loads(canonical({**thread.metadata, **metadata}))
        Thread.objects.filter(pk=thread.pk).update(metadata=merged, updated_at=timezone.now())
    thread.refresh_from_db()
    return thread


def fork(
    thread: Thread,
    checkpoint_id: str,
    values: dict | None,
    *,
    as_node: str | None = None,
    run: bool = False,
    metadata: dict | None = None,
    durability: str = "async",
    requested_by: Any = None,
) -> ForkResult:
    """Branch the thread at ``checkpoint_id``: ``graph.update_state(<that checkpoint's
    config>, values, as_node=as_node)`` appends a new checkpoint whose parent is that
    one (history is never edited; reducers apply), then, with ``run=True``, a ``fork``
    run continues from the new checkpoint.

    ``as_node`` is the node the update counts as, and so decides what runs next;
    ``None`` lets LangGraph infer the last node that wrote. Besides the graph's nodes,
    LangGraph's ``update_state`` (``langgraph/pregel/main.py``) accepts ``"__copy__"``
    (copy the checkpoint as it is, no values), ``"__input__"`` (the values are graph
    input) and ``"__end__"`` (no values: clear the next tasks). ``values`` is a JSON
    object of state keys, or ``None``.

    The thread must have no active run: ``InvalidRequest("thread")``. A fork appends
    the thread's newest checkpoint, and an active run that is re-executed after its
    worker died goes on from the thread's newest checkpoint (``durable.engine.execution``); a
    branch written meanwhile would be taken for the run's own progress. Other errors:
    ``checkpoint_id`` (not the thread's), ``as_node``, ``values``, and those of
    ``start``; and ``as_node`` for ``run=True`` when the new checkpoint has no next
    task (the run would run nothing: ``durable.engine.update.NOTHING_NEXT``). The
    update and the Run are written in one transaction: a refused request leaves no
    checkpoint behind. Without a run, the thread's status follows the new checkpoint
    (``policy.thread_status_after_update``).

    ``metadata`` (e.g. ``{"reason": ...}`` from the console) is added to the new
    checkpoint's metadata, so a fork that does not run still records why it was made,
    and, with ``run=True``, kept on the Run and on the checkpoints it writes."""
    request = RunRequest(metadata=metadata, durability=durability, requested_by=requested_by)
    options = run_options(request)
    return _fork(thread, checkpoint_id, values, as_node, run, options)


def close(
    thread: Thread, checkpoint_id: str, *, requested_by: Any = None, reason: str = ""
) -> ForkResult:
    """Close the thread without resuming it: fork its newest checkpoint, ``checkpoint_id``,
    as ``"__end__"`` with no values, which clears its next tasks and so its pending
    interrupts; the thread is ``idle`` after. ``reason`` is kept on the new checkpoint's
    metadata and in the audit trail (action ``close``). Raises
    ``InvalidRequest("checkpoint_id")`` when no interrupt is pending at ``checkpoint_id``
    (there is nothing to close) or it is no longer the thread's newest checkpoint (it
    moved on since the caller looked), and the errors of ``fork``. An interrupt pending
    in a node the deployed graph no longer has (``durable.engine.fit``), which the
    deployed graph does not see, can be closed too."""
    metadata = {"reason": reason} if reason else None
    options = run_options(RunRequest(metadata=metadata, requested_by=requested_by))
    if not graph_of(thread).get_state(
        checkpoint_config(thread, checkpoint_id)
    ).interrupts and not _interrupted_in_gone_node(thread, checkpoint_id):
        raise InvalidRequest(
            "checkpoint_id",
            f"Thread {thread.name!r} has no pending interrupt to close at checkpoint "
            f"{checkpoint_id!r}.",
        )
    return _fork(thread, checkpoint_id, None, END, False, options, newest=True)


def _fork(
    thread: Thread,
    checkpoint_id: str,
    values: dict | None,
    as_node: str | None,
    run: bool,
    options: dict,
    newest: bool = False,
) -> ForkResult:
    """``fork`` with its options checked; with ``newest``, only from the thread's newest
    checkpoint."""
    base = checkpoint_config(thread, checkpoint_id)
    compiled = graph_of(thread)
    check_update(compiled, values, as_node)
    with transaction.atomic():
        thread = lock_thread(thread)
        _refuse_if_busy(thread, "fork")
        before = audit.head_checkpoint(thread)
        if newest and before != checkpoint_id:
            raise InvalidRequest(
                "checkpoint_id",
                f"Thread {thread.name!r} has moved on since checkpoint {checkpoint_id!r}; "
                "look at it again.",
            )
        # The saver adds the config's metadata to the checkpoint's: the deployed version
        # wrote this one (``durable.engine.fit`` reads it).
        written = {**options["metadata"], versions.METADATA_KEY: _digest(thread)}
        config = apply(compiled, {**base, "metadata": written}, values, as_node)
        next_tasks = compiled.get_state(config).next
        has_next = bool(next_tasks)
        created = None
        refused = run_refusal(next_tasks, as_node) if run else None
        if refused is not None:
            raise refused
        if run:
            created = _submit(
                thread,
                kind=Run.Kind.FORK,
                command={"update": values, "as_node": as_node},
                checkpoint_id=config["configurable"]["checkpoint_id"],
                forked_from=checkpoint_id,
                **options,
            )
        else:
            set_thread_status(thread.pk, policy.thread_status_after_update(thread, has_next))
        audit.record(
            # A fork as __end__ with no values closes the thread without resuming it.
            audit.Action.CLOSE if as_node == END and values is None else audit.Action.FORK,
            actor=options["requested_by"],
            thread=thread,
            run=created,
            checkpoint_id=checkpoint_id,
            before=before,
            after=config["configurable"]["checkpoint_id"],
            reason=_reason(options),
            detail={"as_node": as_node, "values": values},
        )
        return ForkResult(config, created)


def cancel(run: Run, *, requested_by: Any = None, reason: str = "") -> Run:
    """Cancel ``run``. A pending run ends ``cancelled`` at once (its Celery task is
    revoked, and a worker that still receives it skips it); a running one is asked to
    stop at its next super-step boundary (``RunControl.request_drain``, see
    ``durable.engine.execution``), keeping the checkpoints it wrote, and ends ``cancelled`` when
    its worker gets there, or is stopped hard after ``DURABLE_STOP_GRACE_SECONDS``.
    Returns the run as it now stands. Raises ``InvalidRequest("run")`` for a run that
    already ended."""
    who = actor(requested_by)
    detail = f"cancelled by {who}" if who else "cancelled"
    with transaction.atomic():
        lock_thread(run.thread)
        current = Run.objects.get(pk=run.pk)
        if current.status not in Run.ACTIVE:
            raise InvalidRequest("run", f"Run {run.pk} already ended ({current.status}).")
        if current.status == Run.Status.PENDING:
            queue.send(policy.end_pending(current, Run.Status.CANCELLED, detail))
        else:
            policy.request_stop(current.pk, Run.Stop.CANCEL, detail)
        audit.record(
            audit.Action.CANCEL,
            actor=requested_by,
            thread=run.thread,
            run=run,
            reason=reason,
            detail={"was": current.status},
        )
    return Run.objects.get(pk=run.pk)


def delete_thread(thread: Thread, *, requested_by: Any = None, reason: str = "") -> None:
    """Delete the thread, its runs and their events, and every checkpoint, blob and
    write it has in any namespace (``DjangoSaver.delete_thread``), in one transaction.
    Raises ``InvalidRequest("thread")`` while a run is running: its worker would go on
    writing checkpoints; cancel it first. Pending runs are deleted with the thread."""
    with transaction.atomic():
        thread = lock_thread(thread)
        if thread.runs.filter(status=Run.Status.RUNNING).exists():
            raise InvalidRequest(
                "thread", f"Thread {thread.name!r} has a running run; cancel it first."
            )
        # The saver writes on this thread's connection, so this joins the transaction.
        audit.record(
            audit.Action.DELETE,
            actor=requested_by,
            thread=thread,
            before=audit.head_checkpoint(thread),
            reason=reason,
        )
        saver = get_graph(thread.graph).checkpointer if thread.graph else DjangoSaver()
        saver.delete_thread(thread.thread_id)
        thread.delete()


# -- helpers ----------------------------------------------------------------------------


def _submit(thread: Thread, **fields) -> Run:
    """``policy.submit``, and what it asks of the broker once the transaction commits."""
    run, sends = policy.submit(thread, **fields)
    queue.send(sends)
    return run


def _interrupted_in_gone_node(thread: Thread, checkpoint_id: str) -> bool:
    drift = thread_drift(thread, checkpoint_id)
    return drift is not None and any(f.kind == "interrupt_node" for f in drift.findings)


def _digest(thread: Thread) -> str:
    return versions.deployed_version(thread.graph).digest


def _reason(options: dict) -> str:
    reason = options["metadata"].get("reason", "")
    return reason if isinstance(reason, str) else ""


def _audited(action: str, run: Run, answers: list | None = None, **checkpoints: str) -> Run:
    """Record the request of ``run`` in the audit trail; returns ``run``. ``answers``
    (``audit.answered``) are a resume's decisions: kept in the event's detail, and a
    rejection's reason is the event's reason when the request gave none of its own."""
    detail = {"multitask_strategy": run.multitask_strategy}
    for key in ("goto", "update"):  # a command's own, beside its answers
        if run.command and run.command.get(key) is not None:
            detail[key] = run.command[key]
    if run.kind == Run.Kind.FORK and run.input is not None:  # what a branch starts with
        detail["input"] = run.input
    if answers is not None:
        detail["answers"] = answers
    audit.record(
        action,
        actor=run.requested_by,
        thread=run.thread,
        run=run,
        checkpoint_id=run.checkpoint_id or run.forked_from,
        reason=_reason({"metadata": run.metadata}) or audit.rejections(answers or []),
        detail=detail,
        **checkpoints,
    )
    return run


def _refuse_if_busy(thread: Thread, what: str) -> None:
    if active := policy.active_run(thread):
        raise InvalidRequest(
            "thread",
            f"Thread {thread.name!r} has an active run (run {active.pk}, "
            f"{active.status}); a {what} must wait until it ends, or cancel it.",
        )
