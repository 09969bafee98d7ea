"""How runs wait, start and stop: the rules ``durable.engine.operations`` (requests) and
``durable.engine.execution`` (execution) share.

One run at a time per thread. A request that finds an active run follows its
``multitask_strategy``, named as LangGraph's Agent Server names them: ``reject`` refuses;
``enqueue`` queues the new run behind the active one; ``interrupt`` asks the active run
to stop at its next super-step (its progress is kept) and then runs; ``rollback`` stops
it, deletes it and its checkpoints (``DjangoSaver.delete_for_runs``), then runs. Queued
runs start oldest first: whoever ends a run dispatches the thread's next one.
"""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from durable.engine.checks import InvalidRequest
from durable.graphs import get_graph
from durable.models import Checkpoint, Run, RunEvent, Thread
from durable.persistence.metadata import MetadataKeyEquals

logger = logging.getLogger(__name__)


def lock_thread(thread: Thread | int) -> Thread:
    """The thread (or the thread with primary key ``thread``) re-read under a row lock,
    inside the caller's transaction. Every transaction that changes runs locks their
    thread first, so two of them never wait on each other in opposite orders."""
    pk = thread if isinstance(thread, int) else thread.pk
    return Thread.objects.select_for_update(no_key=True).get(pk=pk)


def active_runs(thread: Thread) -> list[Run]:
    return list(thread.runs.filter(status__in=Run.ACTIVE).order_by("pk"))


def submit(thread: Thread, *, multitask_strategy: str, **fields) -> Run:
    """Inside the caller's transaction, with ``thread`` locked: apply the multitask
    strategy to the active runs, write the pending Run, mark the thread busy, and
    dispatch the run when the transaction commits."""
    active = active_runs(thread)
    if active and multitask_strategy == Run.MultitaskStrategy.REJECT:
        raise InvalidRequest(
            "thread",
            f"Thread {thread.name!r} already has an active run (run {active[0].pk}, "
            f"{active[0].status}); pass multitask_strategy enqueue, interrupt or rollback "
            "to run anyway.",
        )
    run = Run.objects.create(
        thread=thread,
        graph=thread.graph,
        multitask_strategy=multitask_strategy,
        timeout_seconds=default_timeout(),
        **fields,
    )
    RunEvent.objects.append(
        run.pk,
        RunEvent.LIFECYCLE,
        {"status": run.status, "kind": run.kind, "requested_by": run.requested_by},
    )
    if multitask_strategy in (Run.MultitaskStrategy.INTERRUPT, Run.MultitaskStrategy.ROLLBACK):
        for old in active:
            displace(old, multitask_strategy, run)
    set_thread_status(thread, Thread.Status.BUSY)
    transaction.on_commit(lambda: dispatch_next(thread.pk))
    return run


def default_timeout() -> float | None:
    return getattr(settings, "DURABLE_RUN_TIMEOUT_SECONDS", None)


def displace(old: Run, strategy: str, new: Run) -> None:
    """Stop ``old`` for ``new``: ``interrupt`` keeps its progress, ``rollback`` deletes
    it and its checkpoints. A pending run has nothing to drain and ends at once."""
    if strategy == Run.MultitaskStrategy.INTERRUPT:
        detail = f"interrupted by run {new.pk} (multitask_strategy=interrupt)"
        stop = Run.Stop.INTERRUPT
    else:
        detail = f"rolled back by run {new.pk} (multitask_strategy=rollback)"
        stop = Run.Stop.ROLLBACK
    if old.status == Run.Status.PENDING:
        if stop == Run.Stop.ROLLBACK:
            revoke(old.task_id)
            old.delete()
        else:
            end_pending(old, Run.Status.CANCELLED, detail)
    else:
        request_stop(old.pk, stop, detail)


def request_stop(run_id: int, stop: str, detail: str) -> bool:
    """Ask the worker of running run ``run_id`` to drain; it notices at its next lease
    renewal (``durable.engine.execution``). A stronger request replaces a weaker one (a cancel
    replaces a shutdown, a rollback anything). Returns whether it was recorded."""
    weaker = {
        Run.Stop.CANCEL: ("", Run.Stop.SHUTDOWN, Run.Stop.TIMEOUT),
        Run.Stop.INTERRUPT: ("", Run.Stop.SHUTDOWN, Run.Stop.TIMEOUT),
        Run.Stop.ROLLBACK: (
            "",
            Run.Stop.SHUTDOWN,
            Run.Stop.TIMEOUT,
            Run.Stop.CANCEL,
            Run.Stop.INTERRUPT,
        ),
        Run.Stop.TIMEOUT: ("",),
        Run.Stop.SHUTDOWN: ("",),
    }[stop]
    changed = Run.objects.filter(
        pk=run_id, status=Run.Status.RUNNING, stop_requested__in=weaker
    ).update(stop_requested=stop, stop_requested_at=timezone.now(), stop_detail=detail)
    if changed:
        RunEvent.objects.append(
            run_id,
            RunEvent.LIFECYCLE,
            {"status": Run.Status.RUNNING, "stop_requested": stop, "detail": detail},
        )
    return bool(changed)


def end_pending(run: Run, status: str, detail: str) -> None:
    """End a run no worker has taken: it never ran, so there is nothing to drain."""
    now = timezone.now()
    changed = Run.objects.filter(pk=run.pk, status=Run.Status.PENDING).update(
        status=status, stop_detail=detail, ended_at=now
    )
    if not changed:
        return
    RunEvent.objects.append(run.pk, RunEvent.LIFECYCLE, {"status": status, "detail": detail})
    revoke(run.task_id)
    settle_thread(run.thread_id, status)


def revoke(task_id: str) -> None:
    """Best effort: brokers with broadcast (Redis, RabbitMQ) tell workers to drop the
    message. The embedded broker cannot broadcast (kombu's SQLAlchemy transport has no
    fanout), which is why the Run's status is what a worker checks before it runs."""
    if not task_id:
        return
    from durable.engine.tasks import execute_run

    def send():
        try:
            execute_run.app.control.revoke(task_id)
        except Exception:  # a broker outage must not undo the cancel
            logger.warning("could not revoke task %s", task_id, exc_info=True)

    transaction.on_commit(send)


def set_thread_status(thread: Thread, status: str) -> None:
    Thread.objects.filter(pk=thread.pk).update(status=status, updated_at=timezone.now())


_THREAD_STATUS_AFTER = {
    Run.Status.SUCCESS: Thread.Status.IDLE,
    Run.Status.INTERRUPTED: Thread.Status.INTERRUPTED,
    Run.Status.ERROR: Thread.Status.ERROR,
}


def settle_thread(thread_pk: int, ended: str | None = None) -> None:
    """After a run ended (with status ``ended``) or went away (``None``): if the thread
    has queued runs, dispatch the next one when the transaction commits; otherwise set
    the thread's status: ``idle``, ``interrupted`` or ``error`` after a run that ended
    so; after one that was cancelled, timed out or rolled back, ``interrupted`` if
    interrupts wait on the latest checkpoint, else ``idle``. Call it in the transaction
    that ended the run (holding the thread's lock), so that the run's status and the
    thread's change together."""
    if Run.objects.filter(thread_id=thread_pk, status__in=Run.ACTIVE).exists():
        transaction.on_commit(lambda: dispatch_next(thread_pk))
        return
    thread = Thread.objects.filter(pk=thread_pk).first()
    if thread is None:
        return
    status = _THREAD_STATUS_AFTER.get(ended)
    if status is None:
        latest = get_graph(thread.graph).get_state(
            {"configurable": {"thread_id": thread.thread_id}}
        )
        status = Thread.Status.INTERRUPTED if latest.interrupts else Thread.Status.IDLE
    set_thread_status(thread, status)


def dispatch_next(thread_pk: int) -> Run | None:
    """Enqueue ``execute_run`` for the thread's oldest pending run, unless a run of the
    thread is running (it dispatches the next one when it ends) or that run's message is
    already on its way (``dispatched_at`` is set until a worker that had to leave it
    waiting clears it). Returns the run that is next, sent now or not."""
    if Run.objects.filter(thread_id=thread_pk, status=Run.Status.RUNNING).exists():
        return None
    run = Run.objects.filter(thread_id=thread_pk, status=Run.Status.PENDING).order_by("pk").first()
    if run is not None and run.dispatched_at is None:
        dispatch(run)
    return run


def dispatch(run: Run) -> None:
    """Send ``execute_run(run.pk)`` to the broker under a fresh task id, recorded on the
    run first so that a cancel can revoke it; inside a transaction, once it commits."""
    from durable.engine.tasks import execute_run  # tasks imports this module

    task_id = str(uuid.uuid4())
    Run.objects.filter(pk=run.pk).update(task_id=task_id, dispatched_at=timezone.now())
    transaction.on_commit(lambda: execute_run.apply_async((run.pk,), task_id=task_id))


def runs_checkpoints(run: Run):
    """The root-namespace checkpoints ``run`` wrote (``metadata["run_id"]``), newest
    first: a backward scan of the thread's index range, to be bounded by the caller."""
    return Checkpoint.objects.filter(
        MetadataKeyEquals("run_id", str(run.pk)),
        thread_id=run.thread.thread_id,
        checkpoint_ns="",
    ).order_by("-checkpoint_id")
