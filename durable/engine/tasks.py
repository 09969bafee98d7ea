"""Celery tasks and worker signals. The work itself lives in ``durable.engine.execution``
and ``durable.engine.recovery``.

Besides the tasks its pool executes, each worker's main process runs the reaper
(``recovery.reap``) on a thread of its own, every ``DURABLE_REAPER_INTERVAL_SECONDS``
from the moment the worker is ready until its shutdown begins. So recovery needs no
Celery beat: as long as one worker lives, runs whose worker died are picked up again.
Many reapers at once are safe (``reap`` claims rows with ``SELECT ... FOR UPDATE SKIP
LOCKED``). When a pool process dies mid-run (killed, out of memory), Celery tells the
main process (``task_failure`` with ``WorkerLostError``, ``CELERY_WORKER_LOST_WAIT`` after
the death): the run's lease expires there and then and the reaper passes at once
(``recovery.process_lost``), so that the run goes on within seconds, not a lease later;
a live run's lease is as long as ever. While the worker shuts down, another thread asks
its runs to drain, until it has stopped (``recovery.drain_worker``), and the drained
runs are then handed back.
"""

import logging
import os
import threading
from contextlib import ExitStack, contextmanager

from billiard.exceptions import WorkerLostError
from celery import shared_task
from celery.signals import (
    task_failure,
    task_postrun,
    task_prerun,
    worker_process_init,
    worker_ready,
    worker_shutdown,
    worker_shutting_down,
)
from django.db import connections

from durable import conf, logcontext, retention
from durable.engine import crons, execution, lease, recovery, webhooks
from durable.tasknames import CRON_TASK, RETENTION_TASK, RUN_TASK, WEBHOOK_TASK

logger = logging.getLogger(__name__)


@shared_task(name=RUN_TASK, bind=True)
def execute_run(self, run_id: int) -> str:
    """Execute run ``run_id`` in this worker; returns the run's status afterwards."""
    queue = (self.request.delivery_info or {}).get("routing_key") or ""
    return execution.execute(run_id, worker=self.request.hostname or "", queue=queue)


@shared_task(name=WEBHOOK_TASK, bind=True, max_retries=webhooks.ATTEMPTS - 1)
def post_webhook(self, run_id: int) -> str:
    """Post run ``run_id``'s outcome to its webhook (``webhooks.post``): one attempt,
    then, while attempts are left, the task again ``webhooks.backoff`` seconds later
    (an ETA: no pool slot is held meanwhile). Returns ``webhooks.DONE`` or ``GIVE_UP``."""
    attempt = self.request.retries + 1
    said = webhooks.post(run_id, attempt)
    if said == webhooks.AGAIN:
        raise self.retry(countdown=webhooks.backoff(attempt))
    return said


@shared_task(name=RETENTION_TASK)
def sweep_retention() -> dict:
    """Apply the retention policies and delete the store's expired items
    (``durable.retention.sweep``). Scheduled by Celery beat every
    ``DURABLE_RETENTION_INTERVAL_SECONDS``."""
    return retention.sweep()


@shared_task(name=CRON_TASK)
def fire_cron(cron_pk: int) -> int | None:
    """Start the run of cron ``cron_pk``'s due slot, once (``durable.engine.crons.fire``);
    woken by Celery beat at each slot. Returns the run's id, or ``None``."""
    run = crons.fire(cron_pk)
    return run.pk if run is not None else None


# Celery's own lines about a run's task in its pool process (that it succeeded, in how
# long; a failure's traceback) carry the run's id, as the run's own lines do: bound from
# before the task starts until after Celery has logged how it ended.
_task_fields: dict[str, ExitStack] = {}


@task_prerun.connect
def _bind_run_id(sender=None, task_id=None, args=(), kwargs=None, **rest):
    run_id = args[0] if args else (kwargs or {}).get("run_id")
    if getattr(sender, "name", None) == RUN_TASK and run_id is not None:
        stack = ExitStack()
        stack.enter_context(logcontext.bound(run_id=run_id))
        _task_fields[task_id] = stack


@task_postrun.connect
def _unbind_run_id(task_id=None, **rest):
    if (stack := _task_fields.pop(task_id, None)) is not None:
        stack.close()


@worker_process_init.connect
def _in_pool_process(**kwargs):
    lease.mark_pool_child()


@task_failure.connect
def _pool_process_lost(sender=None, exception=None, args=(), kwargs=None, **rest):
    """In the main process: the pool process running a run's task died."""
    if getattr(sender, "name", None) != RUN_TASK or not isinstance(exception, WorkerLostError):
        return
    run_id = args[0] if args else (kwargs or {}).get("run_id")
    hostname = getattr(getattr(sender, "request", None), "hostname", None)
    if run_id is not None and hostname:
        _main.process_lost(int(run_id), hostname)


class _Every:
    """``job()`` now, then every ``seconds``, on a daemon thread of the worker's main
    process, until ``stop()``; each time inside ``database()``."""

    def __init__(self, name: str, seconds: float, job, database):
        self.name, self.seconds, self.job, self.database = name, seconds, job, database
        self._stopped = threading.Event()
        self._woken = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> "_Every":
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask it to stop after the pass under way (without waiting: safe in a signal
        handler)."""
        self._stopped.set()
        self._woken.set()

    def wake(self) -> None:
        """Have the next pass start now (safe from any thread: sets an event)."""
        self._woken.set()

    def join(self) -> None:
        self.stop()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            try:
                with self.database():
                    self.job()
            except Exception:  # the database may be back at the next pass
                logger.exception("%s failed; next pass in %g s", self.name, self.seconds)
            self._woken.wait(self.seconds)
            self._woken.clear()
            if self._stopped.is_set():
                return


def _reap(lost: list[tuple[int, str]]) -> None:
    if lost and (expired := recovery.process_lost(lost)):
        logger.info("reaper: %s run(s) of a pool process that died, recovered now", expired)
    counts = recovery.reap()
    if any(counts.values()):
        logger.info("reaper: %s", counts)


class MainProcess:
    """The worker's main process, from ``worker_ready`` to ``worker_shutdown``: the
    reaper while it works (``ready``), the drain while it stops (``shutting_down``), and
    the runs it drained, handed back once it has stopped (``shut_down``).

    Its database work holds ``_database``, which a fork waits for. The main process forks
    pool processes at any time (one replaces a process that exited, or that a hard stop
    killed), and a child must not inherit a connection: the child's Django fixup closes
    what it inherits, which would end the server session under the parent. So the lock
    is let go only once every connection the work opened is closed, its pool's included.
    """

    # While its warm shutdown lasts, how often (seconds) a worker looks for runs it has
    # claimed since it last asked its runs to drain.
    DRAIN_RECHECK_SECONDS = 1.0

    def __init__(self):
        self._database = threading.Lock()
        self._fork_guarded = False
        self._reaper: _Every | None = None
        self._drain: _Every | None = None
        self.drained: list[int] = []  # the runs asked to drain since the shutdown began
        # (run id, hostname) of runs whose pool process died, for the reaper's next pass.
        self._lost: list[tuple[int, str]] = []
        self._lost_lock = threading.Lock()

    @contextmanager
    def database(self):
        with self._database:
            try:
                yield
            finally:
                connections.close_all()
                for conn in connections.all(initialized_only=True):
                    if conn.settings_dict["OPTIONS"].get("pool"):
                        conn.close_pool()

    def ready(self) -> None:
        """The worker is ready (its pool processes have started): reap every
        ``DURABLE_REAPER_INTERVAL_SECONDS`` until its shutdown begins (unless
        ``DURABLE_REAPER_ENABLED`` is off)."""
        if not self._fork_guarded:
            os.register_at_fork(
                before=self._database.acquire,
                after_in_parent=self._database.release,
                after_in_child=self._database.release,
            )
            self._fork_guarded = True
        if not conf.DURABLE_REAPER_ENABLED:
            logger.warning(
                "the reaper is off (DURABLE_REAPER_ENABLED): runs whose worker dies are "
                "not recovered"
            )
            return
        seconds = float(conf.DURABLE_REAPER_INTERVAL_SECONDS)
        self._reaper = _Every("reaper", seconds, self._reap, self.database).start()

    def _reap(self) -> None:
        with self._lost_lock:
            lost, self._lost = self._lost, []
        _reap(lost)

    def process_lost(self, run_id: int, hostname: str) -> None:
        """The pool process running run ``run_id`` died: the reaper recovers it now
        (from Celery's event loop: only a list and an event, no database here). Nothing
        without the reaper (``DURABLE_REAPER_ENABLED`` off: no recovery at all)."""
        if self._reaper is None:
            return
        with self._lost_lock:
            self._lost.append((run_id, hostname))
        self._reaper.wake()

    def shutting_down(self, hostname: str) -> None:
        """Warm shutdown (SIGTERM, SIGINT) began. The reaper stops: a worker that is
        leaving takes no recovery on (and does not send again the runs it drains, which
        a broker may still deliver to it meanwhile). This worker's runs are asked to
        drain, and asked again every ``DRAIN_RECHECK_SECONDS`` until the worker has
        stopped: a task that reached a pool process just before the signal claims its
        run after the first pass, and that run too must go back to pending after its
        super-step rather than run to its end. On threads, because this is called from
        the signal handler, where blocking on the database could interrupt Celery's code
        mid-statement."""
        if self._reaper is not None:
            self._reaper.stop()
        if self._drain is None:  # not again on a second signal
            self._drain = _Every(
                "drain",
                self.DRAIN_RECHECK_SECONDS,
                lambda: self.drained.extend(recovery.drain_worker(hostname)),
                self.database,
            ).start()

    def shut_down(self) -> None:
        """The worker has stopped taking tasks and its runs have drained: stop the jobs,
        and enqueue the drained runs for the other workers."""
        for job in (self._reaper, self._drain):
            if job is not None:
                job.join()
        if self.drained:
            with self.database():
                recovery.hand_back(self.drained)


_main = MainProcess()


@worker_ready.connect
def _ready(**kwargs):
    _main.ready()


@worker_shutting_down.connect
def _shutting_down(sender=None, **kwargs):
    _main.shutting_down(sender)


@worker_shutdown.connect
def _shut_down(**kwargs):
    _main.shut_down()
