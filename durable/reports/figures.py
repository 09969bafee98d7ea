"""What the Operations page counts: runs per time bucket by status, run duration and
queue wait (p50, p95), interrupts waiting and their age, the largest threads, recent
recoveries and errors by node, over the last hour, day or week.

Every function reads through the querysets it is given (a tenant's threads and runs, or
every tenant's for an auditor), with bounded aggregate queries: counts grouped in SQL,
at most ``SAMPLE`` rows read for the percentiles, at most ``CANDIDATES`` threads summed
for the largest. One rule says which runs a window holds (``runs_created``): those
created in it, so the counts of the page and the threads its links open
(``threads_with_runs``) are the same runs.

Times are aware datetimes in UTC; durations are seconds (floats).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db.models import Count, Min, Q, QuerySet, Sum
from django.db.models.functions import Length, Trunc

from durable.models import Checkpoint, CheckpointBlob, CheckpointWrite, Run, Thread

# Relative: this module and the waiting set's move together.
from .waiting import awaiting_answer

# Rows read at most for the percentiles of a window (the newest runs of it).
SAMPLE = 2000
# Threads summed at most for the largest (the most recently updated of the window).
CANDIDATES = 500
TOP = 10
RECENT = 20
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Window:
    """A span of time ending now, cut into buckets of ``step``; SQL truncates run times
    to ``trunc`` (a divisor of ``step``), Python folds those into buckets."""

    name: str
    span: timedelta
    step: timedelta
    trunc: str
    label: str  # "per minute"

    def bounds(self, now: datetime) -> tuple[datetime, datetime]:
        """``(start, end)``: ``end`` is the end of the bucket holding ``now``."""
        end = _floor(now, self.step) + self.step
        return end - self.span, end

    @property
    def buckets(self) -> int:
        return int(self.span / self.step)

    def starts(self, now: datetime) -> list[datetime]:
        """The start of each bucket, oldest first."""
        start, _ = self.bounds(now)
        return [start + i * self.step for i in range(self.buckets)]


WINDOWS = {
    "hour": Window("hour", timedelta(hours=1), timedelta(minutes=1), "minute", "per minute"),
    "day": Window("day", timedelta(days=1), timedelta(hours=1), "hour", "per hour"),
    "week": Window("week", timedelta(weeks=1), timedelta(hours=6), "hour", "per 6 hours"),
}


def _floor(moment: datetime, step: timedelta) -> datetime:
    return moment - (moment - EPOCH) % step


def runs_created(runs: QuerySet[Run], start: datetime, end: datetime) -> QuerySet[Run]:
    """The runs a window ``[start, end)`` holds: those created in it."""
    return runs.filter(created_at__gte=start, created_at__lt=end)


def threads_with_runs(
    threads: QuerySet[Thread],
    *,
    status: str = "",
    error_node: str = "",
    after: datetime | None = None,
    before: datetime | None = None,
) -> QuerySet[Thread]:
    """The ``threads`` with at least one run that matches every condition given: its
    status, the node it failed in, created at or after ``after`` and before ``before``."""
    runs = Run.objects.all()
    if status:
        runs = runs.filter(status=status)
    if error_node:
        runs = runs.filter(error_node=error_node)
    if after is not None:
        runs = runs.filter(created_at__gte=after)
    if before is not None:
        runs = runs.filter(created_at__lt=before)
    return threads.filter(pk__in=runs.values("thread"))


# -- runs per bucket ---------------------------------------------------------------------


@dataclass
class Bucket:
    start: datetime
    end: datetime
    counts: dict[str, int] = field(default_factory=dict)  # run status -> runs

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def runs_per_bucket(runs: QuerySet[Run], window: Window, now: datetime) -> list[Bucket]:
    """One ``Bucket`` per ``window.step`` of the window, oldest first, with the runs
    created in it by status: one grouped query."""
    start, end = window.bounds(now)
    buckets = [Bucket(s, s + window.step) for s in window.starts(now)]
    rows = (
        runs_created(runs, start, end)
        .annotate(at=Trunc("created_at", window.trunc, tzinfo=UTC))
        .values("at", "status")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for row in rows:
        index = int((row["at"] - start) / window.step)
        if 0 <= index < len(buckets):
            counts = buckets[index].counts
            counts[row["status"]] = counts.get(row["status"], 0) + row["n"]
    return buckets


# -- durations ---------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank ``q`` percentile (0 < q <= 1) of ``values``; ``None`` for none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)), 1) - 1]


@dataclass
class Timing:
    """Percentiles of one graph (``graph`` ``""``: every graph), in seconds."""

    graph: str
    runs: int = 0
    duration_p50: float | None = None
    duration_p95: float | None = None
    waits: int = 0
    wait_p50: float | None = None
    wait_p95: float | None = None


def timings(runs: QuerySet[Run], window: Window, now: datetime) -> list[Timing]:
    """Run duration (``ended_at - started_at``, runs that ended) and queue wait
    (``started_at`` less ``Run.DUE_AT``, runs that started) of the window's runs, newest
    ``SAMPLE`` of each: every graph first, then one ``Timing`` per graph by name."""
    start, end = window.bounds(now)
    held = runs_created(runs, start, end).filter(started_at__isnull=False).order_by("-created_at")
    ran = held.filter(ended_at__isnull=False).values_list("graph", "started_at", "ended_at")
    waited = held.annotate(due=Run.DUE_AT).values_list("graph", "started_at", "due")
    durations: dict[str, list[float]] = defaultdict(list)
    for graph, started, ended in ran[:SAMPLE]:
        seconds = (ended - started).total_seconds()
        durations[""].append(seconds)
        durations[graph].append(seconds)
    waits: dict[str, list[float]] = defaultdict(list)
    for graph, started, due in waited[:SAMPLE]:
        seconds = max((started - due).total_seconds(), 0.0)
        waits[""].append(seconds)
        waits[graph].append(seconds)
    graphs = sorted(set(durations) | set(waits) | {""})
    return [
        Timing(
            graph,
            len(durations[graph]),
            percentile(durations[graph], 0.5),
            percentile(durations[graph], 0.95),
            len(waits[graph]),
            percentile(waits[graph], 0.5),
            percentile(waits[graph], 0.95),
        )
        for graph in graphs
    ]


@dataclass
class BucketTiming:
    """Run duration in one bucket: its runs that ended, p50 and p95 in seconds."""

    start: datetime
    end: datetime
    runs: int
    p50: float
    p95: float


def durations_per_bucket(runs: QuerySet[Run], window: Window, now: datetime) -> list[BucketTiming]:
    """The run duration of each bucket that holds an ended run, oldest first, over the
    newest ``SAMPLE`` ended runs of the window."""
    start, end = window.bounds(now)
    ran = (
        runs_created(runs, start, end)
        .filter(started_at__isnull=False, ended_at__isnull=False)
        .order_by("-created_at")
        .values_list("created_at", "started_at", "ended_at")
    )
    by_bucket: dict[int, list[float]] = defaultdict(list)
    for created, started, ended in ran[:SAMPLE]:
        by_bucket[int((created - start) / window.step)].append((ended - started).total_seconds())
    return [
        BucketTiming(
            start + i * window.step,
            start + (i + 1) * window.step,
            len(values),
            percentile(values, 0.5),
            percentile(values, 0.95),
        )
        for i, values in sorted(by_bucket.items())
    ]


# -- interrupts waiting ------------------------------------------------------------------

AGE_BANDS = (
    ("under 5 minutes", timedelta(0), timedelta(minutes=5)),
    ("5 minutes to 1 hour", timedelta(minutes=5), timedelta(hours=1)),
    ("1 hour to 1 day", timedelta(hours=1), timedelta(days=1)),
    ("over 1 day", timedelta(days=1), None),
)


@dataclass
class AgeBand:
    """Threads waiting whose last update is in ``[after, before)`` (``after`` ``None``:
    no lower bound)."""

    label: str
    after: datetime | None
    before: datetime
    threads: int


@dataclass
class Waiting:
    threads: int
    oldest: datetime | None
    bands: list[AgeBand]


def interrupts_waiting(threads: QuerySet[Thread], now: datetime) -> Waiting:
    """The threads waiting for an answer (``waiting.awaiting_answer``, the inbox's
    rule) by how long ago they stopped (``updated_at``), in ``AGE_BANDS``: one
    aggregate query. The bounds are whole seconds, so that a link naming them finds the
    same threads."""
    now = now.replace(microsecond=0)
    waiting = awaiting_answer(threads)
    bounds = [(label, now - hi if hi else None, now - lo) for label, lo, hi in AGE_BANDS]
    counts = {
        f"b{i}": Count("pk", filter=_between(after, before))
        for i, (_, after, before) in enumerate(bounds)
    }
    row = waiting.aggregate(total=Count("pk"), oldest=Min("updated_at"), **counts)
    bands = [
        AgeBand(label, after, before, row[f"b{i}"])
        for i, (label, after, before) in enumerate(bounds)
    ]
    return Waiting(row["total"], row["oldest"], bands)


def _between(after: datetime | None, before: datetime) -> Q:
    q = Q(updated_at__lt=before)
    return q & Q(updated_at__gte=after) if after else q


# -- the largest threads -----------------------------------------------------------------


@dataclass
class Size:
    thread: Thread
    bytes: int = 0
    checkpoints: int = 0


def largest_threads(threads: QuerySet[Thread], window: Window, now: datetime) -> dict:
    """``{"bytes": [Size], "checkpoints": [Size]}``, ``TOP`` each, largest first: the
    stored bytes of every checkpoint, blob and pending write of a thread (every
    namespace), and its checkpoints, among the ``CANDIDATES`` threads updated most
    recently in the window."""
    start, _ = window.bounds(now)
    candidates = {
        t.thread_id: t
        for t in threads.filter(updated_at__gte=start)
        .select_related("tenant")
        .order_by("-updated_at")[:CANDIDATES]
    }
    ids = list(candidates)
    sizes = {tid: Size(t) for tid, t in candidates.items()}
    for model, column in (
        (Checkpoint, "checkpoint"),
        (CheckpointBlob, "blob"),
        (CheckpointWrite, "blob"),
    ):
        rows = (
            model.objects.filter(thread_id__in=ids)
            .values("thread_id")
            .annotate(n=Sum(Length(column)))
            .values_list("thread_id", "n")
        )
        for tid, n in rows:
            sizes[tid].bytes += n or 0
    counted = (
        Checkpoint.objects.filter(thread_id__in=ids)
        .values("thread_id")
        .annotate(n=Count("pk"))
        .values_list("thread_id", "n")
    )
    for tid, n in counted:
        sizes[tid].checkpoints = n
    by_bytes = sorted(
        (s for s in sizes.values() if s.bytes), key=lambda s: (-s.bytes, s.thread.name)
    )
    by_count = sorted(
        (s for s in sizes.values() if s.checkpoints), key=lambda s: (-s.checkpoints, s.thread.name)
    )
    return {"bytes": by_bytes[:TOP], "checkpoints": by_count[:TOP]}


# -- recoveries and errors ---------------------------------------------------------------


def recent_recoveries(runs: QuerySet[Run], window: Window, now: datetime) -> tuple[int, list[Run]]:
    """``(count, newest RECENT)`` of the window's runs that a worker claimed more than
    once (``attempt > 1``: re-enqueued after a lost worker, a shutdown or a database
    fault, ``durable.engine.recovery``)."""
    start, end = window.bounds(now)
    recovered = runs_created(runs, start, end).filter(attempt__gt=1)
    newest = list(
        recovered.select_related("thread__tenant").order_by("-created_at", "-pk")[:RECENT]
    )
    return recovered.count(), newest


@dataclass
class NodeErrors:
    graph: str
    node: str
    runs: int


def errors_by_node(runs: QuerySet[Run], window: Window, now: datetime) -> list[NodeErrors]:
    """The window's failed runs grouped by graph and the node they failed in (``""``: no
    node known), most first, at most ``RECENT`` groups."""
    start, end = window.bounds(now)
    rows = (
        runs_created(runs, start, end)
        .filter(status=Run.Status.ERROR)
        .values("graph", "error_node")
        .annotate(n=Count("pk"))
        .order_by("-n", "graph", "error_node")[:RECENT]
    )
    return [NodeErrors(r["graph"], r["error_node"], r["n"]) for r in rows]
