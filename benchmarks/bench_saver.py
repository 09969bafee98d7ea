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
import operator
import os
import statistics
import sys
import time
import uuid
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


def timed(fn, repeat: int = 1) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


CONNECTION_SAMPLES: dict[str, list[int]] = {}


def chat_turns(graph, thread_id: str, turns: int, url: str | None = None) -> float:
    """Seconds per turn; with ``url``, also samples this database's connection count
    every 10 turns into ``CONNECTION_SAMPLES[thread_id]``."""
    config = {"configurable": {"thread_id": thread_id}}
    samples = CONNECTION_SAMPLES.setdefault(thread_id, [])
    elapsed = 0.0
    for turn in range(turns):
        started = time.perf_counter()
        graph.invoke({"messages": [HumanMessage(f"turn {turn}")]}, config, durability="sync")
        elapsed += time.perf_counter() - started
        if url and turn % 10 == 9:
            samples.append(connections(url))
    return elapsed / turns


async def achat_turns(graph, thread_id: str, turns: int) -> float:
    config = {"configurable": {"thread_id": thread_id}}
    started = time.perf_counter()
    for turn in range(turns):
        await graph.ainvoke({"messages": [HumanMessage(f"turn {turn}")]}, config, durability="sync")
    return (time.perf_counter() - started) / turns


def sync_workloads(saver, prefix: str, turns: int, url: str) -> dict[str, float]:
    results = {}
    thread = f"{prefix}-chat-{uuid.uuid4().hex[:8]}"
    results["chat turn, sync (s/turn)"] = chat_turns(chat_graph(saver), thread, turns, url)
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    latest = saver.get_tuple(config)
    middle = list(saver.list(config, limit=turns // 2))[-1].config
    results["get_tuple latest (ms)"] = 1000 * timed(lambda: saver.get_tuple(config), 50)
    results["get_tuple by id (ms)"] = 1000 * timed(lambda: saver.get_tuple(middle), 50)
    results["history page of 50 (ms)"] = 1000 * timed(
        lambda: list(saver.list(config, before=latest.config, limit=50)), 20
    )
    fan = fanout_graph(saver)
    results["8-way fan-out super-step (ms)"] = 1000 * timed(
        lambda: fan.invoke(
            {"results": []},
            {"configurable": {"thread_id": f"{prefix}-fan-{uuid.uuid4().hex[:8]}"}},
            durability="sync",
        ),
        20,
    )
    tiny = tiny_graph(saver)
    results["create 200 threads (s)"] = timed(
        lambda: [
            tiny.invoke(
                {"value": "x"},
                {"configurable": {"thread_id": f"{prefix}-new-{uuid.uuid4().hex}"}},
                durability="sync",
            )
            for _ in range(200)
        ]
    )
    results["_thread"] = thread
    return results


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()

    ensure_database(args.url)
    setup_django(args.url)
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    from durable.checkpoint import DjangoSaver

    rows: list[tuple[str, float, float]] = []

    with PostgresSaver.from_conn_string(args.url) as theirs:
        theirs.setup()
        reference = sync_workloads(theirs, "pg", args.turns, args.url)
    ours_saver = DjangoSaver()
    before = connections(args.url)
    ours = sync_workloads(ours_saver, "dj", args.turns, args.url)
    after = connections(args.url)
    for key, value in reference.items():
        if not key.startswith("_"):
            rows.append((key, ours[key], value))
    rows.append(
        (
            "bytes stored per chat turn",
            bytes_per_turn(
                args.url,
                ["durable_checkpoint", "durable_checkpointblob", "durable_checkpointwrite"],
                ours["_thread"],
                args.turns,
            ),
            bytes_per_turn(
                args.url,
                ["checkpoints", "checkpoint_blobs", "checkpoint_writes"],
                reference["_thread"],
                args.turns,
            ),
        )
    )

    async def async_chat() -> tuple[float, float]:
        async with AsyncPostgresSaver.from_conn_string(args.url) as theirs_async:
            await theirs_async.setup()
            t = await achat_turns(chat_graph(theirs_async), f"apg-{uuid.uuid4().hex}", args.turns)
        o = await achat_turns(chat_graph(DjangoSaver()), f"adj-{uuid.uuid4().hex}", args.turns)
        return o, t

    o, t = asyncio.run(async_chat())
    rows.append(("chat turn, async (s/turn)", o, t))

    width = max(len(r[0]) for r in rows)
    print(f"\n{'workload':<{width}}  {'DjangoSaver':>12}  {'PostgresSaver':>13}  {'ratio':>6}")
    for name, mine, reference_value in rows:
        ratio = mine / reference_value if reference_value else float("nan")
        print(f"{name:<{width}}  {mine:>12.4f}  {reference_value:>13.4f}  {ratio:>6.2f}")
    print(
        f"\nPostgreSQL connections of this process, every 10 turns of the {args.turns}-turn "
        f"sync chat: DjangoSaver {CONNECTION_SAMPLES[ours['_thread']]} (pool max "
        f"{os.environ.get('DURABLE_DB_POOL_SIZE', 8)}; {before} before the run, {after} "
        f"after), PostgresSaver {CONNECTION_SAMPLES[reference['_thread']]}."
    )


if __name__ == "__main__":
    main()
