"""Celery tasks and worker signals. The work itself lives in ``durable.worker``.

Besides the tasks its pool executes, each worker's main process runs the reaper
(``durable.worker.reap``) on a thread of its own, every
``DURABLE_REAPER_INTERVAL_SECONDS`` from the moment the worker is ready until it has
shut down. So recovery needs no Celery beat: as long as one worker lives, runs whose
worker died are picked up again. Many reapers at once are safe (``reap`` claims rows
with ``SELECT ... FOR UPDATE SKIP LOCKED``).
"""

import logging
import os
import threading
from contextlib import contextmanager

from celery import shared_task
from celery.signals import (
    worker_process_init,
    worker_ready,
    worker_shutdown,
    worker_shutting_down,
)
from django.conf import settings
from django.db import connections

from durable import worker

logger = logging.getLogger(__name__)


@shared_task(name="durable.execute_run", bind=True)
def execute_run(self, run_id: int) -> str:
    """Execute run ``run_id`` in this worker; returns the run's status afterwards."""
    return worker.execute(run_id, worker=self.request.hostname or "")


@worker_process_init.connect
def _in_pool_process(**kwargs):
    worker.mark_pool_child()


# -- the database in the worker's main process -------------------------------------------

# The main process forks pool processes at any time (one replaces a process that exited,
# or that a hard stop killed), and a child must not inherit a connection: the child's
# Django fixup closes what it inherits, which would end the server session under the
# parent. So the main process's database work holds this lock, which a fork waits for,
# and lets go only once every connection it opened is closed, its pool's included.
_database = threading.Lock()
_fork_guarded = False


def _guard_forks() -> None:
    global _fork_guarded
    if not _fork_guarded:
        os.register_at_fork(
            before=_database.acquire,
            after_in_parent=_database.release,
            after_in_child=_database.release,
        )
        _fork_guarded = True


@contextmanager
def _main_process_database():
    with _database:
        try:
            yield
        finally:
            connections.close_all()
            for conn in connections.all(initialized_only=True):
                if conn.settings_dict["OPTIONS"].get("pool"):
                    conn.close_pool()


# -- the reaper ---------------------------------------------------------------------------


class _Reaper:
    """``durable.worker.reap`` now, then every ``DURABLE_REAPER_INTERVAL_SECONDS``, on a
    daemon thread of the worker's main process, until ``stop``."""

    def __init__(self):
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="durable-reaper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()

    def _loop(self) -> None:
        interval = float(settings.DURABLE_REAPER_INTERVAL_SECONDS)
        while True:
            try:
                with _main_process_database():
                    counts = worker.reap()
                if any(counts.values()):
                    logger.info("reaper: %s", counts)
            except Exception:  # the database may be back at the next pass
                logger.exception("reaper pass failed; next one in %g s", interval)
            if self._stopped.wait(interval):
                return


_reapers: list[_Reaper] = []


@worker_ready.connect
def _start_reaper(**kwargs):
    """The worker's main process is ready (its pool processes have started)."""
    _guard_forks()
    reaper = _Reaper()
    _reapers.append(reaper)
    reaper.start()


# -- shutdown -----------------------------------------------------------------------------

# The runs this worker (its main process) asked to drain when its shutdown began.
_drained: list[int] = []
_draining: list[threading.Thread] = []


@worker_shutting_down.connect
def _drain_runs(sender=None, **kwargs):
    """Warm shutdown (SIGTERM, SIGINT) in the worker's main process: ask this worker's
    runs to drain. A thread, because this is called from the signal handler, where
    blocking on the database could interrupt Celery's own code mid-statement."""

    def drain():
        with _main_process_database():
            _drained.extend(worker.drain_worker(sender))

    thread = threading.Thread(target=drain, name="drain-on-shutdown")
    _draining.append(thread)
    thread.start()


@worker_shutdown.connect
def _hand_back_runs(**kwargs):
    """The worker has stopped taking tasks and its runs have drained: stop the reaper,
    and enqueue the drained runs for the other workers."""
    while _reapers:
        _reapers.pop().stop()
    for thread in _draining:
        thread.join()
    if _drained:
        with _main_process_database():
            worker.hand_back(_drained)
