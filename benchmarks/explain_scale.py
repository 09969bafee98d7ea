"""PostgreSQL plans of DjangoSaver's reads on a thread of 10,000 checkpoints.

    .venv/bin/python benchmarks/explain_scale.py [--checkpoints 10000] [--url ...]

Builds the thread once (reused on later runs), captures the SQL that ``get_tuple``
(latest and by id) and ``list(limit=50, before=...)`` send, and prints
``EXPLAIN (ANALYZE, BUFFERS)`` for each: every one must be an index scan reading a
bounded number of rows, however long the thread.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_saver import prepare  # noqa: E402

THREAD = "explain-10k"


def build(saver, count: int) -> list[str]:
    from langgraph.checkpoint.base import empty_checkpoint

    from durable.models import Checkpoint

    existing = list(
        Checkpoint.objects.filter(thread_id=THREAD)
        .order_by("checkpoint_id")
        .values_list("checkpoint_id", flat=True)
    )
    if len(existing) >= count:
        return existing
    parent = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
    if existing:
        parent["configurable"]["checkpoint_id"] = existing[-1]
    for step in range(len(existing), count):
        cp = empty_checkpoint()
        cp["channel_values"] = {"messages": [f"message {step}"], "step": step}
        cp["channel_versions"] = {"messages": str(step + 1), "step": str(step + 1)}
        parent = saver.put(
            parent, cp, {"source": "loop", "step": step}, {"messages": str(step + 1)}
        )
        saver.put_writes(parent, [("messages", [f"pending {step}"])], task_id=f"t{step}")
        existing.append(parent["configurable"]["checkpoint_id"])
    return existing


def captured(fn) -> list[tuple[str, list]]:
    """The statements ``fn`` sends through DjangoSaver's cursors, with parameters."""
    from durable import db as sql

    statements: list[tuple[str, list]] = []
    original = sql.cursor

    from contextlib import contextmanager

    class Recording:
        def __init__(self, cursor):
            self.cursor = cursor

        def execute(self, query, params=None):
            statements.append((query, list(params or [])))
            return self.cursor.execute(query, params)

        def __getattr__(self, name):
            return getattr(self.cursor, name)

    @contextmanager
    def recording(using):
        with original(using) as cursor:
            yield Recording(cursor)

    sql.cursor = recording
    try:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as orm:
            fn()
    finally:
        sql.cursor = original
    statements += [(q["sql"], None) for q in orm.captured_queries]
    return statements


def main() -> None:
    args = prepare(__doc__, "checkpoints", 10_000, debug=True)  # captured() reads the query log
    import psycopg

    from durable.persistence.checkpoint import DjangoSaver

    saver = DjangoSaver()
    ids = build(saver, args.checkpoints)
    config = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
    by_id = {"configurable": {**config["configurable"], "checkpoint_id": ids[len(ids) // 2]}}
    before = {"configurable": {"checkpoint_id": ids[len(ids) // 3]}}
    reads = {
        "get_tuple, latest": lambda: saver.get_tuple(config),
        "get_tuple, by id": lambda: saver.get_tuple(by_id),
        "list(limit=50, before=...)": lambda: list(saver.list(config, before=before, limit=50)),
    }
    with psycopg.connect(args.url) as conn:
        # What autovacuum does to a table that grew: without statistics the planner
        # guesses, and picks worse plans than production would.
        for table in ("durable_checkpoint", "durable_checkpointblob", "durable_checkpointwrite"):
            conn.execute(f"ANALYZE {table}")
        print(f"thread {THREAD!r}: {len(ids)} checkpoints")
        for name, read in reads.items():
            print(f"\n## {name}\n")
            for query, params in captured(read):
                if params is None:  # an ORM query: its SQL is already interpolated
                    plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + query)
                else:
                    cur = psycopg.ClientCursor(conn)
                    plan = cur.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + query, params)
                print("    " + query.strip().splitlines()[0][:110] + " ...")
                for (line,) in plan.fetchall():
                    print("      " + line)


if __name__ == "__main__":
    main()
