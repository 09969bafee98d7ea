"""How runs wait, start and stop: the queueing rules the requests (``durable.engine.operations``)
and execution (``durable.engine.execution``, ``durable.engine.recovery``) share.

One run at a time per thread. A request that finds an active run follows its
``multitask_strategy``, named as LangGraph's Agent Server names them: ``reject`` refuses;
``enqueue`` queues the new run behind the active one; ``interrupt`` asks the active run
to stop at its next super-step (its progress is kept) and then runs; ``rollback`` stops
it, deletes it and its checkpoints (``DjangoSaver.delete_for_runs``), then runs. Queued
runs start oldest first: whoever ends a run dispatches the thread's next one. After a run,
the thread's status says how the thread stands (``thread_status_after``).

These rules write rows (in the caller's transaction) and never talk to the broker: what
the broker must then do (send a thread's next run, revoke the message of a run that will
not run) is returned as ``Sends``, which ``durable.engine.queue.send`` carries out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils import timezone

from durable import conf
from durable.engine.checks import InvalidRequest
from durable.engine.records import dispatched, has_active_runs, set_thread_status
from durable.engine.state import config_for
from durable.graphs import get_graph
from durable.models import Run, RunEvent, Thread


@dataclass
class Sends:
    """What the broker must do once the transaction that changed the runs commits:
    ``revoke`` the messages (task ids) of pending runs that ended or were deleted,
    dispatch the next run of each thread in ``next_of`` (thread primary keys), and send
    the messages of the ``ready`` runs, written already marked as dispatched
    (``records.dispatched``), and post the outcome of the ``webhooks`` runs (ids: runs
    that ended with a webhook)."""

    revoke: list[str] = field(default_factory=list)
    next_of: list[int] = field(default_factory=list)
    ready: list[Run] = field(default_factory=list)
    webhooks: list[int] = field(default_factory=list)

    def __or__(self, other: Sends) -> Sends:
        next_of = self.next_of + [pk for pk in other.next_of if pk not in self.next_of]
        return Sends(
            self.revoke + other.revoke,
            next_of,
            self.ready + other.ready,
            self.webhooks + other.webhooks,
        )


def ended(run: Run) -> Sends:
    """What to send for ``run``, which has just ended: its webhook, if it has one."""
    return Sends(webhooks=[run.pk] if run.webhook else [])


def active_runs(thread: Thread) -> list[Run]:
    """The thread's active runs (pending or running), oldest first."""
    return list(_active(thread))


def active_run(thread: Thread) -> Run | None:
    """The thread's oldest active run, or ``None``: the one running, when a run is (runs
    start oldest first, so no pending run is older), else the next to start."""
    return _active(thread).first()


def _active(thread: Thread):
    return thread.runs.filter(status__in=Run.ACTIVE).order_by("pk")


def submit(thread: Thread, *, multitask_strategy: str, **fields) -> tuple[Run, Sends]:
    """Inside the caller's transaction, with ``thread`` locked: apply the multitask
    strategy to the active runs, write the pending Run and mark the thread busy. Returns
    the run, and what to send once the transaction commits (the thread's next run, which
    may be this one, and the revocations of displaced pending runs). Raises
    ``InvalidRequest("thread")`` for ``reject`` on a thread with an active run."""
    active = active_runs(thread)
    if active and multitask_strategy == Run.MultitaskStrategy.REJECT:
        raise InvalidRequest(
            "thread",
            f"Thread {thread.name!r} already has an active run (run {active[0].pk}, "
            f"{active[0].status}); pass multitask_strategy enqueue, interrupt or rollback "
            "to run anyway.",
        )
    # With no active run the new one is the thread's next: written marked as
    # dispatched, its message goes at commit without reading the thread's runs again.
    run = Run.objects.create(
        thread=thread,
        graph=thread.graph,
        multitask_strategy=multitask_strategy,
        timeout_seconds=conf.DURABLE_RUN_TIMEOUT_SECONDS,
        **({} if active else dispatched()),
        **fields,
    )
    # Its first event: no one writes a run's events before the run is committed, so
    # this is seq 1, one INSERT with no numbering (``RunEvent.objects.append``) and no
    # NOTIFY (no one follows a run that does not exist yet).
    first = {"status": run.status, "kind": run.kind, "requested_by": run.requested_by}
    RunEvent.objects.bulk_create([RunEvent(run=run, seq=1, event=RunEvent.LIFECYCLE, data=first)])
    set_thread_status(thread.pk, Thread.Status.BUSY)
    if not active:
        return run, Sends(ready=[run])
    sends = Sends()
    if multitask_strategy in (Run.MultitaskStrategy.INTERRUPT, Run.MultitaskStrategy.ROLLBACK):
        for old in active:
            sends |= _displace(old, multitask_strategy, run)
    return run, sends | Sends(next_of=[thread.pk])


def _displace(old: Run, strategy: str, new: Run) -> Sends:
    """Stop ``old`` for ``new``: ``interrupt`` keeps its progress, ``rollback`` deletes
    it and its checkpoints. A pending run has nothing to drain and ends at once."""
    if strategy == Run.MultitaskStrategy.INTERRUPT:
        detail = f"interrupted by run {new.pk} (multitask_strategy=interrupt)"
        stop = Run.Stop.INTERRUPT
    else:
        detail = f"rolled back by run {new.pk} (multitask_strategy=rollback)"
        stop = Run.Stop.ROLLBACK
    if old.status != Run.Status.PENDING:
        request_stop(old.pk, stop, detail)
        return Sends()
    if stop == Run.Stop.ROLLBACK:
        old.delete()
        return Sends(revoke=[old.task_id] if old.task_id else [])
    return end_pending(old, Run.Status.CANCELLED, detail)


# Which earlier stop requests a new one replaces: a cancel replaces a shutdown, a
# rollback anything; none replaces a cancel but a rollback.
_REPLACES = {
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
}


def request_stop(run_pk: int, stop: str, detail: str) -> bool:
    """Ask the worker of running run ``run_pk`` to drain; it notices at its next lease
    renewal (``durable.engine.lease``). A stronger request replaces a weaker one
    (``_REPLACES``). Returns whether it was recorded."""
    changed = Run.objects.filter(
        pk=run_pk, status=Run.Status.RUNNING, stop_requested__in=_REPLACES[stop]
    ).update(stop_requested=stop, stop_requested_at=timezone.now(), stop_detail=detail)
    if changed:
        RunEvent.objects.append(
            run_pk,
            RunEvent.LIFECYCLE,
            {"status": Run.Status.RUNNING, "stop_requested": stop, "detail": detail},
        )
    return bool(changed)


def end_pending(run: Run, status: str, detail: str) -> Sends:
    """End a run no worker has taken (it never ran, so there is nothing to drain), and
    settle its thread. Returns what to send: its message revoked, and the thread's next
    run if it has one."""
    now = timezone.now()
    changed = Run.objects.filter(pk=run.pk, status=Run.Status.PENDING).update(
        status=status, stop_detail=detail, ended_at=now
    )
    if not changed:
        return Sends()
    RunEvent.objects.append(run.pk, RunEvent.LIFECYCLE, {"status": status, "detail": detail})
    revoke = Sends(revoke=[run.task_id] if run.task_id else [])
    return revoke | ended(run) | settle_thread(run.thread_pk, status)


# The thread's status after a run that ended so, when no other run of the thread is active.
THREAD_STATUS_AFTER = {
    Run.Status.SUCCESS: Thread.Status.IDLE,
    Run.Status.INTERRUPTED: Thread.Status.INTERRUPTED,
    Run.Status.ERROR: Thread.Status.ERROR,
}


def thread_status_after(ended: str | None, interrupts_waiting: bool = False) -> str:
    """The thread's status after its last active run ended with status ``ended`` (or went
    away: ``None``): ``idle``, ``interrupted`` or ``error`` after a run that ended so;
    after one that was cancelled, timed out or rolled back, ``interrupted`` if interrupts
    wait on the latest checkpoint (``interrupts_waiting``), else ``idle``."""
    if ended in THREAD_STATUS_AFTER:
        return THREAD_STATUS_AFTER[ended]
    return Thread.Status.INTERRUPTED if interrupts_waiting else Thread.Status.IDLE


def thread_status_after_update(thread: Thread, has_next: bool) -> str:
    """The thread's status after ``update_state`` wrote a checkpoint on it with no run
    to follow, as LangGraph's Agent Server sets it: ``error`` if the thread's last run
    failed, else ``interrupted`` if the new checkpoint has next tasks (``has_next``: it
    waits to be resumed), else ``idle``."""
    last = thread.runs.order_by("-pk").values_list("status", flat=True).first()
    if last == Run.Status.ERROR:
        return Thread.Status.ERROR
    return Thread.Status.INTERRUPTED if has_next else Thread.Status.IDLE


def settle_thread(thread_pk: int, ended: str | None = None) -> Sends:
    """After a run ended (with status ``ended``) or went away (``None``): a thread with
    queued runs is to dispatch its next one (returned as ``Sends``); otherwise its status
    is set (``thread_status_after``). Call it in the transaction that ended the run,
    holding the thread's lock, so that the run's status and the thread's change together.
    (``records.finish`` does the same in its own statement, on the hot path.)"""
    if has_active_runs(thread_pk):
        return Sends(next_of=[thread_pk])
    if ended in THREAD_STATUS_AFTER:
        set_thread_status(thread_pk, thread_status_after(ended))
        return Sends()
    thread = Thread.objects.filter(pk=thread_pk).first()
    if thread is not None:
        latest = get_graph(thread.graph).get_state(config_for(thread))
        set_thread_status(thread_pk, thread_status_after(ended, bool(latest.interrupts)))
    return Sends()


def next_run(thread_pk: int) -> Run | None:
    """The run of the thread whose turn it is: its oldest pending run, unless one of its
    runs is running (which dispatches the next one when it ends)."""
    if Run.objects.filter(thread=thread_pk, status=Run.Status.RUNNING).exists():
        return None
    return Run.objects.filter(thread=thread_pk, status=Run.Status.PENDING).order_by("pk").first()
