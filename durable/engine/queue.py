"""The broker, for the engine: the one module that talks to Celery (besides the task
definitions in ``durable.engine.tasks``).

A run's durability lives in its row, not in its message: a message lost or sent twice
is harmless (only one claim succeeds). So every send happens once the transaction that
wrote the run commits, and a broker outage never undoes what the database committed. A
send makes one attempt, bounded by the broker's socket timeouts
(``dashboard/settings.py``), and never raises: a request during an outage is answered
with its run ``pending``. The rows are the outbox: a run whose message is not on its way
(``unsent``) is sent by the reaper of every worker (``send_unsent``), once the broker is
back.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from celery import current_app
from django.db import DatabaseError, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from durable import conf
from durable.engine import records
from durable.engine.policy import Sends, next_run
from durable.models import Run, Thread
from durable.tasknames import RUN_TASK, WEBHOOK_TASK

logger = logging.getLogger(__name__)

# One attempt per send: the outbox (``send_unsent``) is the retry. Kombu's default
# (three more attempts) would hold a request for each of them on a broker that does
# not answer.
_ONE_ATTEMPT = {"max_retries": 0}


def dispatch(run: Run) -> None:
    """Send ``execute_run(run.pk)`` to the broker under a fresh task id, recorded on the
    run first (with ``dispatched_at``) so that a cancel can revoke it; inside a
    transaction, once it commits. A send that fails leaves the run ``unsent``."""
    task_id = _mark(run)
    eta = run.not_before
    transaction.on_commit(lambda: _send(run.pk, task_id, eta))


def dispatch_next(thread_pk: int) -> Run | None:
    """Dispatch the thread's next run (``policy.next_run``), unless its message is
    already on its way (``dispatched_at`` is set until a worker that had to leave it
    waiting clears it). Returns the run that is next, sent now or not."""
    run = next_run(thread_pk)
    if run is not None and run.dispatched_at is None:
        dispatch(run)
    return run


def unsent(now: datetime) -> QuerySet[Run]:
    """The pending runs whose turn it is (no run of their thread is running or older and
    pending: ``records.earlier_runs``) and whose message is not on its way at ``now``:
    never sent, or its send failed (``dispatched_at`` is ``None``), or sent more than
    ``DURABLE_RUN_LEASE_SECONDS`` ago and still not claimed. Such a message was lost: a
    broker restarted without its queue, a pool process killed between taking the message
    and claiming the run (Redis gives an unacknowledged message back only after its
    visibility timeout, an hour). A message that merely waits behind a backlog gets a
    duplicate once a lease, which a worker drops after one claim attempt. A delayed
    run's message waits for its ``not_before`` (``dispatch``): it counts as lost a lease
    after that."""
    lost = now - timedelta(seconds=conf.DURABLE_RUN_LEASE_SECONDS)
    waits = Exists(records.earlier_runs(OuterRef("thread"), OuterRef("pk")))
    due = Q(not_before=None) | Q(not_before__lt=lost)
    return (
        Run.objects.filter(status=Run.Status.PENDING)
        .filter(Q(dispatched_at=None) | (Q(dispatched_at__lt=lost) & due))
        .exclude(waits)
    )


def send_unsent(limit: int = 100) -> int:
    """Send the ``unsent`` runs, oldest first, each marked under its thread's lock (as
    every run transaction takes it) and sent once that commits. Stops at the first send
    that fails: the broker is down, and the next pass tries again. Returns how many
    were sent."""
    sent = 0
    for run in unsent(timezone.now()).order_by("pk")[:limit]:
        with transaction.atomic():
            try:
                records.lock_thread(run.thread_pk)
            except Thread.DoesNotExist:
                continue  # deleted meanwhile
            if not unsent(timezone.now()).filter(pk=run.pk).exists():
                continue  # sent or claimed meanwhile
            task_id = _mark(run)
        if not _send(run.pk, task_id, run.not_before):
            break
        sent += 1
    return sent


def _mark(run: Run) -> str:
    fields = records.dispatched()
    Run.objects.filter(pk=run.pk).update(**fields)
    return fields["task_id"]


def _send(run_pk: int, task_id: str, not_before: datetime | None = None) -> bool:
    """Send the run's message, for a delayed run with ``not_before`` as its ETA (a worker
    holds it until then; the claim refuses it earlier: ``records.claim``); on failure
    mark the run unsent again (unless a newer dispatch replaced this one) and return
    False. Never raises."""
    eta = not_before if not_before is not None and not_before > timezone.now() else None
    try:
        current_app.send_task(
            RUN_TASK, (run_pk,), task_id=task_id, eta=eta, retry_policy=_ONE_ATTEMPT
        )
        return True
    except Exception as exc:  # whatever the broker does, the run stays committed
        logger.warning(
            "could not send run %s (%s); the reaper sends it later",
            run_pk,
            exc,
            extra={"run_id": run_pk},  # a field of its log line (durable.logcontext)
        )
    try:
        Run.objects.filter(pk=run_pk, task_id=task_id, status=Run.Status.PENDING).update(
            dispatched_at=None
        )
    except DatabaseError:  # then it counts as lost, and is sent again after a lease
        logger.warning(
            "could not mark run %s unsent", run_pk, exc_info=True, extra={"run_id": run_pk}
        )
    return False


# Who may take a ready run before it is sent: ``durable.engine.inline.take``, once that
# module is loaded (by the web process's views); a worker has none.
_takers: list = []


def take_here(taker) -> None:
    """Register ``taker(run) -> bool``, asked first where a ready run goes
    (``_take_or_send``): True when it has taken the run, which is then not sent."""
    if taker not in _takers:
        _takers.append(taker)


def _take_or_send(run: Run) -> None:
    """Where a ready run goes, decided once its transaction has committed: to a taker of
    this process (a web process's slot, when one of its requests waits for it), else to
    the workers."""
    if not any(taker(run) for taker in _takers):
        _send(run.pk, run.task_id, run.not_before)


def revoke(task_id: str) -> None:
    """Best effort, once the transaction commits: brokers with broadcast (Redis,
    RabbitMQ) tell workers to drop the message. The embedded broker cannot broadcast
    (kombu's SQLAlchemy transport has no fanout), which is why the Run's status is what a
    worker checks before it runs."""
    if not task_id:
        return

    def send():
        try:
            current_app.control.revoke(task_id)
        except Exception:  # a broker outage must not undo the cancel
            logger.warning("could not revoke task %s", task_id, exc_info=True)

    transaction.on_commit(send)


def send(sends: Sends) -> None:
    """Carry out what the queueing rules asked for (``policy.Sends``) once the current
    transaction commits: the revocations, the ready runs' messages, then each thread's
    next run."""
    for task_id in sends.revoke:
        revoke(task_id)
    for run in sends.ready:
        transaction.on_commit(lambda run=run: _take_or_send(run))
    for thread_pk in sends.next_of:
        transaction.on_commit(lambda pk=thread_pk: dispatch_next(pk))
    for run_id in sends.webhooks:
        send_webhook(run_id)


def send_webhook(run_id: int) -> None:
    """Send ``post_webhook(run_id)`` (``tasks.post_webhook``) once the current
    transaction commits: the run's outcome, committed, goes to its webhook from a task
    of its own. A send that fails is logged: the outcome stands, and is not posted."""

    def post():
        try:
            current_app.send_task(WEBHOOK_TASK, args=[run_id], retry_policy=_ONE_ATTEMPT)
        except Exception:
            logger.warning("run %s: webhook task not sent", run_id, exc_info=True)

    transaction.on_commit(post)


def can_ping_workers() -> bool:
    """Whether the broker can broadcast, which Celery's ``ping`` needs: Redis and
    RabbitMQ can; the embedded broker (kombu's SQLAlchemy transport) has no fanout
    exchange, so its workers are there but cannot be counted."""
    with current_app.connection_for_write() as connection:
        return "fanout" in connection.transport.implements.exchange_type


def workers_answering(timeout: float = 1.0) -> list[str] | None:
    """The node names of the workers that answer Celery's ``ping`` within ``timeout``
    seconds; none when the broker is down; ``None`` (not known) when it cannot
    broadcast (``can_ping_workers``)."""
    if not can_ping_workers():
        return None
    try:
        replies = current_app.control.ping(timeout=timeout) or []
    except Exception:
        logger.warning("could not ping the workers", exc_info=True)
        return []
    return sorted(name for reply in replies for name in reply)
