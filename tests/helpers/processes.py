"""The processes tests start beside themselves, on the test database: a real Celery
worker (``WorkerProcess``) and the console served by uvicorn (``WebProcess``), with the
environment they share (``worker_env``) and a count of their PostgreSQL connections
(``pg_connections``); and a Redis of a test's own, to stop and start (``RedisServer``).
``tests/conftest.py`` makes session fixtures of the first two (``worker``, ``web``), and
of a PostgreSQL with pgvector (database alias ``PGVECTOR_ALIAS``).

The test database must be visible to these processes, so tests that use them are
``transaction=True`` (committed data) and, on SQLite, the test database is a file
(``settings.DATABASES["default"]["TEST"]["NAME"]``).

The broker is ``CELERY_BROKER_URL`` when set (``make test`` sets Redis for the
PostgreSQL pass), else a SQLite file of kombu's SQLAlchemy transport kept apart from
the one ``make run`` uses.

pytest-django's ``live_server`` is a threaded WSGI server: under WSGI Django collects an
async streaming response whole before it sends it, so server-sent events would arrive
only when a run ends. Tests of the API and of live progress use the real ASGI server.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import redis
from django.conf import settings
from django.db import connection

from tests.helpers.graphs import GRAPHS
from tests.helpers.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
WORKER_LOG = settings.VAR_DIR / "test-worker.log"
WORKER_APPLICATION_NAME = "durable-test-worker"
WEB_LOG = settings.VAR_DIR / "test-web.log"
WEB_APPLICATION_NAME = "durable-test-web"
# A small pool for the web process, so the connection bound is visible in tests.
WEB_POOL_SIZE = 4
PGVECTOR_ALIAS = "pgvector"


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


def broker_url() -> str:
    """The broker of the test processes (see the module's docstring)."""
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
    # Workers keep their connection pool between runs; here it empties within seconds.
    "DURABLE_DB_POOL_MAX_IDLE_SECONDS": "1",
}


def worker_env(broker: str | None = None) -> dict:
    """The environment of a process the tests start: the test database, broker (or
    ``broker``) and queue, the tests' graphs (``DURABLE_EXTRA_GRAPHS``), the short
    ``ENGINE_TIMINGS``, webhooks allowed to this machine."""
    env = dict(os.environ)
    env.update(
        DATABASE_URL=_database_url(),
        CELERY_BROKER_URL=broker or broker_url(),
        # This process's queue: derived from the test database's name, a process given
        # that name as its DATABASE_URL would take another (``durable.conf.queue_for``).
        DURABLE_QUEUE=settings.DURABLE_QUEUE,
        DJANGO_SETTINGS_MODULE="tests.settings",
        PYTHONUNBUFFERED="1",
        # libpq names every PostgreSQL connection of the worker, so tests can count them.
        PGAPPNAME=WORKER_APPLICATION_NAME,
        DURABLE_EXTRA_GRAPHS=",".join(f"{name}={path}" for name, path in GRAPHS.items()),
        # The webhook tests' receiver listens on this machine.
        DURABLE_WEBHOOK_ALLOWED_HOSTS="127.0.0.1",
        # JSON lines, as in production, whatever the developer's own setting.
        DURABLE_LOG_FORMAT="json",
        **ENGINE_TIMINGS,
    )
    return env


class WorkerProcess:
    """``celery -A dashboard worker`` with the prefork pool, as ``make run`` starts it:
    no Celery beat, since every worker runs the reaper of stale runs itself. It leads
    its own process group, so ``kill()`` takes its pool processes down with it, as a
    lost machine would. ``broker``: a broker URL other than the tests' own."""

    def __init__(
        self,
        log_path: Path,
        name: str = "test",
        concurrency: int = 2,
        broker: str | None = None,
        env: dict | None = None,
    ):
        self.log_path = log_path
        self.name = name
        self.concurrency = concurrency
        self.broker = broker
        self.env = env or {}  # settings of this worker over ``worker_env``'s
        self.proc: subprocess.Popen | None = None
        self.paused = False  # stopped by ``pause``, to be started again by ``resume``

    @property
    def hostname(self) -> str:
        return f"{self.name}-{os.getpid()}@{socket.gethostname()}"

    def start(self):
        self.paused = False
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
            env=worker_env(self.broker) | self.env,
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

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def pause(self):
        """Stop it for tests that promise no worker, until ``resume``."""
        if self.running:
            self.stop()
            self.paused = True

    def resume(self):
        """Start it again if ``pause`` stopped it (not if a test stopped it on purpose)."""
        if self.paused:
            self.start()

    def stop(self):
        self.paused = False
        if self.running:
            self.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if not self._log.closed:
            self._log.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Served:
    """A process of ours run from the checkout with ``worker_env``'s settings, its output
    in ``log_path``; ``stop()`` asks it to stop (SIGTERM), then kills it after 30 s."""

    def __init__(self, log_path: Path):
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def _spawn(self, args: list[str], env: dict, new_session: bool = False) -> None:
        self._log = self.log_path.open("w")
        self._new_session = new_session  # then a kill takes its children down with it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", *args],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=new_session,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                if self._new_session:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                else:
                    self.proc.kill()
                self.proc.wait()
        self._log.close()


class WebProcess(_Served):
    """uvicorn serving ``dashboard.asgi:application`` at ``.url``, as ``make run`` serves
    the console, with a pool of ``WEB_POOL_SIZE`` connections; ``broker`` as for
    ``WorkerProcess``; ``settings``, more of its environment."""

    def __init__(self, log_path: Path, broker: str | None = None, **settings: str):
        super().__init__(log_path)
        self.broker = broker
        self.settings = settings  # more of its environment, e.g. DURABLE_WEB_RUN_SLOTS="1"
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self):
        env = worker_env(self.broker)
        env.update(PGAPPNAME=WEB_APPLICATION_NAME, DURABLE_DB_POOL_SIZE=str(WEB_POOL_SIZE))
        env.update(self.settings)
        self._spawn(
            [
                *("uvicorn", "dashboard.asgi:application"),
                *("--host", "127.0.0.1", "--port", str(self.port), "--lifespan", "off"),
                *("--timeout-graceful-shutdown", "5"),
            ],
            env,
        )
        wait_for(self._ready, timeout=60, message="the web server to answer")
        return self

    def kill(self):
        """SIGKILL: the process dies at once, as on a lost machine."""
        self.proc.kill()
        self.proc.wait()

    def _ready(self) -> bool:
        assert self.proc.poll() is None, f"the web server exited:\n{self.log()}"
        try:
            return httpx.get(f"{self.url}/api/openapi.json").status_code == 200
        except httpx.TransportError:
            return False


class RedisServer:
    """A ``redis-server`` of a test's own, on a free port (``.url``), that keeps nothing:
    after ``kill()`` and ``start()`` (on the same port) its queues are empty, as a broker
    restarted without persistence has lost its messages."""

    def __init__(self, log_path: Path):
        self.log_path = log_path
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self):
        self._log = self.log_path.open("a")
        self.proc = subprocess.Popen(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no"),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        wait_for(self._answers, timeout=30, message=f"redis-server on port {self.port}")
        return self

    def _answers(self) -> bool:
        assert self.proc.poll() is None, f"redis-server exited:\n{self.log_path.read_text()}"
        try:
            return redis.Redis(port=self.port, socket_timeout=1).ping()
        except redis.RedisError:
            return False

    def kill(self):
        """SIGKILL: the broker is gone at once, its connections cut."""
        self.proc.kill()
        self.proc.wait()
        self._log.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.kill()


class BeatProcess(_Served):
    """``celery -A dashboard beat`` with the settings' scheduler, django-celery-beat's
    ``DatabaseScheduler``: it reads the schedule from the test database as it changes,
    and sends each due task to the tests' broker."""

    def start(self):
        self._spawn(["celery", "-A", "dashboard", "beat", "--loglevel=DEBUG"], worker_env(), True)
        wait_for(
            lambda: "beat: Starting" in self.log() or self.proc.poll() is not None,
            timeout=60,
            message="beat to start",
        )
        assert self.proc.poll() is None, f"beat exited:\n{self.log()}"
        return self
