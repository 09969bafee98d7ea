"""Server time of the console's history pages on PostgreSQL.

    .venv/bin/python benchmarks/bench_console.py [--checkpoints 10000] [--branches 20]
        [--threads 100000] [--rounds 30] [--url postgres://...]

Fills its own database (default ``postgres://postgres@127.0.0.1:5432/durable_console_bench``,
created if missing; kept, so a second run only measures) with one thread of
``--checkpoints`` checkpoints in ``--branches`` forks off its main line, and
``--threads`` threads with statuses and metadata. Rows go in with ``bulk_create``, the
checkpoint payloads encoded by the saver's own serde, as ``DjangoSaver.put`` would.

Then it requests each page ``--rounds`` times with Django's test client, in this
process (``DJANGO_DEBUG=0``: no query log), and prints the median and 95th percentile
server time, and the SQL queries one request makes. Target: median under 200 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_saver import ensure_database, setup_django  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/durable_console_bench"
TREE_THREAD = "bench-tree"
GRAPH = "expense_approval"
STATUSES = ["idle"] * 6 + ["interrupted"] * 2 + ["error", "busy"]


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--checkpoints", type=int, default=10_000)
    parser.add_argument("--branches", type=int, default=20)
    parser.add_argument("--threads", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=30)
    return parser.parse_args()


# -- filling ----------------------------------------------------------------------------


def fill_tree(count: int, branches: int):
    """One thread of ``count`` checkpoints: a main line with ``branches`` forks, spread
    along it, each from 40 checkpoints back and running on for a fifth of the
    checkpoints shared out (newer ids than their fork point, interleaved with the main
    line, as real forks are)."""
    from langgraph.checkpoint.base.id import uuid6

    from durable.models import Checkpoint, CheckpointWrite, Tenant, Thread
    from durable.persistence.checkpoint import DjangoSaver

    thread, _ = Thread.objects.get_or_create(
        thread_id=TREE_THREAD,
        defaults={
            "graph": GRAPH,
            "status": "interrupted",
            "tenant": Tenant.default(),
            "name": TREE_THREAD,
        },
    )
    if Checkpoint.objects.filter(thread_id=TREE_THREAD).count() == count:
        return thread
    Checkpoint.objects.filter(thread_id=TREE_THREAD).delete()
    CheckpointWrite.objects.filter(thread_id=TREE_THREAD).delete()
    serde = DjangoSaver().serde
    rows, writes = [], []
    main: list[str] = []
    branch_length = max(count // (max(branches, 1) * 5), 1)  # a fifth of it in branches
    every = max((count - branches * branch_length) // max(branches, 1), 1)

    def add(parent: str | None, step: int, source: str) -> str:
        cid = str(uuid6(clock_seq=step))
        payload = {
            "v": 4,
            "id": cid,
            "ts": "2026-11-30T00:00:00+00:00",
            "channel_values": {"employee": "Ada", "amount": float(step), "status": "validated"},
            "versions_seen": {},
            "updated_channels": ["amount"],
        }
        type_, blob = serde.dumps_typed(payload)
        rows.append(
            Checkpoint(
                thread_id=TREE_THREAD,
                checkpoint_ns="",
                checkpoint_id=cid,
                parent_checkpoint_id=parent,
                type=type_,
                checkpoint=blob,
                channel_versions={"employee": "1", "amount": str(step + 2), "status": "1"},
                metadata={"source": source, "step": step, "parents": {}},
            )
        )
        w_type, w_blob = serde.dumps_typed(float(step))
        writes.append(
            CheckpointWrite(
                thread_id=TREE_THREAD,
                checkpoint_ns="",
                checkpoint_id=cid,
                task_id=f"task-{step}-{len(rows)}",
                idx=0,
                task_path="~__pregel_pull, validate",
                channel="amount",
                type=w_type,
                blob=w_blob,
            )
        )
        return cid

    while len(rows) < count:
        parent = main[-1] if main else None
        main.append(add(parent, len(main) - 1, "loop" if main else "input"))
        if len(main) % every == 0 and len(main) > 40 and len(rows) < count:
            fork_point = main[-40]
            branch = add(fork_point, len(main) - 40, "update")
            for i in range(branch_length - 1):
                if len(rows) >= count:
                    break
                branch = add(branch, len(main) - 39 + i, "loop")
    Checkpoint.objects.bulk_create(rows, batch_size=2000)
    CheckpointWrite.objects.bulk_create(writes, batch_size=2000)
    return thread


def fill_threads(count: int) -> None:
    """``count`` threads (the tree's excepted), statuses and metadata spread evenly,
    updated a minute apart."""
    from django.db import connection

    from durable.models import Tenant, Thread

    if Thread.objects.exclude(thread_id=TREE_THREAD).count() != count:
        Thread.objects.exclude(thread_id=TREE_THREAD).delete()
        rng = random.Random(5)
        batch = []
        for i in range(count):
            batch.append(
                Thread(
                    tenant=Tenant.default(),
                    thread_id=f"bench-{i:06}",
                    name=f"bench-{i:06}",
                    graph=rng.choice(["expense_approval", "parallel_review", "fault_tolerance"]),
                    status=rng.choice(STATUSES),
                    metadata={"team": f"team-{rng.randrange(40)}", "priority": rng.randrange(5)},
                )
            )
            if len(batch) == 5000:
                Thread.objects.bulk_create(batch)
                batch = []
        Thread.objects.bulk_create(batch)
    table = connection.ops.quote_name(Thread._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET updated_at = now() - (id %% %s) * interval '1 minute'", [count]
        )
        cursor.execute(f"ANALYZE {table}")


# -- measuring ----------------------------------------------------------------------------


def measure(client, url: str, rounds: int) -> tuple[float, float, int, int]:
    """(median ms, p95 ms, queries of one request, status) of ``url``."""
    from django.db import connection

    queries = []

    def count(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    # Django's query log is emptied when a request starts; a wrapper counts instead.
    with connection.execute_wrapper(count):
        status = client.get(url).status_code
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        client.get(url)
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    return statistics.median(samples), p95, len(queries), status


def operator():
    """An operator of the default tenant, whom the console's pages need logged in."""
    from django.contrib.auth import get_user_model

    from durable.models import Membership, Tenant

    user, _ = get_user_model().objects.get_or_create(username="bench-operator")
    Membership.objects.get_or_create(user=user, tenant=Tenant.default())
    return user


def main() -> None:
    args = parse()
    ensure_database(args.url)
    os.environ["DJANGO_ALLOWED_HOSTS"] = "localhost"
    setup_django(args.url)
    from django.db import connection
    from django.test import Client

    from durable.models import Checkpoint

    started = time.perf_counter()
    thread = fill_tree(args.checkpoints, args.branches)
    fill_threads(args.threads)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(f"data ready in {time.perf_counter() - started:.1f} s", file=sys.stderr)

    ids = list(
        Checkpoint.objects.filter(thread_id=TREE_THREAD)
        .order_by("-checkpoint_id")
        .values_list("checkpoint_id", flat=True)
    )
    middle = ids[len(ids) // 2]
    client = Client(SERVER_NAME="localhost")
    client.force_login(operator())
    pages = [
        (f"thread page, {len(ids)} checkpoints", f"/threads/{thread.pk}/"),
        ("history page in the middle", f"/threads/{thread.pk}/history/?before={middle}"),
        ("oldest history page", f"/threads/{thread.pk}/history/?before={ids[-50]}"),
        ("inspector of a checkpoint", f"/threads/{thread.pk}/checkpoints/{middle}/"),
        (f"threads list, {args.threads} threads", "/"),
        ("threads, status + metadata", "/?status=interrupted&meta=team=team-7"),
        ("threads, status + 2 metadata", "/?status=interrupted&meta=team=team-7&meta=priority=2"),
        ("threads, metadata, oldest first", "/?meta=team=team-7&sort=updated"),
    ]
    print(f"{'page':40} {'median ms':>10} {'p95 ms':>8} {'queries':>8}")
    for name, url in pages:
        median, p95, queries, status = measure(client, url, args.rounds)
        assert status == 200, f"{url} answered {status}"
        print(f"{name:40} {median:10.1f} {p95:8.1f} {queries:8d}")


if __name__ == "__main__":
    main()
