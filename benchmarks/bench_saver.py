"""DjangoSaver against LangGraph's PostgresSaver / AsyncPostgresSaver, on one PostgreSQL.

    .venv/bin/python benchmarks/bench_saver.py [--turns 100] [--url postgres://...]

Everything runs in one process against the same database (default
``postgres://postgres@127.0.0.1:5432/durable_bench``, created if missing), one workload
after the other, and prints a table of ours / theirs ratios: below 1 means DjangoSaver
is faster. Timings are medians of repeated runs where a workload is short.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import operator
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import psycopg
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/durable_bench"


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    # As in production: DEBUG's query log would tax every statement.
    os.environ.setdefault("DJANGO_DEBUG", "0")
    os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark-only")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def ensure_database(url: str) -> None:
    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


# -- graphs -------------------------------------------------------------------------


class Chat(TypedDict):
    messages: Annotated[list, add_messages]


class Fan(TypedDict):
    results: Annotated[list, operator.add]


class Tiny(TypedDict):
    value: str


def chat_graph(checkpointer):
    def reply(state: Chat) -> dict:
        last = state["messages"][-1].content
        return {"messages": [AIMessage(f"echo: {last} " + "lorem ipsum " * 20)]}

    builder = StateGraph(Chat)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=checkpointer)


def fanout_graph(checkpointer, width: int = 8):
    builder = StateGraph(Fan)
    for i in range(width):
        builder.add_node(f"worker_{i}", lambda state, i=i: {"results": [f"r{i}" * 50]})
        builder.add_edge(START, f"worker_{i}")
    return builder.compile(checkpointer=checkpointer)


def tiny_graph(checkpointer):
    builder = StateGraph(Tiny)
    builder.add_node("set", lambda state: {"value": state["value"] + "!"})
    builder.add_edge(START, "set")
    return builder.compile(checkpointer=checkpointer)


# -- workloads ------------------------------------------------------------------------


def alternate(pair: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Run each side's ``fn`` once per round, the sides taking turns, and return each
    side's durations: interleaving exposes both to the same background noise."""
    samples: dict[str, list[float]] = {side: [] for side in pair}
    for _ in range(rounds):
        for side, fn in pair.items():
            started = time.perf_counter()
            fn()
            samples[side].append(time.perf_counter() - started)
    return samples


CONNECTION_SAMPLES: list[int] = []


def chat_turn(graph, thread_id: str):
    counter = itertools.count()

    def turn():
        message = HumanMessage(f"turn {next(counter)}")
        graph.invoke(
            {"messages": [message]}, {"configurable": {"thread_id": thread_id}}, durability="sync"
        )

    return turn


def compare_sync(savers: dict, turns: int, url: str) -> tuple[dict, dict]:
    """Every sync workload on both savers (``{"ours": ..., "theirs": ...}``), the two
    taking turns. Returns ``{workload: {side: value}}`` and each side's chat thread."""
    results: dict[str, dict[str, float]] = {}
    threads = {side: f"{side}-chat-{uuid.uuid4().hex[:8]}" for side in savers}
    turn = {side: chat_turn(chat_graph(saver), threads[side]) for side, saver in savers.items()}
    chat: dict[str, list[float]] = {side: [] for side in savers}
    for done in range(1, turns + 1):
        for side, samples in alternate(turn, 1).items():
            chat[side] += samples
        if done % 10 == 0:
            CONNECTION_SAMPLES.append(connections(url))
    results["chat turn, sync (s/turn)"] = {side: sum(v) / turns for side, v in chat.items()}

    def config(side, **extra):
        return {"configurable": {"thread_id": threads[side], "checkpoint_ns": "", **extra}}

    latest = {side: saver.get_tuple(config(side)) for side, saver in savers.items()}
    middle = {
        side: list(saver.list(config(side), limit=turns // 2))[-1].config
        for side, saver in savers.items()
    }
    reads = {
        "get_tuple latest (ms)": (50, lambda side, saver: saver.get_tuple(config(side))),
        "get_tuple by id (ms)": (50, lambda side, saver: saver.get_tuple(middle[side])),
        "history page of 50 (ms)": (
            20,
            lambda side, saver: list(
                saver.list(config(side), before=latest[side].config, limit=50)
            ),
        ),
    }
    for name, (rounds, read) in reads.items():
        samples = alternate(
            {side: functools.partial(read, side, saver) for side, saver in savers.items()}, rounds
        )
        results[name] = {side: 1000 * statistics.median(v) for side, v in samples.items()}

    def fan_once(graph):
        thread = {"configurable": {"thread_id": f"fan-{uuid.uuid4().hex}"}}
        return lambda: graph.invoke({"results": []}, thread, durability="sync")

    fans = {side: fanout_graph(saver) for side, saver in savers.items()}
    samples: dict[str, list[float]] = {side: [] for side in savers}
    for _ in range(20):
        for side, v in alternate({s: fan_once(g) for s, g in fans.items()}, 1).items():
            samples[side] += v
    results["8-way fan-out super-step (ms)"] = {
        side: 1000 * statistics.median(v) for side, v in samples.items()
    }
    tinies = {side: tiny_graph(saver) for side, saver in savers.items()}

    def new_thread(graph):
        thread = {"configurable": {"thread_id": f"new-{uuid.uuid4().hex}"}}
        return lambda: graph.invoke({"value": "x"}, thread, durability="sync")

    created: dict[str, float] = {side: 0.0 for side in savers}
    for _ in range(200):
        for side, v in alternate({s: new_thread(g) for s, g in tinies.items()}, 1).items():
            created[side] += v[0]
    results["create 200 threads (s)"] = created
    return results, threads


def bytes_per_turn(url: str, tables: list[str], where_thread: str, turns: int) -> float:
    with psycopg.connect(url) as conn:
        total = 0
        for table in tables:
            row = conn.execute(
                f"SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {table} t WHERE thread_id = %s",
                [where_thread],
            ).fetchone()
            total += row[0]
    return total / turns


def connections(url: str) -> int:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        ).fetchone()[0]


def prepare(doc: str, count: str, default: int, *, debug: bool = False) -> argparse.Namespace:
    """Parse ``--url`` and the ``--<count>`` option of a benchmark script, create its
    database if missing, and set Django up on it (``debug`` keeps Django's query log)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument(f"--{count}", type=int, default=default)
    args = parser.parse_args()
    ensure_database(args.url)
    if debug:
        os.environ["DJANGO_DEBUG"] = "1"
    setup_django(args.url)
    return args


def main() -> None:
    args = prepare(__doc__, "turns", 100)
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    from durable.persistence.checkpoint import DjangoSaver

    rows: list[tuple[str, float, float]] = []
    with PostgresSaver.from_conn_string(args.url) as theirs:
        theirs.setup()
        # As in a Celery worker, whose task thread holds a connection while the graph
        # runs (the saver calls LangGraph makes from its own threads use the pool).
        from django.db import connection

        connection.ensure_connection()
        before = connections(args.url)
        results, threads = compare_sync(
            {"ours": DjangoSaver(), "theirs": theirs}, args.turns, args.url
        )
        after = connections(args.url)
    for name, values in results.items():
        rows.append((name, values["ours"], values["theirs"]))
    rows.append(
        (
            "bytes stored per chat turn",
            bytes_per_turn(
                args.url,
                ["durable_checkpoint", "durable_checkpointblob", "durable_checkpointwrite"],
                threads["ours"],
                args.turns,
            ),
            bytes_per_turn(
                args.url,
                ["checkpoints", "checkpoint_blobs", "checkpoint_writes"],
                threads["theirs"],
                args.turns,
            ),
        )
    )

    async def async_chat() -> tuple[float, float]:
        async with AsyncPostgresSaver.from_conn_string(args.url) as theirs_async:
            await theirs_async.setup()
            graphs = {"ours": chat_graph(DjangoSaver()), "theirs": chat_graph(theirs_async)}
            elapsed = dict.fromkeys(graphs, 0.0)
            configs = {
                side: {"configurable": {"thread_id": f"a{side}-{uuid.uuid4().hex}"}}
                for side in graphs
            }
            for turn in range(args.turns):
                for side, graph in graphs.items():
                    started = time.perf_counter()
                    message = {"messages": [HumanMessage(f"turn {turn}")]}
                    await graph.ainvoke(message, configs[side], durability="sync")
                    elapsed[side] += time.perf_counter() - started
        return elapsed["ours"] / args.turns, elapsed["theirs"] / args.turns

    o, t = asyncio.run(async_chat())
    rows.append(("chat turn, async (s/turn)", o, t))

    width = max(len(r[0]) for r in rows)
    print(f"\n{'workload':<{width}}  {'DjangoSaver':>12}  {'PostgresSaver':>13}  {'ratio':>6}")
    for name, mine, reference_value in rows:
        ratio = mine / reference_value if reference_value else float("nan")
        print(f"{name:<{width}}  {mine:>12.4f}  {reference_value:>13.4f}  {ratio:>6.2f}")
    print(
        f"\nPostgreSQL connections of this process, every 10 turns of the {args.turns}-turn "
        f"sync chat (both savers open; PostgresSaver holds one): {CONNECTION_SAMPLES} "
        f"(DjangoSaver's pool max {os.environ.get('DURABLE_DB_POOL_SIZE', 8)}; {before} "
        f"before the run, {after} after)."
    )


if __name__ == "__main__":
    main()
