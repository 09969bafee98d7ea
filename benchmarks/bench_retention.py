"""A retention sweep on PostgreSQL, and the console beside it.

    .venv/bin/python benchmarks/bench_retention.py [--threads 1000] [--checkpoints 200]
        [--rounds 30] [--batch-size 100] [--url postgres://...]

Fills its own database (default
``postgres://postgres@127.0.0.1:5432/durable_retention_bench``, created if missing) with
``--threads`` threads of one tenant, each ``--checkpoints`` checkpoints long (a
``messages`` blob and two writes per checkpoint, encoded by the saver's serde as
``DjangoSaver.put`` and ``put_writes`` would store them), last updated 60 days ago, and a
``keep_latest`` policy of 30 days; plus one thread of ``--checkpoints`` checkpoints
updated now, which the policy leaves alone and whose console page is measured. The rows
go in with ``COPY``; every run fills them again (the sweep prunes them).

The sweep is ``durable.retention.apply()`` in a separate process, as a Celery worker
runs it. Meanwhile this process requests that thread's page (Django's test client,
``DJANGO_DEBUG=0``) in turns: ``--rounds`` requests while the sweep runs, then
``--rounds`` while it is paused (``SIGSTOP``, then ``SIGCONT``), and so on until it
ends. The paused requests are the idle baseline: on a shared machine both kinds meet the
same background load, which a baseline taken before the sweep does not (it is printed
too).

Prints checkpoints removed per second of the sweep's running time (target: at least
5,000/s) and the page's median server time while the sweep runs over its median while
the sweep is paused (target: at most 2x).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_saver import ensure_database, setup_django  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/durable_retention_bench"
TENANT = "bench"
PAGE_THREAD = "bench-page"
USER = "bench-admin"


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument("--checkpoints", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5, help="requests per turn")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--sweep", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


# -- filling ------------------------------------------------------------------------------


def version(n: int) -> str:
    """A channel version as ``DjangoSaver.get_next_version`` makes them."""
    return f"{n:032}.{random.random():016}"


def fill(threads: int, checkpoints: int) -> None:
    """Empty the tables, then write the tenant, its policy, the old threads and the page's
    thread, with ``COPY``."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.base.id import uuid6

    from durable.models import (
        AuditEvent,
        Checkpoint,
        CheckpointBlob,
        CheckpointWrite,
        Membership,
        RetentionPolicy,
        Role,
        Run,
        Tenant,
        Thread,
    )
    from durable.persistence.checkpoint import DjangoSaver

    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        tables = [
            m._meta.db_table
            for m in (Checkpoint, CheckpointBlob, CheckpointWrite, Run, Thread, RetentionPolicy)
        ]
        cursor.execute(f"TRUNCATE {', '.join(quote(t) for t in tables)} CASCADE")
    # The audit trail is append-only (a trigger refuses UPDATE; rows are never deleted):
    # the sweep's events stay, in their own tenant.
    tenant, _ = Tenant.objects.get_or_create(slug=TENANT, defaults={"name": "Bench"})
    user = get_user_model().objects.filter(username=USER).first()
    if user is None:
        user = get_user_model().objects.create_user(USER, password="bench-only")
        Membership.objects.create(user=user, tenant=tenant, role=Role.ADMIN)
    RetentionPolicy.objects.create(tenant=tenant, max_age=_days(30), strategy="keep_latest")
    print(f"audit events kept from earlier runs: {AuditEvent.objects.count()}", file=sys.stderr)

    serde = DjangoSaver().serde
    messages = [
        HumanMessage("Where is my order 4417?", id="m1"),
        AIMessage("It left the warehouse yesterday; " + "lorem ipsum " * 60, id="m2"),
    ]
    blob_type, blob = serde.dumps_typed(messages)
    write_type, write_blob = serde.dumps_typed([AIMessage("ok " * 40, id="m3")])
    route_type, route_blob = serde.dumps_typed(None)

    thread_rows, checkpoint_rows, blob_rows, write_rows = [], [], [], []
    thread_ids = [str(uuid.uuid4()) for _ in range(threads)]
    updated = timezone.now() - _days(60)
    for thread_id in thread_ids:
        thread_rows.append(
            (tenant.pk, thread_id, thread_id, "chat", "idle", "{}", updated, updated)
        )
        parent = None
        for step in range(checkpoints):
            checkpoint_id = str(uuid6(clock_seq=step))
            v = version(step + 1)
            payload = {
                "v": 4,
                "id": checkpoint_id,
                "ts": "2026-10-01T00:00:00+00:00",
                "channel_values": {"step": step},
                "versions_seen": {"agent": {"messages": v}},
                "updated_channels": ["messages", "step"],
            }
            type_, data = serde.dumps_typed(payload)
            versions = {"messages": v, "step": v}
            metadata = {"source": "loop", "step": step, "parents": {}, "run_id": thread_id}
            checkpoint_rows.append(
                (
                    thread_id,
                    "",
                    checkpoint_id,
                    parent,
                    type_,
                    data,
                    json.dumps(versions),
                    json.dumps(metadata, sort_keys=True),
                )
            )
            blob_rows.append((thread_id, "", "messages", v, blob_type, blob))
            task = str(uuid.uuid4())
            write_rows.append(
                (thread_id, "", checkpoint_id, task, 0, "~__pregel_pull, agent", "messages")
                + (write_type, write_blob)
            )
            write_rows.append(
                (thread_id, "", checkpoint_id, task, 1, "~__pregel_pull, agent", "branch:agent")
                + (route_type, route_blob)
            )
            parent = checkpoint_id
    _copy(
        Thread,
        [
            "tenant_id",
            "thread_id",
            "name",
            "graph",
            "status",
            "metadata",
            "created_at",
            "updated_at",
        ],
        thread_rows,
    )
    _copy(
        Checkpoint,
        [
            "thread_id",
            "checkpoint_ns",
            "checkpoint_id",
            "parent_checkpoint_id",
            "type",
            "checkpoint",
            "channel_versions",
            "metadata",
        ],
        checkpoint_rows,
    )
    _copy(
        CheckpointBlob,
        ["thread_id", "checkpoint_ns", "channel", "version", "type", "blob"],
        blob_rows,
    )
    _copy(
        CheckpointWrite,
        [
            "thread_id",
            "checkpoint_ns",
            "checkpoint_id",
            "task_id",
            "idx",
            "task_path",
            "channel",
            "type",
            "blob",
        ],
        write_rows,
    )
    fill_page_thread(tenant, checkpoints)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def fill_page_thread(tenant, checkpoints: int):
    """The thread whose page is measured: ``expense_approval`` checkpoints (as
    ``bench_console.py`` writes them), updated now, so retention leaves it alone."""
    from langgraph.checkpoint.base.id import uuid6

    from durable.models import Checkpoint, Thread
    from durable.persistence.checkpoint import DjangoSaver

    thread = Thread.objects.create(
        tenant=tenant, thread_id=PAGE_THREAD, name=PAGE_THREAD, graph="expense_approval"
    )
    serde = DjangoSaver().serde
    rows, parent = [], None
    for step in range(checkpoints):
        checkpoint_id = str(uuid6(clock_seq=step))
        payload = {
            "v": 4,
            "id": checkpoint_id,
            "ts": "2026-11-30T00:00:00+00:00",
            "channel_values": {"employee": "Ada", "amount": float(step), "status": "validated"},
            "versions_seen": {},
            "updated_channels": ["amount"],
        }
        type_, data = serde.dumps_typed(payload)
        rows.append(
            Checkpoint(
                thread_id=PAGE_THREAD,
                checkpoint_ns="",
                checkpoint_id=checkpoint_id,
                parent_checkpoint_id=parent,
                type=type_,
                checkpoint=data,
                channel_versions={"employee": "1", "amount": str(step + 2), "status": "1"},
                metadata={"source": "loop", "step": step, "parents": {}},
            )
        )
        parent = checkpoint_id
    Checkpoint.objects.bulk_create(rows, batch_size=1000)
    return thread


def _copy(model, columns: list[str], rows: list[tuple]) -> None:
    from django.db import connection

    quote = connection.ops.quote_name
    statement = (
        f"COPY {quote(model._meta.db_table)} ({', '.join(quote(c) for c in columns)}) FROM STDIN"
    )
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


def _days(n: int):
    from datetime import timedelta

    return timedelta(days=n)


# -- measuring ----------------------------------------------------------------------------


def page_time(client, url: str) -> float:
    started = time.perf_counter()
    response = client.get(url)
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, f"{url} answered {response.status_code}"
    return elapsed


def sweep(batch_size: int) -> None:
    """The sweep's process: apply retention, print what it did and how long it took."""
    from durable import retention

    started = time.perf_counter()
    report = retention.apply(batch_size=batch_size)
    elapsed = time.perf_counter() - started
    print(json.dumps({"seconds": elapsed, **report.as_dict()}))


def check(threads: int, removed: dict) -> None:
    """Every old thread kept its latest checkpoint, its blob and its writes: nothing
    else, nothing orphaned."""
    from durable.models import AuditEvent, Checkpoint, CheckpointBlob, CheckpointWrite

    old = Checkpoint.objects.exclude(thread_id=PAGE_THREAD)
    assert old.count() == threads, old.count()
    assert old.filter(parent_checkpoint_id__isnull=False).count() == 0
    assert CheckpointBlob.objects.count() == threads
    assert CheckpointWrite.objects.count() == 2 * threads
    assert removed["checkpoints"] > 0
    assert AuditEvent.objects.filter(action="prune", actor="retention").count() >= threads


def main() -> None:
    args = parse()
    if args.sweep:
        setup_django(args.url)
        sweep(args.batch_size)
        return
    ensure_database(args.url)
    os.environ["DJANGO_ALLOWED_HOSTS"] = "localhost"
    setup_django(args.url)
    from django.contrib.auth import get_user_model
    from django.test import Client

    from durable.models import Thread

    started = time.perf_counter()
    fill(args.threads, args.checkpoints)
    total = args.threads * args.checkpoints
    print(f"{total} checkpoints filled in {time.perf_counter() - started:.1f} s", file=sys.stderr)

    client = Client(SERVER_NAME="localhost")
    client.force_login(get_user_model().objects.get(username=USER))
    url = f"/threads/{Thread.objects.get(thread_id=PAGE_THREAD).pk}/"
    for _ in range(3):  # warm up: the graph's compilation, the first connections
        page_time(client, url)
    before = [page_time(client, url) for _ in range(30)]

    command = [sys.executable, __file__, "--sweep", "--url", args.url]
    process = subprocess.Popen(
        command + ["--batch-size", str(args.batch_size)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "DJANGO_ALLOWED_HOSTS": "localhost"},
    )
    busy, idle, paused = [], [], 0.0
    while process.poll() is None:
        busy.extend(page_time(client, url) for _ in range(args.rounds))
        process.send_signal(signal.SIGSTOP)
        stopped = time.perf_counter()
        try:
            idle.extend(page_time(client, url) for _ in range(args.rounds))
        finally:
            process.send_signal(signal.SIGCONT)
            paused += time.perf_counter() - stopped
    result = json.loads(process.stdout.read().strip().splitlines()[-1])
    check(args.threads, result["removed"])

    removed = result["removed"]["checkpoints"]
    running = result["seconds"] - paused
    idle_median, busy_median = statistics.median(idle), statistics.median(busy)
    print(f"sweep of {args.threads} threads x {args.checkpoints} checkpoints (PostgreSQL)")
    print(
        f"removed {removed} checkpoints, {result['removed']['blobs']} blobs, "
        f"{result['removed']['writes']} writes in {running:.1f} s of running "
        f"({result['batches']} batches of {args.batch_size}; paused {paused:.1f} s)"
    )
    rows = [
        ("checkpoints removed per second", f"{removed / running:10.0f}", "target >= 5000"),
        ("thread page median before (ms)", f"{statistics.median(before):10.1f}", "30 requests"),
        ("thread page median, paused (ms)", f"{idle_median:10.1f}", f"{len(idle)} requests"),
        ("thread page median, sweeping (ms)", f"{busy_median:10.1f}", f"{len(busy)} requests"),
        ("sweeping / paused", f"{busy_median / idle_median:10.2f}", "target <= 2"),
    ]
    for name, value, note in rows:
        print(f"{name:36} {value}   ({note})")


if __name__ == "__main__":
    main()
