"""A run's records on the engine's hot path: its claim, its events and its outcome, and the
row-level rules every transaction on runs follows (lock the thread first; an earlier run
blocks a later one; a worker's writes fenced by its ``attempt``). On PostgreSQL each is one
hand-written statement, or a few in one pipelined round trip; on SQLite the ORM does the
same work (figures: ``benchmarks/NOTES.md``). Nothing here decides what runs next or
talks to the broker.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import psycopg
from django.db import IntegrityError, connections, transaction
from django.db.models import F, Q
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.utils import timezone
from psycopg.types.json import Jsonb

from durable import conf
from durable import db as sql
from durable.history import newest_checkpoint_id
from durable.models import Checkpoint, Run, RunEvent, Tenant, Thread, numbered

USING = "default"
# PostgreSQL's channel for "run <id> has new events": the payload is the run's id, and
# ``CHUNKS_ONLY`` after it when they are stream chunks only, with no lifecycle change
# (every change of a run's status writes a lifecycle event), so that a follower waiting
# for the run's end need not read.
CHANNEL = "durable_run_events"
CHUNKS_ONLY = " chunks"


@dataclass(frozen=True, slots=True)
class Event:
    """A RunEvent not written yet: ``data`` is its JSON text (``values.json_text``),
    ``at`` when it happened (its ``created_at``)."""

    event: str
    ns: str
    data: str
    at: dt.datetime


# -- the rules every transaction on runs follows ----------------------------------------


def lock_thread(thread: Thread | int) -> Thread:
    """The thread (or the thread with primary key ``thread``) re-read under a row lock,
    inside the caller's transaction. Every transaction that changes runs locks their
    thread first, so two of them never wait on each other in opposite orders, and each
    sees what the lock's previous holder committed. Raises ``Thread.DoesNotExist``. (The
    PostgreSQL statements below take the same lock in SQL: ``_LOCK_THREAD``.)"""
    pk = thread if isinstance(thread, int) else thread.pk
    return _locking().get(pk=pk)


def lock_thread_named(tenant, name: str) -> Thread | None:
    """``lock_thread`` for ``tenant``'s thread named ``name``; ``None`` if it has none."""
    return _locking().filter(tenant=tenant, name=name).first()


def _locking():
    return Thread.objects.select_for_update(no_key=True)


def must_wait(run: Run) -> bool:
    """Whether an earlier run blocks ``run``. Call it holding the thread's lock."""
    return earlier_runs(run.thread_pk, run.pk).exists()


def earlier_runs(thread_pk, run_pk):
    """The runs that block run ``run_pk`` of thread ``thread_pk`` (values, or
    ``OuterRef``s in a subquery): one of its thread is running, or is pending and older
    (runs start one at a time, oldest first). (The PostgreSQL claim asks the same in
    SQL: ``_MUST_WAIT``.)"""
    earlier = Q(status=Run.Status.RUNNING) | Q(status=Run.Status.PENDING, pk__lt=run_pk)
    return Run.objects.filter(earlier, thread=thread_pk)


def not_due(run: Run, now: dt.datetime) -> bool:
    """Whether delayed run ``run`` may not start yet at ``now`` (``not_before``). (The
    PostgreSQL claim asks the same in SQL.)"""
    return run.not_before is not None and run.not_before > now


def held(run: Run):
    """The run's row, if ``run.attempt`` still holds it: the fence of a worker's writes."""
    return Run.objects.filter(pk=run.pk, attempt=run.attempt, status=Run.Status.RUNNING)


def dispatched() -> dict:
    """The fields that mark a pending run's message as on its way: a fresh Celery task
    id (so that a cancel can revoke it) and when it was sent."""
    return {"task_id": str(uuid.uuid4()), "dispatched_at": timezone.now()}


def has_active_runs(thread_pk: int) -> bool:
    return Run.objects.filter(thread=thread_pk, status__in=Run.ACTIVE).exists()


def set_thread_status(thread_pk: int, status: str) -> None:
    Thread.objects.filter(pk=thread_pk).update(status=status, updated_at=timezone.now())


@receiver(post_save, sender=RunEvent, dispatch_uid="durable.engine.records.notify")
def _notify(sender, instance: RunEvent, created: bool, using: str, **kwargs) -> None:
    """An event written through the ORM NOTIFYs ``CHANNEL`` too (on PostgreSQL, delivered
    when the writer's transaction commits)."""
    db = connections[using]
    if created and db.vendor == "postgresql":
        with db.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, str(instance.run_id)])


def _postgresql() -> bool:
    return connections[USING].vendor == "postgresql"


def _commit() -> str:
    """What the first statement of a transaction selects to set how it commits: without
    waiting for its WAL record to reach the disk (``synchronous_commit`` off, for that
    transaction only), unless ``DURABLE_RUN_SYNCHRONOUS_COMMIT``.

    The wait is most of a commit's cost, and nothing a crash can lose is needed
    afterwards: PostgreSQL flushes the record within ``3 * wal_writer_delay``, and any
    later synchronous commit (the run's next checkpoint) flushes it first, as the WAL is
    written in order. A claim lost with the server is the run still pending (sent again
    by the reaper), as if its worker had died before its first checkpoint; a lost outcome
    is the run still running on an expired lease, requeued by the reaper and gone on from
    its last checkpoint, as if its worker had died before recording it. Checkpoints, the
    state that must not be lost, keep synchronous commits."""
    if conf.DURABLE_RUN_SYNCHRONOUS_COMMIT:
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
_TENANT_FIELDS = Tenant._meta.concrete_fields


def _literal(*values: str) -> str:
    """Choices of the models as SQL: one quoted literal, or a parenthesized list of them
    (the values are plain words: no quote to escape)."""
    quoted = [f"'{value}'" for value in values]
    return quoted[0] if len(values) == 1 else f"({', '.join(quoted)})"


# The kinds of run that start from the thread's latest checkpoint, fixed when claimed.
FROM_LATEST = (Run.Kind.START, Run.Kind.RESUME)
ACTIVE = _literal(*Run.ACTIVE)
_RUNNING, _PENDING = _literal(Run.Status.RUNNING), _literal(Run.Status.PENDING)
_ROLLBACK = _literal(Run.Stop.ROLLBACK)

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
# The run's highest seq so far (``RunEvent.objects.highest_seq`` in SQL).
_BASE = f"SELECT COALESCE(MAX(seq), 0) AS seq FROM {_EVENT} WHERE run_id = %(run)s"


def _event_params(run_id: int, events: Sequence[Event]) -> dict:
    return {
        "run": run_id,
        "event": [e.event for e in events],
        "ns": [e.ns for e in events],
        "data": Jsonb("[" + ",".join(e.data for e in events) + "]", dumps=_identity),
        "at": [e.at for e in events],
        "channel": CHANNEL,
        "run_text": str(run_id) + ("" if changes_status(events) else CHUNKS_ONLY),
    }


def changes_status(events: Sequence[Event]) -> bool:
    """Whether ``events`` change the run's status (a lifecycle event among them)."""
    return any(e.event == RunEvent.LIFECYCLE for e in events)


# -- events ------------------------------------------------------------------------------


def insert_events(run: Run, events: Sequence[Event]) -> bool:
    """Write ``events`` as run ``run``'s next ones, if ``run.attempt`` still holds it,
    numbered by the INSERT itself (``durable.models.numbered``). On PostgreSQL one
    statement, on psycopg's server-binding cursor (``durable.db.cursor``: prepared after
    five runs), which also NOTIFYs ``CHANNEL`` for the web processes that follow the run
    (``durable.engine.follow``). Returns whether they were written."""
    if not events:
        return True
    if _postgresql():
        return numbered(_insert_events_postgresql, run, events)
    return numbered(_insert_events_orm, run, events)


_INSERT_HELD = (
    f"WITH held AS (SELECT {{commit}} FROM {_RUN} WHERE id = %(run)s AND attempt = %(attempt)s"
    f" AND status = {_RUNNING}),"
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
        if not held(run).exists():
            return False
        _create_events(run.pk, events)
    return True


def _create_events(run_id: int, events: Sequence[Event]) -> None:
    """Inside a transaction (on SQLite, under its write lock): the events numbered after
    the run's latest, with their own ``created_at`` and their JSON text as it is."""
    latest = RunEvent.objects.highest_seq(run_id)
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
    it starts from (the thread's latest). Under the thread's lock (``lock_thread``): so
    that ``must_wait`` sees what a transaction that held the lock (a run that ended, a
    request that enqueued or cancelled one) did. A run that must wait for an earlier one
    is left pending, its ``dispatched_at`` cleared: its message is used up, and the run
    that blocks it dispatches it again when it ends. So is a delayed run whose
    ``not_before`` has not come (a message early or sent twice): the reaper sends it
    again (``durable.engine.queue.unsent``).

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
# The thread's tenant, which the run's store is scoped by (``graphs.thread_graph``).
_TENANT_OF = (
    f"SELECT {', '.join(_q(f.column) for f in _TENANT_FIELDS)} FROM {Tenant._meta.db_table}"
    f" WHERE id = (SELECT tenant_id FROM {_THREAD}"
    f" WHERE id = (SELECT thread_id FROM {_RUN} WHERE id = %(run)s))"
)
# ``must_wait`` in SQL: an earlier run of the thread is running, or still waits.
_MUST_WAIT = (
    f"EXISTS (SELECT 1 FROM {_RUN} o WHERE o.thread_id = {_RUN}.thread_id"
    f" AND (o.status = {_RUNNING} OR (o.status = {_PENDING} AND o.id < {_RUN}.id)))"
)
_CLAIM = (
    f"UPDATE {_RUN} SET status = {_RUNNING}, attempt = attempt + 1, worker = %(worker)s,"
    " lease_expires_at = %(lease)s, started_at = COALESCE(started_at, %(now)s),"
    " checkpoint_id = CASE WHEN checkpoint_id <> '' THEN checkpoint_id"
    # durable.history.newest_checkpoint_id, inside this one statement.
    f" WHEN kind IN {_literal(*FROM_LATEST)} THEN COALESCE("
    f"(SELECT checkpoint_id FROM {_CHECKPOINT} WHERE thread_id ="
    f" (SELECT thread_id FROM {_THREAD} WHERE id = {_RUN}.thread_id)"
    " AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1), '') ELSE '' END"
    f" WHERE id = %(run)s AND status = {_PENDING} AND NOT {_MUST_WAIT}"
    " AND (not_before IS NULL OR not_before <= %(now)s)"
    f" RETURNING {', '.join(_q(f.column) for f in _RUN_FIELDS)}"
)
_LEAVE_WAITING = (
    f"UPDATE {_RUN} SET dispatched_at = NULL"
    f" WHERE id = %(run)s AND status = {_PENDING}"
    f" AND ({_MUST_WAIT} OR not_before > %(now)s)"
)


def _claim_postgresql(run_id: int, worker: str, now, lease) -> Run | None:
    """One round trip: the thread's lock and the claim, as one transaction, and the
    thread's tenant. A run left pending takes another, to give its message back (again
    under the lock)."""
    params = {"run": run_id, "worker": worker, "now": now, "lease": lease}
    with sql.pipeline(USING) as execute:
        locked = execute(_LOCK_THREAD.format(commit=_commit()), params)
        claimed = execute(_CLAIM, params)
        tenant = execute(_TENANT_OF, params)
    thread_row, run_row, tenant_row = locked.fetchone(), claimed.fetchone(), tenant.fetchone()
    if thread_row is None:
        return None
    if run_row is None:
        with sql.pipeline(USING) as execute:
            execute(_LOCK_THREAD.format(commit=_commit()), params)
            execute(_LEAVE_WAITING, params)
        return None
    run = _instance(Run, _RUN_FIELDS, run_row)
    run.thread = _instance(Thread, _THREAD_FIELDS, thread_row[:-1])
    run.thread.tenant = _instance(Tenant, _TENANT_FIELDS, tenant_row)
    return run


def _instance(model, fields, row):
    values = [sql.from_db(f, v) for f, v in zip(fields, row, strict=True)]
    return model.from_db(USING, [f.attname for f in fields], values)


def _claim_orm(run_id: int, worker: str, now, lease) -> Run | None:
    run = Run.objects.filter(pk=run_id).first()
    if run is None or run.status != Run.Status.PENDING:
        return None
    with transaction.atomic(using=USING):
        thread = lock_thread(run.thread_pk)
        if must_wait(run) or not_due(run, now):
            Run.objects.filter(pk=run_id, status=Run.Status.PENDING).update(dispatched_at=None)
            return None
        head = ""
        if not run.checkpoint_id and run.kind in FROM_LATEST:
            head = newest_checkpoint_id(thread.thread_id) or ""
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
    return Run.objects.select_related("thread__tenant").get(pk=run_id)


# -- the outcome -------------------------------------------------------------------------

ENDED, QUEUED, LOST, STOPPING = "ended", "ended, runs queued", "lost", "stopping"


def finish(
    run: Run, status: str, fields: dict, events: Sequence[Event], *, thread_status: str
) -> str:
    """Record that run ``run`` ended with ``status``: its row (with ``fields``:
    ``interrupts``, ``error_*``), its last ``events`` and, unless another run of the
    thread is active, the thread's ``thread_status`` (``policy.thread_status_after``), in
    one transaction under the thread's lock. Returns ``ENDED``; ``QUEUED`` when it ended
    and another run of the thread is active (the caller dispatches the thread's next run:
    ``queue.dispatch_next``); ``LOST`` when ``run.attempt`` no longer holds the run;
    ``STOPPING`` when a rollback was requested meanwhile (nothing is written then: the
    caller rolls the run back)."""
    if _postgresql():
        return numbered(_finish_postgresql, run, status, fields, events, thread_status)
    return numbered(_finish_orm, run, status, fields, events, thread_status)


def _finish_sql(fields: Sequence[str]) -> str:
    sets = "".join(f", {_q(name)} = %({name})s" for name in fields)
    return (
        f"WITH ended AS (UPDATE {_RUN} SET status = %(status)s, ended_at = %(now)s,"
        f" lease_expires_at = NULL{sets}"
        f" WHERE id = %(run)s AND attempt = %(attempt)s AND status = {_RUNNING}"
        f" AND stop_requested <> {_ROLLBACK} RETURNING id),"
        f" base AS ({_BASE}),"
        f" ins AS ({_INSERT_EVENTS.format(source='ended, base')}),"
        # has_active_runs, then set_thread_status, in SQL
        f" busy AS (SELECT EXISTS (SELECT 1 FROM {_RUN} WHERE thread_id = %(thread)s"
        f" AND status IN {ACTIVE} AND id <> %(run)s) AS busy),"
        f" settled AS (UPDATE {_THREAD} SET status = %(thread_status)s, updated_at = %(now)s"
        f" FROM ended, busy WHERE {_THREAD}.id = %(thread)s AND NOT busy.busy RETURNING 1)"
        " SELECT (SELECT count(*) FROM ended), (SELECT busy FROM busy),"
        f" (SELECT stop_requested FROM {_RUN} WHERE id = %(run)s AND attempt = %(attempt)s"
        f" AND status = {_RUNNING}), (SELECT count(*) FROM ins), (SELECT count(*) FROM settled),"
        " pg_notify(%(channel)s, %(run_text)s)"
    )


def _finish_postgresql(
    run: Run, status: str, fields: dict, events: Sequence[Event], thread_status: str
) -> str:
    """One round trip: the thread's lock, then the statement that ends the run, as one
    transaction."""
    params = _event_params(run.pk, events) | {
        "status": status,
        "now": timezone.now(),
        "attempt": run.attempt,
        "thread": run.thread_pk,
        "thread_status": thread_status,
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
    return QUEUED if busy else ENDED


def _finish_orm(
    run: Run, status: str, fields: dict, events: Sequence[Event], thread_status: str
) -> str:
    with transaction.atomic(using=USING):
        lock_thread(run.thread_pk)
        stop = held(run).values_list("stop_requested", flat=True).first()
        if stop is None:
            return LOST
        if stop == Run.Stop.ROLLBACK:
            return STOPPING
        held(run).update(status=status, ended_at=timezone.now(), lease_expires_at=None, **fields)
        _create_events(run.pk, events)
        # ``policy.settle_thread``'s first half (as ``_finish_sql``'s busy and settled):
        # restated here, because policy imports records and not the other way round; the
        # status was chosen by the caller (``policy.thread_status_after``), so the half
        # that must read the graph's state is not needed.
        if has_active_runs(run.thread_pk):
            return QUEUED
        set_thread_status(run.thread_pk, thread_status)
    return ENDED
