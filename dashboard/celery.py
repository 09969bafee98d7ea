"""The Celery application: `celery -A dashboard worker` runs graphs."""

import os
import time

from celery import Celery, signals
from celery.fixups.django import DjangoFixup, DjangoWorkerFixup
from kombu.transport import sqlalchemy as kombu_sqlalchemy

from durable import logcontext
from durable.redaction import install_log_filter
from durable.tasknames import RUN_TASK

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")


# A worker whose pool has not run a task for this long checks the pool's connections
# before the next run (the server may have restarted meanwhile).
POOL_CHECK_AFTER_IDLE_SECONDS = 1.0


class _WorkerFixup(DjangoWorkerFixup):
    """Celery's Django fixup, except that runs keep this process's connection pool.

    The fixup closes Django's connections before and after every task and, under the
    prefork pool with Django's PostgreSQL pool, closes the pool as well (celery#10554):
    each run then connected to PostgreSQL anew, for its own thread and for LangGraph's
    saver threads, and lost the statements psycopg had prepared. Here, after a run,
    this thread's connection goes back to the pool and the pool stays, unless a database
    error occurred (then it goes, as before). Before a run that follows a pause of
    ``POOL_CHECK_AFTER_IDLE_SECONDS`` or more, the pool checks its idle connections and
    replaces broken ones (``ConnectionPool.check``); it closes connections unused for
    ``DURABLE_DB_POOL_MAX_IDLE_SECONDS``. Other tasks (the reaper) close everything,
    as Celery does."""

    _last_run_ended = 0.0

    def install(self) -> "_WorkerFixup":
        super().install()
        signals.worker_process_shutdown.connect(self.on_worker_process_shutdown)
        return self

    def on_worker_process_shutdown(self, **kwargs):
        """A pool process exits (billiard ends it with ``os._exit``): close its
        connections and its pool, as Celery did after each task, rather than leave
        the server to find them gone."""
        self._close_database()

    def on_task_prerun(self, sender, **kwargs):
        if sender.name != RUN_TASK:
            super().on_task_prerun(sender, **kwargs)
        elif time.monotonic() - self._last_run_ended >= POOL_CHECK_AFTER_IDLE_SECONDS:
            for pool in self._open_pools():
                pool.check()

    def on_task_postrun(self, sender, **kwargs):
        if sender.name != RUN_TASK or getattr(sender.request, "is_eager", False):
            super().on_task_postrun(sender, **kwargs)
            return
        connections = self._db.connections.all(initialized_only=True)
        if any(conn.errors_occurred for conn in connections):
            self._close_database()
        else:
            for conn in connections:
                conn.close()  # a pooled connection goes back to the pool
        self.close_cache()
        self._last_run_ended = time.monotonic()

    def _open_pools(self):
        for conn in self._db.connections.all(initialized_only=True):
            if conn.vendor == "postgresql" and conn.settings_dict["OPTIONS"].get("pool"):
                if not conn.pool.closed:
                    yield conn.pool


class _DjangoFixup(DjangoFixup):
    @DjangoFixup.worker_fixup.getter
    def worker_fixup(self) -> _WorkerFixup:
        # Made when the worker starts, as Celery makes its own: it reads the app's
        # configuration, which is not loaded yet when fix-ups are installed.
        if self._worker_fixup is None:
            self._worker_fixup = _WorkerFixup(self.app)
        return self._worker_fixup


def _django_fixup(app):
    """Celery's Django fixup (``celery.fixups.django.fixup``) with ``_WorkerFixup``."""
    return _DjangoFixup(app).install()


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _format_logs(logger, **kwargs):
    """The worker's log handlers, which Celery sets up in place of ``settings.LOGGING``'s
    (so that it still logs what a graph prints), write as the web process's do:
    ``DURABLE_LOG_FORMAT`` lines stamped with the run they are about
    (``durable.logcontext``), sensitive values masked (``durable.redaction``): a node's
    log line, a failed run's traceback, what a graph prints."""
    from django.conf import settings

    logcontext.install(logger, settings.DURABLE_LOG_FORMAT)
    install_log_filter(logger)


app = Celery("dashboard", fixups=[f"{__name__}:_django_fixup"])
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["durable.engine", "durable.drills"])

# The embedded broker (kombu's SQLAlchemy transport) polls its table, by default once a
# second, and a busy worker waits a whole interval before it takes the next task. The
# transport hands every transport option to SQLAlchemy's create_engine, so
# ``broker_transport_options={"polling_interval": ...}`` fails there; the class default
# is the setting that works.
kombu_sqlalchemy.Transport.polling_interval = 0.01
