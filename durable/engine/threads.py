"""Requests on whole threads and on runs beyond starting and cancelling them:
``copy_thread``, ``prune_threads``, ``patch_checkpoint_metadata``, ``delete_run``,
``cancel_with_rollback`` and ``runs_to_cancel``. As in ``durable.engine.operations``,
every request is validated before anything is written, and one that changes or removes
history is recorded in the audit trail in the same transaction.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from durable import audit, retention
from durable.engine import policy, queue
from durable.engine.checks import InvalidRequest, actor, checked_metadata, checkpoint_config
from durable.engine.operations import _new_thread, delete_thread
from durable.engine.records import lock_thread, set_thread_status
from durable.engine.state import thread_state
from durable.graphs import get_graph
from durable.models import Checkpoint, Run, Tenant, Thread
from durable.persistence.metadata import canonical


def copy_thread(thread: Thread) -> Thread:
    """A new thread of the same tenant and graph, with a new id, the same metadata and
    every checkpoint, blob and write of ``thread`` in every namespace (its history,
    ids kept: the copy reads as the original did). Runs are not copied. Its status is
    the original's, but never ``busy``: no run runs on the copy. Raises
    ``InvalidRequest("thread")`` while a run is running on ``thread``, whose
    checkpoints would be copied half-written."""
    with transaction.atomic():
        thread = lock_thread(thread)
        if thread.runs.filter(status=Run.Status.RUNNING).exists():
            raise InvalidRequest(
                "thread", f"Thread {thread.name!r} has a running run; copy it once it ends."
            )
        copy = _new_thread(thread.tenant, None, graph=thread.graph, metadata=dict(thread.metadata))
        if thread.graph:
            get_graph(thread.graph).checkpointer.copy_thread(thread.thread_id, copy.thread_id)
        status = thread.status
        if status == Thread.Status.BUSY:
            status = policy.thread_status_after(None, bool(thread_state(copy).interrupts))
        set_thread_status(copy.pk, status)
    copy.refresh_from_db()
    return copy


def prune_threads(threads: QuerySet[Thread], strategy: str, *, requested_by: Any = None) -> int:
    """Prune ``threads`` as the Agent Server's ``POST /threads/prune``: ``delete``
    deletes each (its runs, every checkpoint); ``keep_latest`` keeps each thread and
    only its latest checkpoint per namespace. A thread with an active run is skipped
    (``durable.retention``, which records each in the audit trail). Returns how many
    threads were deleted or had checkpoints removed."""
    if strategy == "delete":
        report = retention.delete_threads(threads, actor=requested_by)
        return report.deleted
    if strategy == "keep_latest":
        report = retention.prune_threads(threads, keep=1, actor=requested_by)
        return report.pruned
    raise InvalidRequest("strategy", "strategy is delete or keep_latest.")


def patch_checkpoint_metadata(
    thread: Thread,
    metadata: dict,
    *,
    checkpoint_id: str | None = None,
    requested_by: Any = None,
) -> dict:
    """Merge ``metadata`` into that of one of the thread's checkpoints (default: its
    latest), as LangGraph's SDKs' ``patch_state`` asks: its keys replace the same keys,
    the others stay; the checkpoint's values and place in history are untouched.
    Returns the merged metadata. Raises ``InvalidRequest("metadata")`` for metadata that
    is not a JSON object or cannot be stored, ``InvalidRequest("checkpoint_id")`` for a
    checkpoint the thread does not have or a thread with none."""
    metadata = checked_metadata(metadata)
    if checkpoint_id is None:
        checkpoint_id = thread_state(thread).config["configurable"].get("checkpoint_id")
        if checkpoint_id is None:
            raise InvalidRequest("checkpoint_id", f"Thread {thread.name!r} has no checkpoint yet.")
    checkpoint_config(thread, checkpoint_id)
    with transaction.atomic():
        thread = lock_thread(thread)
        row = Checkpoint.objects.select_for_update().get(
            thread_id=thread.thread_id, checkpoint_ns="", checkpoint_id=checkpoint_id
        )
        # Sorted keys: SQLite compares nested metadata as text (durable.persistence.metadata).
        merged = json.loads(canonical({**row.metadata, **metadata}))
        Checkpoint.objects.filter(pk=row.pk).update(metadata=merged)
        audit.record(
            audit.Action.PATCH_STATE,
            actor=requested_by,
            thread=thread,
            checkpoint_id=checkpoint_id,
            detail={"metadata": metadata},
        )
    return merged


def delete_run(run: Run, *, requested_by: Any = None) -> None:
    """Delete ``run`` and its events; the checkpoints it wrote stay (they are the
    thread's history). Raises ``InvalidRequest("run")`` for a run still active: cancel
    it first."""
    with transaction.atomic():
        thread = lock_thread(run.thread)
        current = Run.objects.filter(pk=run.pk).first()
        if current is None:
            return
        if current.status in Run.ACTIVE:
            raise InvalidRequest(
                "run", f"Run {run.pk} is {current.status}; cancel it before deleting it."
            )
        audit.record(
            audit.Action.DELETE,
            actor=requested_by,
            thread=thread,
            run=current,
            detail={"deleted": "run", "status": current.status},
        )
        current.delete()


def cancel_with_rollback(run: Run, *, requested_by: Any = None, reason: str = "") -> Run | None:
    """Cancel ``run`` and discard it, as the Agent Server's cancel with
    ``action=rollback``: a pending run is deleted at once; a running one is asked to
    stop at its next super-step boundary, after which its worker deletes the
    checkpoints it wrote and the run (``durable.engine.execution.roll_back``, as for
    ``multitask_strategy=rollback``). Returns the run as it now stands, or ``None`` once
    deleted. Raises ``InvalidRequest("run")`` for a run that already ended."""
    who = actor(requested_by)
    detail = f"rolled back by {who}" if who else "rolled back"
    with transaction.atomic():
        thread = lock_thread(run.thread)
        current = Run.objects.get(pk=run.pk)
        if current.status not in Run.ACTIVE:
            raise InvalidRequest("run", f"Run {run.pk} already ended ({current.status}).")
        audit.record(
            audit.Action.CANCEL,
            actor=requested_by,
            thread=thread,
            run=current,
            reason=reason,
            detail={"was": current.status, "action": "rollback"},
        )
        if current.status == Run.Status.RUNNING:
            policy.request_stop(current.pk, Run.Stop.ROLLBACK, detail)
            return Run.objects.select_related("thread").get(pk=run.pk)
        revoke = policy.Sends(revoke=[current.task_id] if current.task_id else [])
        current.delete()
        queue.send(revoke | policy.settle_thread(thread.pk))
    return None


def runs_to_cancel(tenant: Tenant, status: str) -> list[Run]:
    """The tenant's active runs a bulk cancel by ``status`` names: those ``pending``,
    ``running`` or either (``all``), oldest first. (A bulk cancel by run ids reads each
    run through the API's tenant-scoped accessor.)"""
    wanted = Run.ACTIVE if status == "all" else (status,)
    runs = Run.objects.filter(thread__tenant=tenant, status__in=wanted)
    return list(runs.select_related("thread").order_by("pk"))


# -- stateless runs -------------------------------------------------------------------


def set_on_completion(run: Run, on_completion: str) -> None:
    """Record what becomes of the thread of stateless ``run`` once its runs have ended:
    ``delete`` it (``end_stateless``) or ``keep`` it."""
    if on_completion not in ("delete", "keep"):
        raise InvalidRequest("on_completion", "on_completion is delete or keep.")
    Run.objects.filter(pk=run.pk).update(on_completion=on_completion)


def end_stateless(thread_pk: int) -> bool:
    """Delete the thread ``thread_pk`` of a stateless run that asked ``on_completion``
    ``delete`` (a cron's fire on a thread of its own asks it by its
    ``on_run_completed``), once none of its runs is active, as the Agent Server deletes
    a stateless run's thread after the run; through ``delete_thread``, so audited, as
    the system. Returns whether it was deleted."""
    with transaction.atomic():
        thread = Thread.objects.select_for_update().filter(pk=thread_pk).first()
        if thread is None or thread.runs.filter(status__in=Run.ACTIVE).exists():
            return False
        asked = thread.runs.filter(on_completion="delete")
        if not asked.exists():
            return False
        cron = asked.exclude(cron=None).values_list("cron__cron_id", flat=True).first()
        if cron is not None:
            reason = f"the run of cron {cron} ended (on_run_completed: delete)"
        else:
            reason = "its stateless run ended (on_completion: delete)"
        delete_thread(thread, reason=reason)
    return True


def sweep_stateless(ended_before, limit: int = 100) -> int:
    """``end_stateless`` for the threads of stateless runs that asked ``delete`` and
    ended before ``ended_before`` (a datetime), for the runs no request waited for
    (``POST /runs``): the reaper calls it. Returns how many threads were deleted."""
    done = (
        Run.objects.filter(on_completion="delete", ended_at__lt=ended_before)
        .values_list("thread", flat=True)
        .distinct()[:limit]
    )
    return sum(end_stateless(pk) for pk in list(done))
