"""``DatabaseCollector``: Prometheus series read from the tables at scrape time.

Each scrape runs a fixed number of aggregate queries (about a dozen), each grouped by a
few labels (``graph``, ``tenant``, ``status``, ``worker``), so the answer's size follows
the number of graphs, tenants and workers, not of runs. Label values: ``graph`` is the
graph's name, ``tenant`` its tenant's slug; checkpoints of a thread id the console does
not know (a graph compiled with ``DjangoSaver`` elsewhere) have both empty.

Cost: the row and byte counts of the checkpoint tables are full scans of those tables
(``LENGTH`` of every blob and write); on a large deployment scrape every 30 to 60 seconds
rather than every 5.

Histogram buckets are fixed (``DURATION_BUCKETS``, ``STEP_BUCKETS``), so their series stay
comparable across scrapes; sums are in seconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import timedelta

from django.db import connection
from django.db.models import (
    Count,
    DurationField,
    Expression,
    ExpressionWrapper,
    F,
    IntegerField,
    Min,
    Q,
    Sum,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeHistogramMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from durable.models import (
    AuditEvent,
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
    Run,
    RunEvent,
    Tenant,
    Thread,
)
from durable.reports import waiting as awaiting

# Seconds: a run's wall time and its wait for a worker, from a tenth of a second to an hour.
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
# Super-steps (saved loop checkpoints) of one run.
STEP_BUCKETS = (1, 2, 3, 5, 10, 25, 50, 100, 250)
# The super-steps histogram covers this many of the latest ended runs.
SUPERSTEP_RUNS = 500
# The actor of the audit events retention writes (``durable.retention.ACTOR``).
RETENTION_ACTOR = "retention"

GRAPH_TENANT = ["graph", "tenant"]
TENANT = "thread__tenant__slug"


class DatabaseCollector:
    """A ``prometheus_client`` collector: ``collect()`` reads the tables and yields the
    metric families; ``describe()`` yields none, so registering it runs no query."""

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        yield from _runs()
        yield from _histograms()
        yield _supersteps()
        yield from _threads()
        yield from _checkpoints()
        yield from _leases()
        yield _requeues()
        yield from _retention()


def _runs() -> Iterator[Metric]:
    requested = CounterMetricFamily(
        "durable_runs_requested", "Runs asked for (every stored run).", labels=GRAPH_TENANT
    )
    started = CounterMetricFamily(
        "durable_runs_started",
        "Runs a worker claimed at least once.",
        labels=GRAPH_TENANT,
    )
    ended = CounterMetricFamily(
        "durable_runs_ended", "Runs ended, by final status.", labels=[*GRAPH_TENANT, "status"]
    )
    active = GaugeMetricFamily(
        "durable_runs_active",
        "Runs pending (waiting for a worker) or running now.",
        labels=[*GRAPH_TENANT, "status"],
    )
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    rows = (
        Run.objects.values("graph", TENANT, "status")
        .annotate(n=Count("pk"), claimed=Count("started_at"))
        .order_by()
    )
    for row in rows:
        key = (row["graph"], row[TENANT])
        totals[key][0] += row["n"]
        totals[key][1] += row["claimed"]
        if row["status"] in Run.FINAL:
            ended.add_metric([*key, row["status"]], row["n"])
        else:
            active.add_metric([*key, row["status"]], row["n"])
    for key, (n, claimed) in sorted(totals.items()):
        requested.add_metric(list(key), n)
        started.add_metric(list(key), claimed)
    return iter((requested, started, ended, active))


def _seconds(start: Expression, end: Expression) -> ExpressionWrapper:
    return ExpressionWrapper(end - start, output_field=DurationField())


def _histograms() -> Iterator[Metric]:
    yield _histogram(
        "durable_run_duration_seconds",
        "Wall time of ended runs, from a worker's first claim to the end.",
        Run.objects.filter(status__in=Run.FINAL, started_at__isnull=False, ended_at__isnull=False),
        F("started_at"),
        F("ended_at"),
    )
    yield _histogram(
        "durable_run_queue_wait_seconds",
        "Wait of claimed runs, from when each was due (its request, or the end of its"
        " requested delay) to a worker's first claim; a queued run's wait for its thread's"
        " earlier runs is included.",
        Run.objects.filter(started_at__isnull=False),
        Run.DUE_AT,
        F("started_at"),
    )


def _histogram(name: str, documentation: str, runs, start: Expression, end: Expression) -> Metric:
    """One cumulative histogram of ``end - start`` over ``runs``, by graph and tenant, in
    one grouped query: a filtered count per bucket, and the sum."""
    family = HistogramMetricFamily(name, documentation, labels=GRAPH_TENANT)
    buckets = {
        f"le{i}": Count("pk", filter=Q(elapsed__lte=timedelta(seconds=bound)))
        for i, bound in enumerate(DURATION_BUCKETS)
    }
    rows = (
        runs.annotate(elapsed=_seconds(start, end))
        .values("graph", TENANT)
        .annotate(n=Count("pk"), total=Sum("elapsed"), **buckets)
        .order_by("graph", TENANT)
    )
    for row in rows:
        counts = [(str(b), row[f"le{i}"]) for i, b in enumerate(DURATION_BUCKETS)]
        counts.append(("+Inf", row["n"]))
        family.add_metric([row["graph"], row[TENANT]], counts, _as_seconds(row["total"]))
    return family


def _as_seconds(value) -> float:
    """A summed duration as seconds: a ``timedelta`` (PostgreSQL), or microseconds where
    the backend returns the raw number."""
    if value is None:
        return 0.0
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value) / 1_000_000


def _supersteps() -> Metric:
    """How many super-steps the latest ended runs took: the loop checkpoints each saved
    in its thread's root namespace (a run with ``durability="exit"`` saves only its
    last)."""
    family = GaugeHistogramMetricFamily(
        "durable_run_supersteps",
        f"Super-steps (saved loop checkpoints) of each of the latest {SUPERSTEP_RUNS} ended runs.",
        labels=GRAPH_TENANT,
    )
    latest = list(
        Run.objects.filter(status__in=Run.FINAL)
        .order_by("-pk")
        .values_list("pk", "graph", TENANT, "thread__thread_id")[:SUPERSTEP_RUNS]
    )
    if not latest:
        return family
    # By thread id (an indexed column), then by run in the grouping: a JSON ``IN`` on
    # SQLite compares the ids as numbers, never equal to the stored text.
    steps = dict(
        Checkpoint.objects.filter(
            thread_id__in={thread_id for *_, thread_id in latest},
            checkpoint_ns="",
            metadata__source="loop",
        )
        .annotate(run=KT("metadata__run_id"))
        .values("run")
        .annotate(n=Count("pk"))
        .order_by()
        .values_list("run", "n")
    )
    per_label: dict[tuple[str, str], list[int]] = defaultdict(list)
    for pk, graph, tenant, _ in latest:
        per_label[(graph, tenant)].append(steps.get(str(pk), 0))
    for key, counts in sorted(per_label.items()):
        buckets = [(str(b), sum(c <= b for c in counts)) for b in STEP_BUCKETS]
        buckets.append(("+Inf", len(counts)))
        family.add_metric(list(key), buckets, sum(counts))
    return family


def _threads() -> Iterator[Metric]:
    threads = GaugeMetricFamily(
        "durable_threads", "Threads stored, by status.", labels=[*GRAPH_TENANT, "status"]
    )
    waiting = GaugeMetricFamily(
        "durable_interrupts_waiting",
        "Threads stopped at an interrupt, waiting for an answer.",
        labels=GRAPH_TENANT,
    )
    oldest = GaugeMetricFamily(
        "durable_interrupt_oldest_age_seconds",
        "Seconds since the longest-waiting interrupted thread last changed.",
        labels=GRAPH_TENANT,
    )
    now = timezone.now()
    rows = (
        Thread.objects.values("graph", "tenant__slug", "status")
        .annotate(n=Count("pk"), since=Min("updated_at"))
        .order_by("graph", "tenant__slug", "status")
    )
    for row in rows:
        threads.add_metric([row["graph"], row["tenant__slug"], row["status"]], row["n"])
    # Waiting for an answer as the inbox counts it: an interrupted thread with nothing
    # pending at its latest checkpoint (a fork written without a run) waits for no one.
    rows = (
        awaiting.awaiting_answer(Thread.objects.all())
        .values("graph", "tenant__slug")
        .annotate(n=Count("pk"), since=Min("updated_at"))
        .order_by("graph", "tenant__slug")
    )
    for row in rows:
        key = [row["graph"], row["tenant__slug"]]
        waiting.add_metric(key, row["n"])
        oldest.add_metric(key, max(0.0, (now - row["since"]).total_seconds()))
    return iter((threads, waiting, oldest))


def _checkpoints() -> Iterator[Metric]:
    """Checkpoints, blobs and writes stored, and the bytes of the blobs and writes, by the
    graph and tenant of their thread: one grouped join per table."""
    checkpoints = GaugeMetricFamily(
        "durable_checkpoints", "Checkpoints stored (every namespace).", labels=GRAPH_TENANT
    )
    blobs = GaugeMetricFamily(
        "durable_checkpoint_blobs", "Channel value blobs stored.", labels=GRAPH_TENANT
    )
    blob_bytes = GaugeMetricFamily(
        "durable_checkpoint_blob_bytes",
        "Bytes of the channel value blobs stored (serialized, as written).",
        labels=GRAPH_TENANT,
    )
    writes = GaugeMetricFamily(
        "durable_checkpoint_writes", "Pending writes stored.", labels=GRAPH_TENANT
    )
    write_bytes = GaugeMetricFamily(
        "durable_checkpoint_write_bytes",
        "Bytes of the pending writes stored (serialized, as written).",
        labels=GRAPH_TENANT,
    )
    for key, n, _ in _by_thread(Checkpoint._meta.db_table, None):
        checkpoints.add_metric(key, n)
    for key, n, size in _by_thread(CheckpointBlob._meta.db_table, "blob"):
        blobs.add_metric(key, n)
        blob_bytes.add_metric(key, size)
    for key, n, size in _by_thread(CheckpointWrite._meta.db_table, "blob"):
        writes.add_metric(key, n)
        write_bytes.add_metric(key, size)
    return iter((checkpoints, blobs, blob_bytes, writes, write_bytes))


def _by_thread(table: str, blob: str | None) -> Iterable[tuple[list[str], int, int]]:
    """``([graph, tenant], rows, bytes)`` of ``table`` grouped by its thread's graph and
    tenant (``bytes`` is 0 without a ``blob`` column). Plain SQL: the checkpoint tables
    hold thread ids, not foreign keys, so the ORM cannot join them to ``Thread``."""
    q = connection.ops.quote_name
    size = f"COALESCE(SUM(LENGTH(c.{q(blob)})), 0)" if blob else "0"
    sql = (
        f"SELECT COALESCE(t.{q('graph')}, ''), COALESCE(n.{q('slug')}, ''), COUNT(*), {size}"
        f" FROM {q(table)} c"
        f" LEFT JOIN {q(Thread._meta.db_table)} t ON t.{q('thread_id')} = c.{q('thread_id')}"
        f" LEFT JOIN {q(Tenant._meta.db_table)} n ON n.{q('id')} = t.{q('tenant_id')}"
        " GROUP BY 1, 2 ORDER BY 1, 2"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        for graph, tenant, n, total in cursor.fetchall():
            yield [graph, tenant], int(n), int(total or 0)


def _leases() -> Iterator[Metric]:
    held = GaugeMetricFamily(
        "durable_worker_leases", "Runs each worker holds a live lease on.", labels=["worker"]
    )
    expired = GaugeMetricFamily(
        "durable_leases_expired",
        "Running runs whose lease expired: their worker is gone, the reaper requeues them.",
    )
    now = timezone.now()
    running = Run.objects.filter(status=Run.Status.RUNNING)
    rows = (
        running.filter(lease_expires_at__gte=now)
        .values("worker")
        .annotate(n=Count("pk"))
        .order_by("worker")
    )
    for row in rows:
        held.add_metric([row["worker"]], row["n"])
    expired.add_metric([], running.filter(lease_expires_at__lt=now).count())
    return iter((held, expired))


def _requeues() -> Metric:
    """Runs sent back to pending after a claim: the reaper's recoveries of runs whose
    worker stopped renewing its lease, and a stopping worker's hand-backs (both write a
    ``pending`` lifecycle event after the run's first)."""
    family = CounterMetricFamily(
        "durable_runs_requeued",
        "Times a claimed run went back to pending for another worker (reaper recoveries"
        " and shutdown hand-backs).",
        labels=GRAPH_TENANT,
    )
    rows = (
        RunEvent.objects.filter(event=RunEvent.LIFECYCLE, seq__gt=1, data__status="pending")
        .values("run__graph", "run__thread__tenant__slug")
        .annotate(n=Count("pk"))
        .order_by("run__graph", "run__thread__tenant__slug")
    )
    for row in rows:
        family.add_metric([row["run__graph"], row["run__thread__tenant__slug"]], row["n"])
    return family


def _retention() -> Iterator[Metric]:
    """What retention removed, from the audit events it writes per thread."""
    threads = CounterMetricFamily(
        "durable_retention_threads",
        "Threads retention pruned or deleted.",
        labels=["tenant", "action"],
    )
    removed = CounterMetricFamily(
        "durable_retention_removed",
        "Rows retention removed, by kind (checkpoints, blobs, writes).",
        labels=["tenant", "kind"],
    )
    kinds = ("checkpoints", "blobs", "writes")
    sums = {
        kind: Sum(Cast(KT(f"detail__removed__{kind}"), output_field=IntegerField()))
        for kind in kinds
    }
    rows = (
        AuditEvent.objects.filter(
            actor=RETENTION_ACTOR,
            action__in=(AuditEvent.Action.PRUNE, AuditEvent.Action.DELETE),
        )
        .values("tenant__slug", "action")
        .annotate(n=Count("pk"), **sums)
        .order_by("tenant__slug", "action")
    )
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        tenant = row["tenant__slug"] or ""
        threads.add_metric([tenant, row["action"]], row["n"])
        for kind in kinds:
            totals[(tenant, kind)] += row[kind] or 0
    for (tenant, kind), n in sorted(totals.items()):
        removed.add_metric([tenant, kind], n)
    return iter((threads, removed))
