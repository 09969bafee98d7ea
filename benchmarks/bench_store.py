"""DjangoStore against LangGraph's PostgresStore, on one PostgreSQL.

    .venv/bin/python benchmarks/bench_store.py [--items 10000] [--url postgres://...]

Puts ``--items`` items (in batches of 100) into a fresh namespace of each store, then
times single gets and a filtered search, the two stores taking turns, and prints ours /
theirs ratios (below 1 means DjangoStore is faster).
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_saver import prepare  # noqa: E402


def compare(stores: dict, items: int) -> dict[str, dict[str, float]]:
    """Each workload on both stores, the two taking turns (batch by batch, read by
    read), so both meet the same background noise. ``{workload: {side: value}}``."""
    from langgraph.store.base import GetOp, PutOp

    ns = {side: ("bench", uuid.uuid4().hex[:8], "items") for side in stores}

    def put_batch(side, start):
        values = range(start, min(start + 100, items))
        kinds = ("even", "odd")
        stores[side].batch(
            [
                PutOp(ns[side], f"k{i:06}", {"n": i, "kind": kinds[i % 2], "t": "x" * 50})
                for i in values
            ]
        )

    keys = [f"k{i:06}" for i in range(0, items, max(1, items // 50))]
    workloads = {
        f"put {items} items, batches of 100 (s)": (
            [functools.partial(put_batch, start=start) for start in range(0, items, 100)],
            sum,
        ),
        "get one item (ms)": (
            [lambda side, k=k: stores[side].batch([GetOp(ns[side], k)]) for k in keys],
            lambda samples: 1000 * statistics.median(samples),
        ),
        "filtered search, limit 20 (ms)": (
            [
                lambda side: stores[side].search(
                    ns[side], filter={"kind": "even", "n": {"$gte": items // 2}}, limit=20
                )
            ]
            * 20,
            lambda samples: 1000 * statistics.median(samples),
        ),
    }
    results = {}
    for name, (steps, summary) in workloads.items():
        samples: dict[str, list[float]] = {side: [] for side in stores}
        for step in steps:
            for side in stores:
                started = time.perf_counter()
                step(side)
                samples[side].append(time.perf_counter() - started)
        results[name] = {side: summary(v) for side, v in samples.items()}
    return results


def main() -> None:
    args = prepare(__doc__, "items", 10_000)
    from langgraph.store.postgres import PostgresStore

    from durable.persistence.store import DjangoStore

    with PostgresStore.from_conn_string(args.url) as theirs:
        theirs.setup()
        from django.db import connection

        connection.ensure_connection()  # as a worker's or a request's thread holds one
        results = compare({"ours": DjangoStore(), "theirs": theirs}, args.items)
    width = max(map(len, results))
    print(f"\n{'workload':<{width}}  {'DjangoStore':>11}  {'PostgresStore':>13}  {'ratio':>6}")
    for name, values in results.items():
        mine, theirs_value = values["ours"], values["theirs"]
        print(f"{name:<{width}}  {mine:>11.4f}  {theirs_value:>13.4f}  {mine / theirs_value:>6.2f}")


if __name__ == "__main__":
    main()
