"""The run engine's statements on its hot path: a run's events, its claim and its outcome.

Through the ORM a short run cost some thirty round trips to the database: one INSERT
(and its NOTIFY) per event, a claim and an outcome of several queries each. On
PostgreSQL each of these is here one hand-written statement, or a few in one
transaction, on psycopg's server-binding cursor (``durable.db.cursor``: prepared after
five runs); on SQLite the ORM does the same work in more statements, under the
database's single write lock.

On PostgreSQL these records commit asynchronously (``synchronous_commit`` off for
their transactions only; ``DURABLE_RUN_SYNCHRONOUS_COMMIT`` turns that off): the commit
returns without waiting for its WAL record to reach the disk, which is most of a
commit's cost (milliseconds on a busy disk). Nothing a crash can lose is needed
afterwards: PostgreSQL flushes them within ``3 * wal_writer_delay`` (0.6 s by default),
and any later synchronous commit (the run's next checkpoint) flushes them first, as
the WAL is written in order. A claim lost with the server is the run still pending
(sent again by the reaper), as if its worker had died before its first checkpoint; a
lost outcome is the run still running on an expired lease, requeued by the reaper and
gone on from its last checkpoint, as if its worker had died before recording it.
Checkpoints, the state that must not be lost, keep synchronous commits.

Events keep their numbering: ``seq`` is the run's highest + 1, 2, ... computed by the
INSERT itself, as ``RunEventManager.append`` does, so the web process (a cancel's event)
and the worker can both write a running run's events; the one that loses a race to the
same ``seq`` (the unique constraint refuses it) tries again. Every write of the worker
is fenced by its ``attempt``: the statement changes nothing once the run was handed to
another attempt.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import psycopg
from django.conf import settings
from django.db import IntegrityError, connections, transaction
from django.db.models import F, Max, Q
from django.utils import timezone
from psycopg.types.json import Jsonb

from durable import db as sql
from durable.engine import policy as scheduling
from durable.engine.follow import CHANNEL
from durable.models import Checkpoint, Run, RunEvent, Thread

USING = "default"
ATTEMPTS = 5  # of a write that raced another to the same seq


@dataclass(frozen=True, slots=True)
class Event:
    """A RunEvent not written yet: ``data`` is its JSON text (``values.json_text``),
    ``at`` when it happened (its ``created_at``)."""

    event: str
    ns: str
    data: str
    at: dt.datetime


def _postgresql() -> bool:
    return connections[USING].vendor == "postgresql"


def _commit() -> str:
    """What the first statement of a transaction selects to set how it commits: without
    waiting for its WAL record to reach the disk, unless
    ``DURABLE_RUN_SYNCHRONOUS_COMMIT`` (see the module's docstring)."""
    if settings.DURABLE_RUN_SYNCHRONOUS_COMMIT:
        return "NULL"
    return "set_config('synchronous_commit', 'off', true)"


def _identity(text: str) -> str:
    return text


def _q(name: str) -> str:
    return connections[USING].ops.quote_name(name)


_RUN = Run._meta.db_table
_EVENT = RunEvent._meta.db_table
_THREAD = Thread._meta.db_table
_CHECKPOINT = Checkpoint._meta.db_table
_RUN_FIELDS = Run._meta.concrete_fields
_THREAD_FIELDS = Thread._meta.concrete_fields
ACTIVE = "('pending', 'running')"

# The rows of a batch of events, numbered from 1 (PostgreSQL): one array parameter per
# column, so that the statement's text does not depend on the batch's size.
_EVENT_ROWS = (
    "ROWS FROM (unnest(%(event)s::text[]), unnest(%(ns)s::text[]),"
    " jsonb_array_elements(%(data)s::jsonb), unnest(%(at)s::timestamptz[]))"
    " WITH ORDINALITY AS e(event, ns, data, created_at, n)"
)
_INSERT_EVENTS = (
    f"INSERT INTO {_EVENT} (run_id, seq, event, ns, data, created_at)"
    " SELECT %(run)s, base.seq + e.n, e.event, e.ns, NULLIF(e.data, 'null'::jsonb),"
    f" e.created_at FROM {{source}}, {_EVENT_ROWS} RETURNING 1"
)
_BASE = f"SELECT COALESCE(MAX(seq), 0) AS seq FROM {_EVENT} WHERE run_id = %(run)s"


def _event_params(run_id: int, events: Sequence[Event]) -> dict:
    return {
        "run": run_id,
        "event": [e.event for e in events],
        "ns": [e.ns for e in events],
        "data": Jsonb("[" + ",".join(e.data for e in events) + "]", dumps=_identity),
        "at": [e.at for e in events],
        "channel": CHANNEL,
        "run_text": str(run_id),
    }


# -- events ------------------------------------------------------------------------------


def insert_events(run: Run, events: Sequence[Event]) -> bool:
    """Write ``events`` as run ``run``'s next ones, if ``run.attempt`` still holds it;
    on PostgreSQL one statement, which also notifies the web processes that follow the
    run (``durable.engine.follow``). Returns whether they were written."""
    if not events:
        return True
    for attempt in range(ATTEMPTS):
        try:
            if _postgresql():
                return _insert_events_postgresql(run, events)
            return _insert_events_orm(run, events)
        except (IntegrityError, psycopg.errors.UniqueViolation):
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


_INSERT_HELD = (
    f"WITH held AS (SELECT {{commit}} FROM {_RUN} WHERE id = %(run)s AND attempt = %(attempt)s"
    " AND status = 'running'),"
    f" base AS ({_BASE}),"
    f" ins AS ({_INSERT_EVENTS.format(source='held, base')})"
    " SELECT count(*), pg_notify(%(channel)s, %(run_text)s) FROM ins"
)


def _insert_events_postgresql(run: Run, events: Sequence[Event]) -> bool:
    params = _event_params(run.pk, events) | {"attempt": run.attempt}
    with sql.cursor(USING) as cursor:
        cursor.execute(_INSERT_HELD.format(commit=_commit()), params)
        return cursor.fetchone()[0] > 0


def _insert_events_orm(run: Run, events: Sequence[Event]) -> bool:
    with transaction.atomic(using=USING):
        if not _held(run).exists():
            return False
        _create_events(run.pk, events)
    return True


def _held(run: Run):
    return Run.objects.filter(pk=run.pk, attempt=run.attempt, status=Run.Status.RUNNING)


def _create_events(run_id: int, events: Sequence[Event]) -> None:
    """Inside a transaction (on SQLite, under its write lock): the events numbered after
    the run's latest, with their own ``created_at`` and their JSON text as it is."""
    latest = RunEvent.objects.filter(run_id=run_id).aggregate(seq=Max("seq"))["seq"] or 0
    connection = connections[USING]
    statement = (
        f"INSERT INTO {_q(_EVENT)} (run_id, seq, event, ns, data, created_at)"
        " VALUES (%s, %s, %s, %s, %s, %s)"
    )
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.executemany(
            statement,
            [
                (run_id, latest + n, e.event, e.ns, e.data, adapt(e.at))
                for n, e in enumerate(events, 1)
            ],
        )


# -- the claim ---------------------------------------------------------------------------


def claim(run_id: int, worker: str, lease_seconds: float) -> tuple[Run | None, bool]:
    """Claim pending run ``run_id`` for ``worker``: raise its ``attempt``, take a lease,
    set ``started_at`` (on its first claim) and, for a start or resume, the checkpoint
    it starts from (the thread's latest). Under the thread's lock, as every transaction
    that changes runs (``scheduling.lock_thread``): so that the check for an earlier
    active run sees what a transaction that held the lock (a run that ended, a request
    that enqueued or cancelled one) did. A run that must wait for an earlier one is
    left pending, its ``dispatched_at`` cleared: its message is used up, and the run
    that blocks it dispatches it again when it ends.

    Returns ``(run, claimed)``, ``run`` with its ``thread``; ``(None, False)`` when the
    run no longer exists."""
    now = timezone.now()
    lease = now + timedelta(seconds=lease_seconds)
    try:
        if _postgresql():
            claimed = _claim_postgresql(run_id, worker, now, lease)
        else:
            claimed = _claim_orm(run_id, worker, now, lease)
    except (IntegrityError, psycopg.errors.UniqueViolation):
        claimed = None  # another run of the thread was claimed at the same moment
    if claimed is not None:
        return claimed, True
    return Run.objects.filter(pk=run_id).first(), False


_LOCK_THREAD = (
    f"SELECT {', '.join(_q(f.column) for f in _THREAD_FIELDS)}, {{commit}} FROM {_THREAD}"
    f" WHERE id = (SELECT thread_id FROM {_RUN} WHERE id = %(run)s) FOR NO KEY UPDATE"
)
# An earlier run of the thread is running, or still waits.
_MUST_WAIT = (
    f"EXISTS (SELECT 1 FROM {_RUN} o WHERE o.thread_id = {_RUN}.thread_id"
    f" AND (o.status = 'running' OR (o.status = 'pending' AND o.id < {_RUN}.id)))"
)
_CLAIM = (
    f"UPDATE {_RUN} SET status = 'running', attempt = attempt + 1, worker = %(worker)s,"
    " lease_expires_at = %(lease)s, started_at = COALESCE(started_at, %(now)s),"
    " checkpoint_id = CASE WHEN checkpoint_id <> '' THEN checkpoint_id"
    " WHEN kind IN ('start', 'resume') THEN COALESCE("
    f"(SELECT checkpoint_id FROM {_CHECKPOINT} WHERE thread_id ="
    f" (SELECT thread_id FROM {_THREAD} WHERE id = {_RUN}.thread_id)"
    " AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1), '') ELSE '' END"
    f" WHERE id = %(run)s AND status = 'pending' AND NOT {_MUST_WAIT}"
    f" RETURNING {', '.join(_q(f.column) for f in _RUN_FIELDS)}"
)
_LEAVE_WAITING = (
    f"UPDATE {_RUN} SET dispatched_at = NULL"
    f" WHERE id = %(run)s AND status = 'pending' AND {_MUST_WAIT}"
)


def _claim_postgresql(run_id: int, worker: str, now, lease) -> Run | None:
    """One round trip: the thread's lock and the claim, as one transaction. A run left
    pending takes another, to give its message back (again under the lock)."""
    params = {"run": run_id, "worker": worker, "now": now, "lease": lease}
    with sql.pipeline(USING) as execute:
        locked = execute(_LOCK_THREAD.format(commit=_commit()), params)
        claimed = execute(_CLAIM, params)
    thread_row, run_row = locked.fetchone(), claimed.fetchone()
    if thread_row is None:
        return None
    if run_row is None:
        with sql.pipeline(USING) as execute:
            execute(_LOCK_THREAD.format(commit=_commit()), params)
            execute(_LEAVE_WAITING, params)
        return None
    run = _instance(Run, _RUN_FIELDS, run_row)
    run.thread = _instance(Thread, _THREAD_FIELDS, thread_row[:-1])
    return run


def _instance(model, fields, row):
    values = [sql._from_db(f, v) for f, v in zip(fields, row, strict=True)]
    return model.from_db(USING, [f.attname for f in fields], values)


def _claim_orm(run_id: int, worker: str, now, lease) -> Run | None:
    run = Run.objects.filter(pk=run_id).first()
    if run is None or run.status != Run.Status.PENDING:
        return None
    with transaction.atomic(using=USING):
        scheduling.lock_thread(run.thread_id)
        earlier = Run.objects.filter(thread_id=run.thread_id).filter(
            Q(status=Run.Status.RUNNING) | Q(status=Run.Status.PENDING, pk__lt=run.pk)
        )
        if earlier.exists():
            Run.objects.filter(pk=run_id, status=Run.Status.PENDING).update(dispatched_at=None)
            return None
        head = ""
        if not run.checkpoint_id and run.kind in (Run.Kind.START, Run.Kind.RESUME):
            thread_id = Thread.objects.filter(pk=run.thread_id).values_list("thread_id", flat=True)
            head = (
                Checkpoint.objects.filter(thread_id=thread_id[0], checkpoint_ns="")
                .order_by("-checkpoint_id")
                .values_list("checkpoint_id", flat=True)
                .first()
            ) or ""
        claimed = Run.objects.filter(pk=run_id, status=Run.Status.PENDING).update(
            status=Run.Status.RUNNING,
            attempt=F("attempt") + 1,
            worker=worker,
            lease_expires_at=lease,
            started_at=run.started_at or now,
            checkpoint_id=run.checkpoint_id or head,
        )
    if not claimed:
        return None
    return Run.objects.select_related("thread").get(pk=run_id)


# -- the outcome -------------------------------------------------------------------------

# The thread's status after a run that ended so, when no other run of the thread is
# active (``scheduling.settle_thread``); other outcomes take ``scheduling``'s path.
THREAD_STATUS_AFTER = {
    Run.Status.SUCCESS: Thread.Status.IDLE,
    Run.Status.INTERRUPTED: Thread.Status.INTERRUPTED,
    Run.Status.ERROR: Thread.Status.ERROR,
}
ENDED, LOST, STOPPING = "ended", "lost", "stopping"


def finish(run: Run, status: str, fields: dict, events: Sequence[Event]) -> str:
    """Record that run ``run`` ended with ``status`` (one of ``THREAD_STATUS_AFTER``):
    its row (with ``fields``: ``interrupts``, ``error_*``), its last ``events`` and its
    thread's status, in one transaction under the thread's lock; the thread's next run
    is dispatched once it commits. Returns ``ENDED``; ``LOST`` when ``run.attempt`` no
    longer holds the run; ``STOPPING`` when a rollback was requested meanwhile (nothing
    is written then: the caller rolls the run back)."""
    for attempt in range(ATTEMPTS):
        try:
            if _postgresql():
                return _finish_postgresql(run, status, fields, events)
            return _finish_orm(run, status, fields, events)
        except (IntegrityError, psycopg.errors.UniqueViolation):
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _finish_sql(fields: Sequence[str]) -> str:
    sets = "".join(f", {_q(name)} = %({name})s" for name in fields)
    return (
        f"WITH ended AS (UPDATE {_RUN} SET status = %(status)s, ended_at = %(now)s,"
        f" lease_expires_at = NULL{sets}"
        " WHERE id = %(run)s AND attempt = %(attempt)s AND status = 'running'"
        " AND stop_requested <> 'rollback' RETURNING id),"
        f" base AS ({_BASE}),"
        f" ins AS ({_INSERT_EVENTS.format(source='ended, base')}),"
        f" busy AS (SELECT EXISTS (SELECT 1 FROM {_RUN} WHERE thread_id = %(thread)s"
        f" AND status IN {ACTIVE} AND id <> %(run)s) AS busy),"
        f" settled AS (UPDATE {_THREAD} SET status = %(thread_status)s, updated_at = %(now)s"
        f" FROM ended, busy WHERE {_THREAD}.id = %(thread)s AND NOT busy.busy RETURNING 1)"
        " SELECT (SELECT count(*) FROM ended), (SELECT busy FROM busy),"
        f" (SELECT stop_requested FROM {_RUN} WHERE id = %(run)s AND attempt = %(attempt)s"
        " AND status = 'running'), (SELECT count(*) FROM ins), (SELECT count(*) FROM settled),"
        " pg_notify(%(channel)s, %(run_text)s)"
    )


def _finish_postgresql(run: Run, status: str, fields: dict, events: Sequence[Event]) -> str:
    """One round trip: the thread's lock, then the statement that ends the run, as one
    transaction."""
    params = _event_params(run.pk, events) | {
        "status": status,
        "now": timezone.now(),
        "attempt": run.attempt,
        "thread": run.thread_id,
        "thread_status": THREAD_STATUS_AFTER[status],
    }
    for name, value in fields.items():
        field = Run._meta.get_field(name)
        params[name] = Jsonb(value) if field.get_internal_type() == "JSONField" else value
    with sql.pipeline(USING) as execute:
        execute(_LOCK_THREAD.format(commit=_commit()), params)
        finished = execute(_finish_sql(sorted(fields)), params)
    ended, busy, stop, *_ = finished.fetchone()
    if not ended:
        return STOPPING if stop == Run.Stop.ROLLBACK else LOST
    if busy:
        scheduling.dispatch_next(run.thread_id)
    return ENDED


def _finish_orm(run: Run, status: str, fields: dict, events: Sequence[Event]) -> str:
    with transaction.atomic(using=USING):
        scheduling.lock_thread(run.thread_id)
        stop = _held(run).values_list("stop_requested", flat=True).first()
        if stop is None:
            return LOST
        if stop == Run.Stop.ROLLBACK:
            return STOPPING
        _held(run).update(status=status, ended_at=timezone.now(), lease_expires_at=None, **fields)
        _create_events(run.pk, events)
        scheduling.settle_thread(run.thread_id, status)
    return ENDED
