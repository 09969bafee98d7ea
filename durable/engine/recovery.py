"""Recovering runs whose worker is gone, and handing back a stopping worker's runs.

**The reaper.** ``reap``, which every worker's main process runs on a timer
(``durable.engine.tasks``), finds running runs whose lease expired, because their worker
died (SIGKILL, a lost machine) or was stopped hard, and re-enqueues them, or ends them as
their stop request says; it sends the pending runs whose message is not on its way: not
sent because the broker was down, or lost (``durable.engine.queue``). Neither the
embedded broker nor Redis (its visibility timeout is an hour) redelivers the task of a
killed worker promptly, so this durability lives in our tables.

**Shutdown.** On SIGTERM (warm shutdown) Celery sends ``worker_shutting_down`` in the
worker's main process; ``durable.engine.tasks`` then asks every run of this worker to
drain (``drain_worker``), and asks again every second until the worker has stopped, for
the runs it claims meanwhile (a task that reached the pool just before the signal). Each
stops after its super-step, goes back to ``pending`` (``execution.requeue``) and is
enqueued again for another worker (``hand_back``). This goes through the database
because with the prefork pool the runs execute in child processes, which do not receive
the signal.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from durable import conf
from durable.engine import policy, queue, records, threads
from durable.engine.execution import end, requeue, roll_back
from durable.metrics import process as metrics
from durable.models import Run, Thread

logger = logging.getLogger(__name__)


def reap(limit: int = 100) -> dict[str, int]:
    """Settle runs whose worker is gone, and send the runs whose message is not on its
    way.

    A running run whose lease expired goes back to pending and is enqueued again, or,
    if it had been asked to stop, ends as asked (cancelled, timed out, rolled back).
    Then the pending runs whose turn it is and whose message was never sent, failed to
    send (a broker outage) or was sent a lease ago and not claimed (lost) are sent
    (``queue.unsent``; a duplicate message is harmless: only one claim succeeds). Safe
    with many reapers at once: each claims rows with ``SELECT ... FOR UPDATE SKIP
    LOCKED`` on PostgreSQL (SQLite runs one writer at a time), each under its thread's
    lock, taken first as every run transaction does. Last, the threads of stateless
    runs that asked ``on_completion=delete`` and ended a lease ago are deleted
    (``threads.sweep_stateless``). Returns counts: ``{"requeued", "ended",
    "redispatched", "stateless_deleted"}``."""
    counts = {"requeued": 0, "ended": 0, "redispatched": 0}
    stale = Run.objects.filter(status=Run.Status.RUNNING, lease_expires_at__lt=timezone.now())
    for run_id, thread_pk in stale.order_by("lease_expires_at").values_list("pk", "thread")[:limit]:
        with transaction.atomic():
            if not _locked(thread_pk):
                continue  # deleted meanwhile
            run = stale.select_for_update(skip_locked=True).filter(pk=run_id).first()
            if run is not None:
                counts["requeued" if _settle_lost(run) else "ended"] += 1
    counts["redispatched"] = queue.send_unsent(limit)
    metrics.REAPER_RECOVERED.inc(counts["requeued"] + counts["ended"])
    metrics.REAPER_REDISPATCHED.inc(counts["redispatched"])
    # A stateless run's thread outlives its run by a lease, for the request that reads
    # its output (which deletes it itself) to get there first.
    lease = timedelta(seconds=conf.DURABLE_RUN_LEASE_SECONDS)
    counts["stateless_deleted"] = threads.sweep_stateless(timezone.now() - lease, limit)
    return counts


def process_lost(lost: list[tuple[int, str]]) -> int:
    """The pool processes that ran these ``(run_id, hostname)`` died (Celery reported
    ``WorkerLostError`` to the worker's main process): their runs' leases expire now, so
    that the ``reap`` that follows recovers them at once rather than a lease later.
    Only a run still ``running`` under that worker is touched: one recovered meanwhile
    is another attempt's. Returns how many leases expired."""
    now = timezone.now()
    expired = 0
    for run_id, hostname in lost:
        expired += Run.objects.filter(
            pk=run_id, status=Run.Status.RUNNING, worker=hostname, lease_expires_at__gt=now
        ).update(lease_expires_at=now)
    return expired


def _settle_lost(run: Run) -> bool:
    """A running run with an expired lease: requeue it (True), or end it as its stop
    request says (False). Runs inside the reaper's transaction, holding the row."""
    stop = run.stop_requested
    if stop in (Run.Stop.NONE, Run.Stop.SHUTDOWN):
        who = f"worker {run.worker or '?'} stopped renewing its lease"
        requeue(run, f"{who}; re-enqueued")
        return True
    if stop == Run.Stop.ROLLBACK:
        roll_back(run)
    else:
        end(run, Run.Status.TIMEOUT if stop == Run.Stop.TIMEOUT else Run.Status.CANCELLED)
    return False


# -- shutdown ----------------------------------------------------------------------------


def drain_worker(hostname: str) -> list[int]:
    """Ask every run that worker ``hostname`` is running to drain, so that each goes back
    to pending after its super-step (from ``worker_shutting_down`` until the worker has
    stopped). Returns the ids of the runs asked now: a run already asked to stop is not
    asked again."""
    running = Run.objects.filter(worker=hostname, status=Run.Status.RUNNING)
    detail = f"worker {hostname} is shutting down"
    asked = [
        pk
        for pk in running.values_list("pk", flat=True)
        if policy.request_stop(pk, Run.Stop.SHUTDOWN, detail)
    ]
    if asked:
        logger.info("%s: asked run(s) %s to drain", hostname, asked)
    return asked


def hand_back(run_ids: list[int]) -> int:
    """Enqueue the runs this worker drained for its shutdown (``worker_shutdown``: it
    takes no more tasks now, so another worker gets them). Returns how many."""
    sent = 0
    for run in Run.objects.filter(pk__in=run_ids, status=Run.Status.PENDING).order_by("pk"):
        with transaction.atomic():
            if _locked(run.thread_pk) and not records.must_wait(run):
                queue.dispatch(run)
                sent += 1
    return sent


def _locked(thread_pk: int) -> bool:
    """Lock the thread's row in the current transaction (``records.lock_thread``); False
    if it is gone."""
    try:
        records.lock_thread(thread_pk)
    except Thread.DoesNotExist:
        return False
    return True
