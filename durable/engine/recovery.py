"""Recovering runs whose worker is gone, and handing back a stopping worker's runs.

**The reaper.** ``reap``, which every worker's main process runs on a timer
(``durable.engine.tasks``), finds running runs whose lease expired, because their worker
died (SIGKILL, a lost machine) or was stopped hard, and re-enqueues them, or ends them as
their stop request says; it sends again pending runs whose message was lost. Neither the
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
from django.db.models import Q
from django.utils import timezone

from durable import conf
from durable.engine import policy, queue, records
from durable.engine.execution import end, requeue, roll_back
from durable.models import Run, Thread

logger = logging.getLogger(__name__)


def reap(limit: int = 100) -> dict[str, int]:
    """Settle runs whose worker is gone, and re-send runs whose message was lost.

    A running run whose lease expired goes back to pending and is enqueued again, or,
    if it had been asked to stop, ends as asked (cancelled, timed out, rolled back).
    A pending run at the head of its thread's queue that no worker has taken for
    ``DURABLE_REDISPATCH_SECONDS`` is sent again (a duplicate message is harmless: only
    one claim succeeds). Safe with many reapers at once: each claims rows with
    ``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL (SQLite runs one writer at a
    time), each under its thread's lock, taken first as every run transaction does.
    Returns counts: ``{"requeued", "ended", "redispatched"}``."""
    counts = {"requeued": 0, "ended": 0, "redispatched": 0}
    now = timezone.now()
    stale = Run.objects.filter(status=Run.Status.RUNNING, lease_expires_at__lt=now)
    for run_id, thread_pk in stale.order_by("lease_expires_at").values_list("pk", "thread")[:limit]:
        with transaction.atomic():
            if not _locked(thread_pk):
                continue  # deleted meanwhile
            run = stale.select_for_update(skip_locked=True).filter(pk=run_id).first()
            if run is not None:
                counts["requeued" if _settle_lost(run) else "ended"] += 1
    cutoff = now - timedelta(seconds=conf.DURABLE_REDISPATCH_SECONDS)
    forgotten = Run.objects.filter(status=Run.Status.PENDING).filter(
        Q(dispatched_at__lt=cutoff) | Q(dispatched_at=None, created_at__lt=cutoff)
    )
    for run in forgotten.order_by("pk")[:limit]:
        with transaction.atomic():
            _locked(run.thread_pk)
            if forgotten.filter(pk=run.pk).exists() and not records.must_wait(run):
                queue.dispatch(run)
                counts["redispatched"] += 1
    return counts


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
