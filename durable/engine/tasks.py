"""Celery tasks and worker signals. The work itself lives in ``durable.engine.execution``.

Besides the tasks its pool executes, each worker's main process runs the reaper
(``durable.engine.execution.reap``) on a thread of its own, every
``DURABLE_REAPER_INTERVAL_SECONDS`` from the moment the worker is ready until its
shutdown begins. So recovery needs no Celery beat: as long as one worker lives, runs
whose worker died are picked up again. Many reapers at once are safe (``reap`` claims
rows with ``SELECT ... FOR UPDATE SKIP LOCKED``). While the worker shuts down, another
thread asks its runs to drain, until it has stopped (``durable.engine.execution.drain_worker``).
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

from durable import retention
from durable.engine import execution as worker

logger = logging.getLogger(__name__)


@shared_task(name="durable.execute_run", bind=True)
def execute_run(self, run_id: int) -> str:
    """Execute run ``run_id`` in this worker; returns the run's status afterwards."""
    return worker.execute(run_id, worker=self.request.hostname or "")


@shared_task(name="durable.sweep_retention")
def sweep_retention() -> dict:
    """Apply the retention policies and delete the store's expired items
    (``durable.retention.sweep``). Scheduled by Celery beat every
    ``DURABLE_RETENTION_INTERVAL_SECONDS``."""
    return retention.sweep()


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


# -- jobs of the main process ---------------------------------------------------------


class _Every:
    """``job()`` now, then every ``seconds``, on a daemon thread of the worker's main
    process, until ``stop()``; each time with ``_main_process_database``."""

    def __init__(self, name: str, seconds: float, job):
        self.name, self.seconds, self.job = name, seconds, job
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> "_Every":
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask it to stop after the pass under way (without waiting: safe in a signal
        handler)."""
        self._stopped.set()

    def join(self) -> None:
        self.stop()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            try:
                with _main_process_database():
                    self.job()
            except Exception:  # the database may be back at the next pass
                logger.exception("%s failed; next pass in %g s", self.name, self.seconds)
            if self._stopped.wait(self.seconds):
                return


def _reap() -> None:
    counts = worker.reap()
    if any(counts.values()):
        logger.info("reaper: %s", counts)


# The main process's jobs: the reaper while the worker works, the drain while it stops.
_jobs: dict[str, _Every] = {}
# The runs this worker asked to drain since its shutdown began.
_drained: list[int] = []
# While its warm shutdown lasts, how often (seconds) a worker looks for runs it has
# claimed since it last asked its runs to drain.
DRAIN_RECHECK_SECONDS = 1.0


@worker_ready.connect
def _start_reaper(**kwargs):
    """The worker's main process is ready (its pool processes have started): reap every
    ``DURABLE_REAPER_INTERVAL_SECONDS`` until its shutdown begins."""
    _guard_forks()
    seconds = float(settings.DURABLE_REAPER_INTERVAL_SECONDS)
    _jobs["reaper"] = _Every("reaper", seconds, _reap).start()


@worker_shutting_down.connect
def _drain_runs(sender=None, **kwargs):
    """Warm shutdown (SIGTERM, SIGINT) in the worker's main process. The reaper stops: a
    worker that is leaving takes no recovery on (and does not send again the runs it
    drains, which a broker may still deliver to it meanwhile). This worker's runs are
    asked to drain, and asked again every ``DRAIN_RECHECK_SECONDS`` until the worker has
    stopped: a task that reached a pool process just before the signal claims its run
    after the first pass, and that run too must go back to pending after its super-step
    rather than run to its end. On threads, because this is called from the signal
    handler, where blocking on the database could interrupt Celery's code mid-statement."""
    if "reaper" in _jobs:
        _jobs["reaper"].stop()
    if "drain" not in _jobs:  # not again on a second signal
        _jobs["drain"] = _Every(
            "drain", DRAIN_RECHECK_SECONDS, lambda: _drained.extend(worker.drain_worker(sender))
        ).start()


@worker_shutdown.connect
def _hand_back_runs(**kwargs):
    """The worker has stopped taking tasks and its runs have drained: stop the main
    process's jobs, and enqueue the drained runs for the other workers."""
    for job in _jobs.values():
        job.join()
    if _drained:
        with _main_process_database():
            worker.hand_back(_drained)
