"""Settings for the console and its workers.

Everything that differs between machines comes from the environment:

- ``DATABASE_URL``: default ``sqlite:///var/db.sqlite3`` (embedded); e.g.
  ``postgres://postgres@127.0.0.1:5432/durable`` for PostgreSQL.
- ``CELERY_BROKER_URL``: default ``sqla+sqlite:///var/celery-broker.sqlite3`` (kombu's
  SQLAlchemy transport on a local file: no external service); e.g.
  ``redis://127.0.0.1:6379/0``.
- ``DJANGO_SECRET_KEY``: required when ``DJANGO_DEBUG`` is off.
- ``DJANGO_DEBUG``: ``1`` (default) or ``0``.
- ``DJANGO_ALLOWED_HOSTS``: comma separated; default ``127.0.0.1,localhost``.
- ``DURABLE_ENCRYPTION_KEY``: encrypt stored values with AES (16, 24 or 32 characters).
- ``DURABLE_SERDE_ALLOWLIST``: comma-separated dotted class names stored state may hold
  beyond the registered graphs' own types.
- ``DURABLE_REDACT_PATHS`` and ``DURABLE_REDACT_KEYS``: comma-separated state paths and
  key-name patterns whose values are masked wherever values leave the server
  (``durable.redaction``); keys default to ``password,secret,token,api_key,authorization``.
- ``DURABLE_EXTRA_GRAPHS``: more graphs to register, ``name=dotted.path,...``.
- ``DURABLE_DB_POOL_SIZE`` (default 8) and ``DURABLE_DB_POOL_MAX_IDLE_SECONDS`` (60): each
  process's PostgreSQL connection pool.
- ``DURABLE_CORS_ALLOWED_ORIGINS``: comma-separated origins whose browser pages may call
  the API (``/api/``); default ``http://localhost:3000,http://127.0.0.1:3000``.
- ``DURABLE_WEBHOOK_ALLOWED_HOSTS``: comma-separated host names a run's ``webhook`` may
  post to; default none.
- ``DURABLE_LOG_FORMAT``: ``json`` (default: one JSON object a line, for a log collector)
  or ``text`` (plain lines, as ``make run`` sets), for the web process and the workers.
- ``DURABLE_METRICS_TOKEN``: the bearer token Prometheus sends to scrape ``/metrics``;
  unset, only loopback clients may scrape.
- ``DURABLE_VAR_DIR``: where the SQLite files and the app's own files live; default ``var/``.
- The run engine's timings, in seconds: ``DURABLE_RUN_LEASE_SECONDS``,
  ``DURABLE_HEARTBEAT_SECONDS``, ``DURABLE_REAPER_INTERVAL_SECONDS``,
  ``DURABLE_STOP_GRACE_SECONDS``, ``DURABLE_RUN_TIMEOUT_SECONDS`` and
  ``DURABLE_RETENTION_INTERVAL_SECONDS``, ``DURABLE_CRON_GRACE_SECONDS``;
  ``DURABLE_RUN_SYNCHRONOUS_COMMIT`` (``1``: run
  records wait for the WAL flush); ``DURABLE_REAPER_ENABLED`` (``0``: recovery off, for a
  fault drill to show failing). What each means, and its default when unset:
  ``durable.conf``.
"""

import os
from pathlib import Path

import dj_database_url
from corsheaders.defaults import default_headers as cors_default_headers
from csp.constants import NONE, SELF

from durable import conf
from durable.tasknames import RETENTION_TASK

BASE_DIR = Path(__file__).resolve().parent.parent
# The app's files (durable.conf) and the project's: SQLite databases, static files, logs.
DURABLE_VAR_DIR = VAR_DIR = Path(os.environ.get("DURABLE_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or ("insecure-dev-only-key" if DEBUG else None)
if not SECRET_KEY:
    raise RuntimeError("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG=0")
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    # Only for the API docs' Swagger UI files, served from here rather than a CDN.
    "ninja",
    # CORS for the API, so browser UIs on another origin (Agent Chat UI, agent-inbox) can call it.
    "corsheaders",
    # Celery beat's schedule in the database: crons are added to it as they are made.
    "django_celery_beat",
    "durable",
    "dashboard",
]

MIDDLEWARE = [
    # First, so that a preflight is answered before anything else looks at it.
    "corsheaders.middleware.CorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Login for the console, and the request's tenant and role (the API uses tokens).
    "dashboard.tenancy.TenantMiddleware",
    # The console's own 404, 500 and 413 (a form too large) pages, with DEBUG on too.
    "dashboard.errors.ErrorPagesMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

# CORS (django-cors-headers), for the API only: the origins of DURABLE_CORS_ALLOWED_ORIGINS
# (comma-separated; by default the local ports Agent Chat UI and agent-inbox serve on) may
# call it from a browser with the API's token header. No cookies cross: the API
# authenticates by header only, so credentials stay off.
CORS_ALLOWED_ORIGINS = [
    origin.strip()
    for origin in os.environ.get(
        "DURABLE_CORS_ALLOWED_ORIGINS", "http://localhost:3000,http://127.0.0.1:3000"
    ).split(",")
    if origin.strip()
]
CORS_URLS_REGEX = r"^/api/.*$"
CORS_ALLOW_HEADERS = (*cors_default_headers, "x-api-key")
# The SDKs read a new run's ids from Content-Location, and a resumable stream's from Location.
CORS_EXPOSE_HEADERS = ["content-location", "location"]

ROOT_URLCONF = "dashboard.urls"
WSGI_APPLICATION = "dashboard.wsgi.application"
ASGI_APPLICATION = "dashboard.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.tenancy.role",
            ],
        },
    }
]


DB_POOL_SIZE = int(os.environ.get("DURABLE_DB_POOL_SIZE", "8"))
# Seconds a pooled connection may stay unused before the pool closes it (one at a time):
# workers keep their pool between runs (dashboard.celery), and give it back this way.
DB_POOL_MAX_IDLE = float(os.environ.get("DURABLE_DB_POOL_MAX_IDLE_SECONDS", "60"))


def _database(url: str) -> dict:
    db = dj_database_url.parse(url)
    if db["ENGINE"] == "django.db.backends.sqlite3":
        # The web server and the worker write the same file: WAL lets readers run beside
        # a writer, IMMEDIATE takes the write lock up front (no deadlocked lock upgrades),
        # and the timeout makes a busy writer wait instead of failing.
        db["OPTIONS"] = {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        }
        # Tests share the database with a worker process, so it must be a file.
        db["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}
    elif db["ENGINE"] == "django.db.backends.postgresql":
        # LangGraph calls the saver from short-lived threads, each of which would open
        # and close its own connection; the pool keeps a bounded set open instead.
        db["OPTIONS"] = {
            "pool": {
                "min_size": 0,
                "max_size": DB_POOL_SIZE,
                "timeout": 30,
                "max_idle": DB_POOL_MAX_IDLE,
            },
            # psycopg's default, which Django turns off: the saver's and the store's
            # server-binding statements are prepared after five runs on a connection.
            "prepare_threshold": 5,
        }
    return db


DATABASES = {
    "default": _database(os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"))
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"

# Celery. The embedded default is kombu's SQLAlchemy transport on a SQLite file: a
# real broker in a separate worker process with no service to install. Messages are rows
# written in one transaction, so a reader never sees half a message (unlike kombu's
# filesystem transport, kombu#1551).
CELERY_BROKER_URL = os.environ.get(
    "CELERY_BROKER_URL", f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}"
)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True
# How long the prefork pool waits, once a pool process has died, for a result it may
# have sent before it tells the main process (WorkerLostError, task_failure): Celery's
# 10 s would be most of a killed run's recovery, and a run's task has no result to wait
# for (its outcome is its row). On that signal the worker recovers the run at once
# (durable.engine.tasks), without waiting for its lease to expire.
CELERY_WORKER_LOST_WAIT = 1.0
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker waits out a broker outage of any length (Celery's default gives up after 100
# attempts, and the worker exits): runs are in the database, and it sends them when the
# broker is back (durable.engine.queue).
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # A request that sends a run or a revoke while Redis is down waits for one
    # connection attempt (kombu's default retries take seconds; the reapers send the run
    # later: durable.engine.queue), within these socket timeouts: without them a Redis
    # that accepts connections but does not answer (a failover, a half-open connection)
    # holds a publish forever. The worker's own connection retries as set above. Not for
    # the SQLAlchemy transport, which hands its options to create_engine.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "max_retries": 0,
        "socket_timeout": 2.0,
        "socket_connect_timeout": 2.0,
    }


def _seconds(name: str) -> float | None:
    """Setting ``name`` from the environment, else its default (``durable.conf``)."""
    value = os.environ.get(name, "")
    return float(value) if value else conf.default(name)


# The run engine (durable.engine). A running run holds a lease of DURABLE_RUN_LEASE_SECONDS
# that its worker renews every DURABLE_HEARTBEAT_SECONDS; the reaper, which every worker
# runs every DURABLE_REAPER_INTERVAL_SECONDS (durable.engine.tasks; no Celery beat needed),
# re-enqueues runs whose lease expired (their worker died) and sends the pending runs whose
# message is not on its way (not sent during a broker outage, or lost: durable.engine.queue).
# A run asked to stop that has not reached a super-step boundary within
# DURABLE_STOP_GRACE_SECONDS is stopped hard (its pool process is killed).
# DURABLE_RUN_TIMEOUT_SECONDS bounds a run's wall time (status "timeout"); unset, no limit.
DURABLE_RUN_LEASE_SECONDS = _seconds("DURABLE_RUN_LEASE_SECONDS")
DURABLE_HEARTBEAT_SECONDS = _seconds("DURABLE_HEARTBEAT_SECONDS")  # None: a third of the lease
DURABLE_REAPER_INTERVAL_SECONDS = _seconds("DURABLE_REAPER_INTERVAL_SECONDS")
# "0" switches recovery off (no reaper): only to show what a drill reports without it.
DURABLE_REAPER_ENABLED = os.environ.get("DURABLE_REAPER_ENABLED", "1") != "0"
DURABLE_STOP_GRACE_SECONDS = _seconds("DURABLE_STOP_GRACE_SECONDS")
DURABLE_RUN_TIMEOUT_SECONDS = _seconds("DURABLE_RUN_TIMEOUT_SECONDS")
# On PostgreSQL the worker's own records (a run's claim, its events, its outcome) commit
# without waiting for the WAL flush (durable.engine.records); 1 makes them wait, as checkpoints do.
DURABLE_RUN_SYNCHRONOUS_COMMIT = os.environ.get("DURABLE_RUN_SYNCHRONOUS_COMMIT", "0") == "1"
DURABLE_RETENTION_INTERVAL_SECONDS = _seconds("DURABLE_RETENTION_INTERVAL_SECONDS")
DURABLE_CRON_GRACE_SECONDS = _seconds("DURABLE_CRON_GRACE_SECONDS")
DURABLE_METRICS_TOKEN = os.environ.get("DURABLE_METRICS_TOKEN", "")

# Celery beat (embedded in one worker with --beat, or `celery -A dashboard beat`) runs the
# retention sweep (durable.retention): the policies, then the store's TTL sweep. Several
# beats are safe: threads are claimed with SELECT ... FOR UPDATE SKIP LOCKED. The reaper
# of stale runs needs no beat: every worker runs it (durable.engine.tasks).
# Beat reads its schedule from the database (django-celery-beat), where crons add theirs
# as they are made (durable.engine.beat), with no restart; this schedule is written there
# when beat starts. A cron's slot is claimed on its row, so several beats never start it twice.
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BEAT_SCHEDULE = {
    "sweep-retention": {
        "task": RETENTION_TASK,
        "schedule": DURABLE_RETENTION_INTERVAL_SECONDS,
        "options": {"expires": DURABLE_RETENTION_INTERVAL_SECONDS},
    },
}

# Graphs that runs can name: name -> dotted path of a function returning an uncompiled
# StateGraph. durable.graphs compiles each with DjangoSaver, and runs it with the thread's
# tenant's part of the store.
DURABLE_GRAPHS = {
    "expense_approval": "examples.expense_approval.build_graph",
    "parallel_review": "examples.parallel_review.build_graph",
    "fault_tolerance": "examples.fault_tolerance.build_graph",
    "email_reply": "examples.email_reply.build_graph",
    "preferences": "examples.preferences.build_graph",
    "approval_chat": "examples.approval_chat.build_graph",
    "chat": "examples.chat.build_graph",
}
# More graphs from the environment, "name=dotted.path,name=dotted.path": the tests
# register theirs this way, in their own process and in the workers they start.
DURABLE_GRAPHS.update(
    item.split("=", 1) for item in os.environ.get("DURABLE_EXTRA_GRAPHS", "").split(",") if item
)

# Encryption at rest for checkpoints and store values (durable.persistence.serde): 16, 24 or 32
# characters, from the environment only. Metadata stays plain JSON.
DURABLE_ENCRYPTION_KEY = os.environ.get("DURABLE_ENCRYPTION_KEY", "")
# More classes a stored payload may revive, as dotted paths ("package.module.Class").
DURABLE_SERDE_ALLOWLIST = [
    name for name in os.environ.get("DURABLE_SERDE_ALLOWLIST", "").split(",") if name
]

# Sensitive values, masked in every page, API answer, stream, audit export and worker log
# (durable.redaction); the stored data stays as it is (encrypted when the key above is set).
DURABLE_REDACT_PATHS = [
    path.strip() for path in os.environ.get("DURABLE_REDACT_PATHS", "").split(",") if path.strip()
]
if "DURABLE_REDACT_KEYS" in os.environ:
    DURABLE_REDACT_KEYS = [
        key.strip() for key in os.environ["DURABLE_REDACT_KEYS"].split(",") if key.strip()
    ]

# The hosts runs may post their outcome to (a run request's webhook): none unless named.
DURABLE_WEBHOOK_ALLOWED_HOSTS = [
    host.strip()
    for host in os.environ.get("DURABLE_WEBHOOK_ALLOWED_HOSTS", "").split(",")
    if host.strip()
]

# Logs, the web process's here and the workers' (dashboard/celery.py): DURABLE_LOG_FORMAT
# lines on standard error, each stamped with the run it is about (durable.logcontext) and
# sensitive values masked (durable.redaction). Django's own loggers and uvicorn's write
# through the same handler.
DURABLE_LOG_FORMAT = os.environ.get("DURABLE_LOG_FORMAT", "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "context": {"()": "durable.logcontext.ContextFilter"},
        "client_errors": {"()": "durable.logcontext.ClientErrorFilter"},
        "redact": {"()": "durable.redaction.RedactingFilter"},
    },
    "formatters": {"console": {"()": "durable.logcontext.formatter", "kind": DURABLE_LOG_FORMAT}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "console",
            "filters": ["context", "client_errors", "redact"],
        }
    },
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {
        "django": {"handlers": [], "level": "INFO"},
        "uvicorn": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "uvicorn.access": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}

# Security headers. Scripts, styles and images come from this server only: no inline
# script or style anywhere (htmx's own indicator style is turned off in base.html).
# X-Frame-Options DENY (Django's default, restated) and CSP frame-ancestors 'none'
# keep the console out of frames.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
        "base-uri": [SELF],
        "object-src": [NONE],
    }
}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# Outside DEBUG the console is served over HTTPS: cookies only travel encrypted.
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SESSION_COOKIE_HTTPONLY = True

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "threads"
