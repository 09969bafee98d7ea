"""The broker, for the engine: the one module that talks to Celery (besides the task
definitions in ``durable.engine.tasks``).

A run's durability lives in its row, not in its message: a message lost or sent twice
is harmless (the reaper sends a pending run again; only one claim succeeds). So every
send happens once the transaction that wrote the run commits, and a broker outage never
undoes what the database committed.
"""

from __future__ import annotations

import logging
import uuid

from celery import current_app
from django.db import transaction
from django.utils import timezone

from durable.engine.policy import Sends, next_run
from durable.models import Run
from durable.tasknames import RUN_TASK

logger = logging.getLogger(__name__)


def dispatch(run: Run) -> None:
    """Send ``execute_run(run.pk)`` to the broker under a fresh task id, recorded on the
    run first (with ``dispatched_at``) so that a cancel can revoke it; inside a
    transaction, once it commits."""
    task_id = str(uuid.uuid4())
    Run.objects.filter(pk=run.pk).update(task_id=task_id, dispatched_at=timezone.now())
    transaction.on_commit(lambda: current_app.send_task(RUN_TASK, (run.pk,), task_id=task_id))


def dispatch_next(thread_pk: int) -> Run | None:
    """Dispatch the thread's next run (``policy.next_run``), unless its message is
    already on its way (``dispatched_at`` is set until a worker that had to leave it
    waiting clears it). Returns the run that is next, sent now or not."""
    run = next_run(thread_pk)
    if run is not None and run.dispatched_at is None:
        dispatch(run)
    return run


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
    transaction commits: the revocations, then each thread's next run."""
    for task_id in sends.revoke:
        revoke(task_id)
    for thread_pk in sends.next_of:
        transaction.on_commit(lambda pk=thread_pk: dispatch_next(pk))
