"""Settings for the console and its workers.

Everything that differs between machines comes from the environment, read here and
nowhere else, by ``environs`` (``env`` below): a value it cannot parse stops the start
with an error naming the variable. One convention for the yes/no ones: ``1`` or ``0``
(``true``/``false``, ``yes``/``no`` and ``on``/``off`` are read the same way; an empty or
other value is refused). Lists are comma separated.

- ``DATABASE_URL``: default ``sqlite:///var/db.sqlite3`` (embedded); e.g.
  ``postgres://postgres@127.0.0.1:5432/durable`` for PostgreSQL.
- ``CELERY_BROKER_URL``: default ``sqla+sqlite:///var/celery-broker.sqlite3`` (kombu's
  SQLAlchemy transport on a local file: no external service); e.g.
  ``redis://127.0.0.1:6379/0``.
- ``DJANGO_SECRET_KEY``: required when ``DJANGO_DEBUG`` is off.
- ``DJANGO_DEBUG``: ``1`` (default) or ``0``.
- ``DJANGO_ALLOWED_HOSTS``: default ``127.0.0.1,localhost``.
- ``DURABLE_EXTRA_GRAPHS``: more graphs to register, ``name=dotted.path,...``, beside
  the examples of ``DURABLE_GRAPHS``.
- Every ``DURABLE_*`` setting of the app under its own name (``DURABLE_ENCRYPTION_KEY``,
  ``DURABLE_RUN_LEASE_SECONDS``, ``DURABLE_REAPER_ENABLED``, ``DURABLE_WEB_RUN_SLOTS``...):
  what each means, and its default when unset, is in ``durable.conf``, the one list.
"""

from pathlib import Path

from corsheaders.defaults import default_headers as cors_default_headers
from csp.constants import NONE, SELF
from environs import Env

from durable import conf
from durable.tasknames import RETENTION_TASK

BASE_DIR = Path(__file__).resolve().parent.parent

# The one reader of the environment. No .env file is read: the environment is the whole
# configuration, as the Makefile, .ci/ and the tests' processes pass it.
env = Env()


def _durable(parse, name: str):
    """The app's setting ``name`` from the environment, parsed by ``parse`` (an ``env``
    method), else its default (``durable.conf``)."""
    return parse(name, conf.default(name))


def _items(name: str, default=()) -> list[str]:
    """A comma-separated variable's items, stripped, empty ones left out."""
    return [item.strip() for item in env.list(name, list(default)) if item.strip()]


# The app's files (durable.conf) and the project's: SQLite databases, static files, logs.
DURABLE_VAR_DIR = VAR_DIR = env.path("DURABLE_VAR_DIR", BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.bool("DJANGO_DEBUG", True)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", "") or ("insecure-dev-only-key" if DEBUG else None)
if not SECRET_KEY:
    raise RuntimeError("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG=0")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])

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
    # A read whose database connection fails is tried again once; else a 503, never a 500.
    "dashboard.faults.DatabaseFaultMiddleware",
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
DURABLE_CORS_ALLOWED_ORIGINS = CORS_ALLOWED_ORIGINS = _items(
    "DURABLE_CORS_ALLOWED_ORIGINS", conf.default("DURABLE_CORS_ALLOWED_ORIGINS")
)
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


DURABLE_DB_POOL_SIZE = _durable(env.int, "DURABLE_DB_POOL_SIZE")
# Seconds a pooled connection may stay unused before the pool closes it (one at a time):
# workers keep their pool between runs (dashboard.celery), and give it back this way.
DURABLE_DB_POOL_MAX_IDLE_SECONDS = _durable(env.float, "DURABLE_DB_POOL_MAX_IDLE_SECONDS")


def _database(db: dict) -> dict:
    """``db``, a database parsed from its URL, with this project's options for its engine."""
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
                "max_size": DURABLE_DB_POOL_SIZE,
                "timeout": 30,
                "max_idle": DURABLE_DB_POOL_MAX_IDLE_SECONDS,
            },
            # psycopg's default, which Django turns off: the saver's and the store's
            # server-binding statements are prepared after five runs on a connection.
            "prepare_threshold": 5,
        }
    return db


DATABASES = {
    "default": _database(env.dj_db_url("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"))
}
# The deployment's own Celery queue, control exchange and Redis key prefix (durable.conf).
DURABLE_QUEUE = _durable(env.str, "DURABLE_QUEUE") or conf.queue_for(DATABASES["default"])
CELERY_TASK_DEFAULT_QUEUE = CELERY_CONTROL_EXCHANGE = DURABLE_QUEUE
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
CELERY_BROKER_URL = env.str(
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
        "global_keyprefix": f"{DURABLE_QUEUE}:",
    }


# The run engine (durable.engine). A running run holds a lease of DURABLE_RUN_LEASE_SECONDS
# that its worker renews every DURABLE_HEARTBEAT_SECONDS; the reaper, which every worker
# runs every DURABLE_REAPER_INTERVAL_SECONDS (durable.engine.tasks; no Celery beat needed),
# re-enqueues runs whose lease expired (their worker died) and sends the pending runs whose
# message is not on its way (not sent during a broker outage, or lost: durable.engine.queue).
# A run asked to stop that has not reached a super-step boundary within
# DURABLE_STOP_GRACE_SECONDS is stopped hard (its pool process is killed).
# DURABLE_RUN_TIMEOUT_SECONDS bounds a run's wall time (status "timeout"); unset, no limit.
DURABLE_RUN_LEASE_SECONDS = _durable(env.float, "DURABLE_RUN_LEASE_SECONDS")
DURABLE_HEARTBEAT_SECONDS = _durable(
    env.float, "DURABLE_HEARTBEAT_SECONDS"
)  # None: a third of the lease
DURABLE_REAPER_INTERVAL_SECONDS = _durable(env.float, "DURABLE_REAPER_INTERVAL_SECONDS")
# "0" switches recovery off (no reaper): only to show what a drill reports without it.
DURABLE_REAPER_ENABLED = _durable(env.bool, "DURABLE_REAPER_ENABLED")
DURABLE_STOP_GRACE_SECONDS = _durable(env.float, "DURABLE_STOP_GRACE_SECONDS")
DURABLE_RUN_TIMEOUT_SECONDS = _durable(env.float, "DURABLE_RUN_TIMEOUT_SECONDS")
# On PostgreSQL the worker's own records (a run's claim, its events, its outcome) commit
# without waiting for the WAL flush (durable.engine.records); 1 makes them wait, as checkpoints do.
DURABLE_RUN_SYNCHRONOUS_COMMIT = _durable(env.bool, "DURABLE_RUN_SYNCHRONOUS_COMMIT")
DURABLE_RETENTION_INTERVAL_SECONDS = _durable(env.float, "DURABLE_RETENTION_INTERVAL_SECONDS")
DURABLE_CRON_GRACE_SECONDS = _durable(env.float, "DURABLE_CRON_GRACE_SECONDS")
DURABLE_METRICS_TOKEN = _durable(env.str, "DURABLE_METRICS_TOKEN")
# Runs the web process executes itself, for its requests that wait on them (0: none).
DURABLE_WEB_RUN_SLOTS = _durable(env.int, "DURABLE_WEB_RUN_SLOTS")

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
DURABLE_GRAPHS.update(item.split("=", 1) for item in _items("DURABLE_EXTRA_GRAPHS"))
# LangGraph.js graphs, "name=path/to/file.ts:exportName,...": run by a Node process each
# Python process starts when it first needs one (durable.js). Empty: nothing JS starts.
DURABLE_JS_GRAPHS = dict(item.split("=", 1) for item in _items("DURABLE_JS_GRAPHS"))

# Encryption at rest for checkpoints and store values (durable.persistence.serde): 16, 24 or 32
# characters, from the environment only. Metadata stays plain JSON.
DURABLE_ENCRYPTION_KEY = _durable(env.str, "DURABLE_ENCRYPTION_KEY")
# More classes a stored payload may revive, as dotted paths ("package.module.Class").
DURABLE_SERDE_ALLOWLIST = _items("DURABLE_SERDE_ALLOWLIST")

# Sensitive values, masked in every page, API answer, stream, audit export and worker log
# (durable.redaction); the stored data stays as it is (encrypted when the key above is set).
DURABLE_REDACT_PATHS = _items("DURABLE_REDACT_PATHS")
# Set and empty, nothing is masked by its key's name.
DURABLE_REDACT_KEYS = _items("DURABLE_REDACT_KEYS", conf.default("DURABLE_REDACT_KEYS"))

# The hosts runs may post their outcome to (a run request's webhook): none unless named.
DURABLE_WEBHOOK_ALLOWED_HOSTS = _items("DURABLE_WEBHOOK_ALLOWED_HOSTS")

# Logs, the web process's here and the workers' (dashboard/celery.py): DURABLE_LOG_FORMAT
# lines on standard error, each stamped with the run it is about (durable.logcontext) and
# sensitive values masked (durable.redaction). Django's own loggers and uvicorn's write
# through the same handler.
# An unknown kind is refused by durable.logcontext.formatter, naming the variable.
DURABLE_LOG_FORMAT = _durable(env.str, "DURABLE_LOG_FORMAT")
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

# The first admin, made by `manage.py bootstrap` on a fresh database.
DURABLE_ADMIN_USERNAME = _durable(env.str, "DURABLE_ADMIN_USERNAME")
DURABLE_ADMIN_PASSWORD = _durable(env.str, "DURABLE_ADMIN_PASSWORD")

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "threads"
