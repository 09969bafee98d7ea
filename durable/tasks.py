"""Celery tasks and worker signals. The work itself lives in ``durable.worker``."""

import threading

from celery import shared_task
from celery.signals import worker_process_init, worker_shutdown, worker_shutting_down
from django.db import connections

from durable import retention, worker


@shared_task(name="durable.execute_run", bind=True)
def execute_run(self, run_id: int) -> str:
    """Execute run ``run_id`` in this worker; returns the run's status afterwards."""
    return worker.execute(run_id, worker=self.request.hostname or "")


@shared_task(name="durable.reap_stale_runs")
def reap_stale_runs() -> dict:
    """Requeue or settle runs whose worker stopped renewing its lease; re-send runs whose
    message was lost (``durable.worker.reap``). Scheduled by Celery beat."""
    return worker.reap()


@shared_task(name="durable.sweep_retention")
def sweep_retention() -> dict:
    """Apply the retention policies and delete the store's expired items
    (``durable.retention.sweep``). Scheduled by Celery beat every
    ``DURABLE_RETENTION_INTERVAL_SECONDS``."""
    return retention.sweep()


@worker_process_init.connect
def _in_pool_process(**kwargs):
    worker.mark_pool_child()


# The runs this worker (its main process) asked to drain when its shutdown began.
_drained: list[int] = []
_draining: list[threading.Thread] = []


@worker_shutting_down.connect
def _drain_runs(sender=None, **kwargs):
    """Warm shutdown (SIGTERM, SIGINT) in the worker's main process: ask this worker's
    runs to drain. A thread, because this is called from the signal handler, where
    blocking on the database could interrupt Celery's own code mid-statement."""

    def drain():
        try:
            _drained.extend(worker.drain_worker(sender))
        finally:
            connections.close_all()

    thread = threading.Thread(target=drain, name="drain-on-shutdown")
    _draining.append(thread)
    thread.start()


@worker_shutdown.connect
def _hand_back_runs(**kwargs):
    """The worker has stopped taking tasks and its runs have drained: enqueue them for
    the other workers."""
    for thread in _draining:
        thread.join()
    if _drained:
        try:
            worker.hand_back(_drained)
        finally:
            connections.close_all()
