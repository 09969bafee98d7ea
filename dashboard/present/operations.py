"""The Operations page drawn: server-rendered SVG charts (stacked bars of runs per
bucket by status, horizontal bars for the rest), each bar a link to the threads list
filtered to the threads it counts, each chart's numbers also a table.

Geometry is in SVG user units (``viewBox``); the template only places what is computed
here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.urls import reverse

from dashboard.present.links import query_params
from durable.models import Run, Thread
from durable.reports import figures as stats

WIDTH, HEIGHT = 720, 180  # the plot area of the runs chart
LEFT, BOTTOM = 36, 22  # room for the axis labels
BAR_WIDTH = 420  # the longest horizontal bar
# The order bars stack in, bottom first: outcomes, then what is still going on.
STATUSES = [
    Run.Status.SUCCESS,
    Run.Status.ERROR,
    Run.Status.INTERRUPTED,
    Run.Status.CANCELLED,
    Run.Status.TIMEOUT,
    Run.Status.RUNNING,
    Run.Status.PENDING,
]


def at(moment: datetime) -> str:
    """A time as the threads list's filters read it: ISO 8601, whole seconds, UTC."""
    return moment.astimezone(stats.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def label(moment: datetime, window: stats.Window) -> str:
    moment = moment.astimezone(stats.UTC)
    return moment.strftime("%H:%M") if window.name == "hour" else moment.strftime("%b %d %H:%M")


def threads_url(**params) -> str:
    return reverse("threads") + query_params(**params)


def runs_url(start: datetime, end: datetime, **params) -> str:
    """The threads list of the threads with a run created in ``[start, end)`` (and
    matching ``params``: ``run_status``, ``run_error_node``, ``graph``)."""
    return threads_url(**params, run_after=at(start), run_before=at(end))


@dataclass
class Segment:
    status: str
    count: int
    x: float
    y: float
    width: float
    height: float
    href: str
    title: str


@dataclass
class Column:
    bucket: stats.Bucket
    label: str
    segments: list[Segment]
    cells: list[tuple[int, str]]  # (runs, href) per status of ``STATUSES``
    href: str  # every run of the bucket


def runs_chart(buckets: list[stats.Bucket], window: stats.Window) -> dict:
    """The stacked bars of ``buckets``: ``columns`` (every bucket, its segments and its
    table cells), ``ticks`` (x labels), ``top`` (the y axis' highest value)."""
    top = max([b.total for b in buckets] + [1])
    step = WIDTH / max(len(buckets), 1)
    columns = []
    for i, bucket in enumerate(buckets):
        y = HEIGHT
        segments = []
        when = f"{label(bucket.start, window)}–{label(bucket.end, window)} UTC"
        for status in STATUSES:
            n = bucket.counts.get(status, 0)
            if not n:
                continue
            height = HEIGHT * n / top
            y -= height
            segments.append(
                Segment(
                    status,
                    n,
                    LEFT + i * step + step * 0.1,
                    y,
                    step * 0.8,
                    height,
                    runs_url(bucket.start, bucket.end, run_status=status),
                    f"{n} {status} run{'s' if n != 1 else ''}, created {when}",
                )
            )
        cells = [
            (
                bucket.counts.get(s, 0),
                runs_url(bucket.start, bucket.end, run_status=s),
            )
            for s in STATUSES
        ]
        columns.append(
            Column(
                bucket,
                label(bucket.start, window),
                segments,
                cells,
                runs_url(bucket.start, bucket.end),
            )
        )
    every = max(len(buckets) // 6, 1)
    ticks = [
        (LEFT + i * step, label(b.start, window)) for i, b in enumerate(buckets) if i % every == 0
    ]
    return {
        "columns": columns,
        "rows": [c for c in columns if c.bucket.total],
        "ticks": ticks,
        "top": top,
        "width": LEFT + WIDTH,
        "height": HEIGHT + BOTTOM,
        "plot_height": HEIGHT,
        "left": LEFT,
        "statuses": STATUSES,
        "totals": [sum(b.counts.get(s, 0) for b in buckets) for s in STATUSES],
        "total": sum(b.total for b in buckets),
    }


@dataclass
class Point:
    """One bucket's p50 and p95 run duration, drawn as two dots joined by a line."""

    timing: stats.BucketTiming
    label: str
    x: float
    y50: float
    y95: float
    p50: str
    p95: str
    href: str
    title: str


def duration_chart(timings: list[stats.BucketTiming], window: stats.Window, now) -> dict:
    """The p50 and p95 duration of each bucket with ended runs, placed as the runs
    chart places its buckets: ``points``, ``top`` (seconds, the y axis' highest)."""
    start, _ = window.bounds(now)
    step = WIDTH / window.buckets
    top = max([t.p95 for t in timings] + [1.0])
    points = []
    for t in timings:
        index = int((t.start - start) / window.step)
        when = f"{label(t.start, window)}–{label(t.end, window)} UTC"
        points.append(
            Point(
                t,
                label(t.start, window),
                LEFT + index * step + step / 2,
                HEIGHT - HEIGHT * t.p50 / top,
                HEIGHT - HEIGHT * t.p95 / top,
                seconds_text(t.p50),
                seconds_text(t.p95),
                runs_url(t.start, t.end),
                f"{t.runs} run{'s' if t.runs != 1 else ''} created {when}: "
                f"p50 {seconds_text(t.p50)}, p95 {seconds_text(t.p95)}",
            )
        )
    return {
        "points": points,
        "top": seconds_text(top),
        "width": LEFT + WIDTH,
        "height": HEIGHT + BOTTOM,
        "plot_height": HEIGHT,
        "left": LEFT,
    }


@dataclass
class Bar:
    label: str
    value: int
    shown: str  # the value in words (bytes with a unit)
    href: str
    title: str
    y: float = 0
    width: float = 0


def bars(items: list[Bar]) -> dict:
    """Horizontal bars of ``items``, scaled to the largest: ``bars``, ``height``."""
    top = max([b.value for b in items] + [1])
    for i, bar in enumerate(items):
        bar.y = i * 24
        bar.width = max(BAR_WIDTH * bar.value / top, 1 if bar.value else 0)
    return {"bars": items, "height": max(len(items) * 24, 24), "width": 180 + BAR_WIDTH + 90}


def size_text(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def waiting_chart(waiting: stats.Waiting) -> dict:
    items = [
        Bar(
            band.label,
            band.threads,
            str(band.threads),
            threads_url(
                waiting="on",
                updated_after=at(band.after) if band.after else "",
                updated_before=at(band.before),
            ),
            f"{band.threads} thread{'s' if band.threads != 1 else ''} waiting {band.label}",
        )
        for band in waiting.bands
    ]
    return bars(items)


def thread_name(thread: Thread, every_tenant: bool) -> str:
    """A thread's name, after its tenant's slug when the page counts every tenant."""
    return f"{thread.tenant.slug}/{thread.name}" if every_tenant else thread.name


def size_charts(largest: dict, every_tenant: bool = False) -> dict:
    def thread_url(size: stats.Size) -> str:
        return reverse("thread", args=[size.thread.pk])

    def name(size: stats.Size) -> str:
        return thread_name(size.thread, every_tenant)

    by_bytes = [
        Bar(
            name(s),
            s.bytes,
            size_text(s.bytes),
            thread_url(s),
            f"{name(s)}: {s.bytes} bytes stored",
        )
        for s in largest["bytes"]
    ]
    by_count = [
        Bar(
            name(s),
            s.checkpoints,
            str(s.checkpoints),
            thread_url(s),
            f"{name(s)}: {s.checkpoints} checkpoints",
        )
        for s in largest["checkpoints"]
    ]
    return {"bytes": bars(by_bytes), "checkpoints": bars(by_count)}


def errors_chart(errors: list[stats.NodeErrors], start: datetime, end: datetime) -> dict:
    items = [
        Bar(
            f"{e.graph} · {e.node or '(no node)'}",
            e.runs,
            str(e.runs),
            runs_url(start, end, run_status=Run.Status.ERROR, graph=e.graph, run_error_node=e.node),
            f"{e.runs} run{'s' if e.runs != 1 else ''} of {e.graph} failed in "
            + (f"node {e.node}" if e.node else "no known node"),
        )
        for e in errors
    ]
    return bars(items)


def seconds_text(value: float | None) -> str:
    if value is None:
        return "–"
    if value < 60:
        return f"{value:.1f} s"
    if value < 3600:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


def timing_rows(timings: list[stats.Timing], start: datetime, end: datetime) -> list[dict]:
    return [
        {
            "graph": t.graph or "every graph",
            "href": runs_url(start, end, graph=t.graph),
            "runs": t.runs,
            "duration_p50": seconds_text(t.duration_p50),
            "duration_p95": seconds_text(t.duration_p95),
            "waits": t.waits,
            "wait_p50": seconds_text(t.wait_p50),
            "wait_p95": seconds_text(t.wait_p95),
        }
        for t in timings
    ]


def operations_context(
    threads, window: stats.Window, now: datetime, every_tenant: bool = False
) -> dict:
    """Everything the page shows for ``threads`` (a scoped queryset) over ``window``;
    thread names after their tenant's slug when ``every_tenant``."""
    runs = Run.objects.filter(thread__in=threads)
    start, end = window.bounds(now)
    waiting = stats.interrupts_waiting(threads, now)
    recovered, recoveries = stats.recent_recoveries(runs, window, now)
    return {
        "window": window,
        "start": start,
        "end": end,
        "runs_chart": runs_chart(stats.runs_per_bucket(runs, window, now), window),
        "timings": timing_rows(stats.timings(runs, window, now), start, end),
        "duration_chart": duration_chart(
            stats.durations_per_bucket(runs, window, now), window, now
        ),
        "waiting": waiting,
        "waiting_chart": waiting_chart(waiting),
        "sizes": size_charts(stats.largest_threads(threads, window, now), every_tenant),
        "recovered": recovered,
        "recoveries": [(run, thread_name(run.thread, every_tenant)) for run in recoveries],
        "errors_chart": errors_chart(stats.errors_by_node(runs, window, now), start, end),
        "sample": stats.SAMPLE,
        "candidates": stats.CANDIDATES,
    }
