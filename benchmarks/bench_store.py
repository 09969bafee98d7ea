"""DjangoStore against LangGraph's PostgresStore, on one PostgreSQL.

    .venv/bin/python benchmarks/bench_store.py [--items 10000] [--url postgres://...]

Puts ``--items`` items (in batches of 100) into a fresh namespace of each store, then
times single gets and a filtered search, and prints ours / theirs ratios (below 1 means
DjangoStore is faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_saver import DEFAULT_URL, ensure_database, setup_django  # noqa: E402


def median_ms(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return 1000 * statistics.median(samples)


def workloads(store, items: int) -> dict[str, float]:
    from langgraph.store.base import GetOp, PutOp

    ns = ("bench", uuid.uuid4().hex[:8], "items")
    started = time.perf_counter()
    for start in range(0, items, 100):
        store.batch(
            [
                PutOp(
                    ns, f"k{i:06}", {"n": i, "kind": "even" if i % 2 == 0 else "odd", "t": "x" * 50}
                )
                for i in range(start, min(start + 100, items))
            ]
        )
    put_seconds = time.perf_counter() - started
    keys = [f"k{i:06}" for i in range(0, items, max(1, items // 200))]
    get_ms = median_ms(lambda: [store.batch([GetOp(ns, k)]) for k in keys[:50]], 5) / 50
    search_ms = median_ms(
        lambda: store.search(ns, filter={"kind": "even", "n": {"$gte": items // 2}}, limit=20),
        20,
    )
    return {
        f"put {items} items, batches of 100 (s)": put_seconds,
        "get one item (ms)": get_ms,
        "filtered search, limit 20 (ms)": search_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args()
    ensure_database(args.url)
    setup_django(args.url)
    from langgraph.store.postgres import PostgresStore

    from durable.store import DjangoStore

    with PostgresStore.from_conn_string(args.url) as theirs:
        theirs.setup()
        reference = workloads(theirs, args.items)
    ours = workloads(DjangoStore(), args.items)
    width = max(map(len, ours))
    print(f"\n{'workload':<{width}}  {'DjangoStore':>11}  {'PostgresStore':>13}  {'ratio':>6}")
    for name, mine in ours.items():
        theirs = reference[name]
        print(f"{name:<{width}}  {mine:>11.4f}  {theirs:>13.4f}  {mine / theirs:>6.2f}")


if __name__ == "__main__":
    main()
