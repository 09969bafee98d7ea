"""Every ``DURABLE_*`` setting of the ``durable`` app, with its default, in one place.

A value is read from ``django.conf.settings`` each time code asks for it
(``conf.DURABLE_RUN_LEASE_SECONDS``), never at import: a test that changes a setting, or
a process that configures Django late, is seen at the next read. A project sets only what
it changes. ``dashboard/settings.py`` reads each from the environment variable of the same
name (the one place the environment is read): yes/no ones as ``1`` or ``0``, lists comma
separated, seconds as numbers; unset, the default below.

Settings (seconds unless said otherwise):

- ``DURABLE_GRAPHS``: ``{name: "dotted.path.to.build_graph"}``, the graphs runs can name
  (``durable.graphs``). Default: none.
- ``DURABLE_JS_GRAPHS`` (``{}``): ``{name: "path/to/file.ts:exportName"}``, LangGraph.js
  graphs (``.js``, ``.mjs`` or ``.ts``), loaded by the Node runtime (``durable.js``,
  installed by ``make js-runtime``) that a process starts the first time it needs one;
  empty, nothing JS starts. The project reads it from the environment in the same
  ``name=path:export,...`` shape as ``DURABLE_EXTRA_GRAPHS``.
- ``DURABLE_ENCRYPTION_KEY``: encrypt stored values with AES (16, 24 or 32 characters;
  ``durable.persistence.serde``). Default ``""``: not encrypted.
- ``DURABLE_REDACT_PATHS``: dotted paths of state values masked wherever values leave
  the server (``*``: any key or list index), e.g. ``["payment.card_number",
  "messages.*.additional_kwargs.api_key"]`` (``durable.redaction``). Default none.
- ``DURABLE_REDACT_KEYS``: key names whose values are masked at any path
  (case-insensitive; whole words, or ``fnmatch`` patterns with ``*``). Default
  ``password``, ``secret``, ``token``, ``api_key``, ``authorization``; ``()`` masks
  by key name nothing.
- ``DURABLE_SERDE_ALLOWLIST``: dotted class names stored state may revive beyond the
  registered graphs' own types. Default none.
- ``DURABLE_RUN_LEASE_SECONDS`` (30): how long a worker's claim on a running run lasts
  unless renewed (``durable.engine.lease``); also how long a pending run's message may
  go unclaimed before it counts as lost and is sent again (``durable.engine.queue``).
- ``DURABLE_HEARTBEAT_SECONDS`` (``None``: a third of the lease): how often it is renewed.
- ``DURABLE_REAPER_INTERVAL_SECONDS`` (10): how often each worker looks for runs whose
  lease expired and for pending runs whose message is not on its way (not sent during a
  broker outage, or lost: ``durable.engine.recovery``).
- ``DURABLE_REAPER_ENABLED`` (``True``): ``False`` switches recovery off: no worker
  runs the reaper, so a run whose worker died stays ``running`` for good (what the
  kill drill of ``manage.py drill`` shows failing; ``durable.drills``).
- ``DURABLE_STOP_GRACE_SECONDS`` (30): how long a run asked to stop may take to reach a
  super-step boundary before its process is killed.
- ``DURABLE_RUN_TIMEOUT_SECONDS`` (``None``: no limit): a run's longest wall time.
- ``DURABLE_RUN_SYNCHRONOUS_COMMIT`` (``False``): ``True`` makes the worker's run records
  wait for the WAL flush on PostgreSQL, as checkpoints do (``durable.engine.records``).
- ``DURABLE_RETENTION_INTERVAL_SECONDS`` (3600): how often Celery beat applies the
  retention policies (``durable.retention``).
- ``DURABLE_CRON_GRACE_SECONDS`` (60): how late a cron's fire may come after its slot
  and still start the run (``durable.engine.crons``); an older slot (Celery beat was
  down) is skipped, so missed slots are not replayed in a burst.
- ``DURABLE_EVENTS_LISTEN`` (``True``): on PostgreSQL, followers of a run are woken by
  LISTEN/NOTIFY (``durable.engine.follow``); ``False``: they poll.
- ``DURABLE_EVENTS_POLL_SECONDS`` (0.2): the longest a follower that does not listen
  waits between two polls (it polls sooner at first: ``durable.engine.follow``).
- ``DURABLE_EVENTS_FALLBACK_SECONDS`` (2.0): how often a listening follower reads anyway.
- ``DURABLE_EVENT_READERS`` (4): how many borrowed reads of one process hold a database
  connection at once (``durable.db.borrow``); read once, when the first read is made.
- ``DURABLE_WEBHOOK_ALLOWED_HOSTS``: the host names a run's ``webhook`` may post to
  (``durable.engine.webhooks``); any other host is refused when the run is asked for.
  Default none: no webhook is allowed.
- ``DURABLE_METRICS_TOKEN``: the bearer token a Prometheus scrape of ``GET /metrics``
  must send (``Authorization: Bearer <token>``; ``durable.metrics``). Default ``""``: no
  token, and only loopback clients (127.0.0.1, ::1) not behind a proxy may scrape.
- ``DURABLE_WEB_RUN_SLOTS`` (2): how many runs a web process executes at once, each on
  a thread of its own, for the requests of its own that wait for them (``runs.wait``,
  a stream; ``durable.engine.inline``); the others go to the Celery workers. ``0``:
  every run goes to the workers.
- ``DURABLE_VAR_DIR`` (``var`` in the working directory; a ``pathlib.Path``): where the
  app writes files of its own (the first admin's password: ``manage.py bootstrap``).
- ``DURABLE_ADMIN_USERNAME`` (``admin``): the first admin ``manage.py bootstrap`` makes
  on a fresh database.
- ``DURABLE_ADMIN_PASSWORD`` (``""``: a random one, written to
  ``<DURABLE_VAR_DIR>/admin-password`` and printed once): that admin's password.
- ``DURABLE_LOG_FORMAT`` (``json``: one JSON object a line, for a log collector): or
  ``text``, plain lines (what ``make run`` sets), for the web process and the workers
  (``durable.logcontext``).
- ``DURABLE_CORS_ALLOWED_ORIGINS`` (``http://localhost:3000``, ``http://127.0.0.1:3000``,
  where Agent Chat UI and agent-inbox serve): the origins whose browser pages may call
  the API (``/api/``) with its token header; the project hands them to django-cors-headers.
- ``DURABLE_DB_POOL_SIZE`` (8): the most PostgreSQL connections each process's pool
  holds open; the project puts it in ``DATABASES`` (psycopg's pool).
- ``DURABLE_DB_POOL_MAX_IDLE_SECONDS`` (60): how long a pooled connection may stay unused
  before the pool closes it (workers keep their pool between runs).

Read from the environment by the project only, not a setting of the app:
``DURABLE_EXTRA_GRAPHS`` (``name=dotted.path,...``), added to ``DURABLE_GRAPHS``.
- ``DURABLE_QUEUE``: the Celery queue this deployment's runs are sent to and its workers
  take them from, and, on Redis, the prefix of every key the broker writes (``<queue>:``),
  so that deployments sharing a broker (staging and production on one Redis database,
  two projects on one RabbitMQ vhost) never take each other's runs. Default ``None``:
  ``queue_for(DATABASES["default"])``, ``durable.<database name>`` (for SQLite, the
  file's name and a digest of its absolute path). Two deployments whose databases have
  the same name on different servers, sharing one broker, must set it apart; every
  process of one deployment (web, workers, beat) must agree on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    "DURABLE_GRAPHS": {},
    "DURABLE_JS_GRAPHS": {},
    "DURABLE_ENCRYPTION_KEY": "",
    "DURABLE_SERDE_ALLOWLIST": (),
    "DURABLE_REDACT_PATHS": (),
    "DURABLE_REDACT_KEYS": ("password", "secret", "token", "api_key", "authorization"),
    "DURABLE_RUN_LEASE_SECONDS": 30.0,
    "DURABLE_HEARTBEAT_SECONDS": None,
    "DURABLE_REAPER_INTERVAL_SECONDS": 10.0,
    "DURABLE_REAPER_ENABLED": True,
    "DURABLE_STOP_GRACE_SECONDS": 30.0,
    "DURABLE_RUN_TIMEOUT_SECONDS": None,
    "DURABLE_RUN_SYNCHRONOUS_COMMIT": False,
    "DURABLE_RETENTION_INTERVAL_SECONDS": 3600.0,
    "DURABLE_CRON_GRACE_SECONDS": 60.0,
    "DURABLE_EVENTS_LISTEN": True,
    "DURABLE_EVENTS_POLL_SECONDS": 0.2,
    "DURABLE_EVENTS_FALLBACK_SECONDS": 2.0,
    "DURABLE_EVENT_READERS": 4,
    "DURABLE_WEBHOOK_ALLOWED_HOSTS": (),
    "DURABLE_METRICS_TOKEN": "",
    "DURABLE_VAR_DIR": Path("var"),
    "DURABLE_ADMIN_USERNAME": "admin",
    "DURABLE_ADMIN_PASSWORD": "",
    "DURABLE_LOG_FORMAT": "json",
    "DURABLE_CORS_ALLOWED_ORIGINS": ("http://localhost:3000", "http://127.0.0.1:3000"),
    "DURABLE_DB_POOL_SIZE": 8,
    "DURABLE_DB_POOL_MAX_IDLE_SECONDS": 60.0,
    "DURABLE_WEB_RUN_SLOTS": 2,
    "DURABLE_QUEUE": None,
}


def default(name: str) -> Any:
    """The default of setting ``name``. Raises ``KeyError`` for a name not listed here."""
    return DEFAULTS[name]


def queue_for(database: Mapping[str, Any]) -> str:
    """``DURABLE_QUEUE``'s default for ``database`` (a ``DATABASES`` entry):
    ``durable.<NAME>``; for SQLite, whose ``NAME`` is a path, ``durable.<file stem>-<8 hex
    digits of the absolute path's SHA-256>``, since every checkout's file is ``db.sqlite3``."""
    name = str(database["NAME"])
    if database.get("ENGINE", "").endswith("sqlite3"):
        path = str(Path(name).resolve())
        return f"durable.{Path(name).stem}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"
    return f"durable.{name}"


def __getattr__(name: str) -> Any:
    """``conf.DURABLE_X``: the project's ``settings.DURABLE_X``, else its default."""
    if name not in DEFAULTS:
        raise AttributeError(f"module {__name__!r} has no setting {name!r}")
    value = getattr(settings, name, DEFAULTS[name])
    if name == "DURABLE_HEARTBEAT_SECONDS" and value is None:
        return __getattr__("DURABLE_RUN_LEASE_SECONDS") / 3
    if name == "DURABLE_QUEUE" and value is None:
        return queue_for(settings.DATABASES["default"])
    return value
