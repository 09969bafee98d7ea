"""The run engine on Redis + PostgreSQL with 2 worker processes.

    .venv/bin/python benchmarks/bench_runs.py [--runs 500] [--url postgres://...] [--broker redis://...]

1. Throughput: ``--runs`` short runs of a 3-node graph requested at once through
   ``durable.engine.start``; two ``celery -A dashboard worker --concurrency=1`` processes
   execute them. Prints runs per second (first request to last end) and the time from a
   run's request to its first node starting (the first ``tasks`` RunEvent), median and p95.
2. Overhead: one run at a time, taking turns with ``graph.invoke`` of the same graph on
   ``DjangoSaver`` in this process. A run's cost is its time in the worker (claimed to
   ended: lease, events, outcome and the graph itself); the ratio is its median over
   ``graph.invoke``'s. Target: at most 1.15.
3. Stream modes: one run at a time of ``examples/chat.py`` (a node whose fake chat model
   streams a 16-word reply, 31 chunks), taking turns: asked for no stream mode (what the
   engine records of every run: ``updates``, ``custom``, ``tasks``), asked for ``values``
   (a background run's default in the API), for Agent Chat UI's ``values``,
   ``messages-tuple`` and ``custom``, and for ``events``. Prints each one's median time
   in the worker and the median of its ratios over the first, round by round.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from typing_extensions import TypedDict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

GRAPH = "bench_three_steps"
DEFAULT_BROKER = "redis://127.0.0.1:6379/14"


class Count(TypedDict):
    n: int


def step(state: Count) -> dict:
    return {"n": state["n"] + 1}


def build_graph():
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(Count)
    for name in ("first", "second", "third"):
        builder.add_node(name, step)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", "third")
    builder.add_edge("third", END)
    return builder


def start_workers(count: int, env: dict, log_dir: Path) -> list[subprocess.Popen]:
    workers = []
    for i in range(count):
        log = (log_dir / f"bench-worker-{i}.log").open("w")
        workers.append(
            subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "dashboard", "worker",
                 "--concurrency=1", "--without-gossip", "--without-mingle",
                 f"--hostname=bench{i}-{os.getpid()}@%h", "--loglevel=WARNING"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
    return workers


def wait_all(run_ids: list[int], timeout: float = 600) -> None:
    from durable.models import Run

    deadline = time.monotonic() + timeout
    while Run.objects.filter(pk__in=run_ids, status__in=Run.ACTIVE).exists():
        if time.monotonic() > deadline:
            raise SystemExit("runs did not finish in time; see var/bench-worker-*.log")
        time.sleep(0.05)
    failed = Run.objects.filter(pk__in=run_ids).exclude(status=Run.Status.SUCCESS).count()
    if failed:
        raise SystemExit(f"{failed} runs did not succeed")


def first_node_delays(run_ids: list[int]) -> list[float]:
    """Seconds from each run's request to its first node's start."""
    from django.db.models import Min

    from durable.models import Run, RunEvent

    created = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "created_at"))
    firsts = (
        RunEvent.objects.filter(run_id__in=run_ids, event="tasks")
        .values("run_id")
        .annotate(first=Min("created_at"))
    )
    return [(row["first"] - created[row["run_id"]]).total_seconds() for row in firsts]


def throughput(count: int) -> dict[str, float]:
    from durable import engine
    from durable.models import Run

    began = time.perf_counter()
    ids = [engine.start(GRAPH, {"n": 0}).pk for _ in range(count)]
    requested = time.perf_counter() - began
    wait_all(ids)
    ends = Run.objects.filter(pk__in=ids).values_list("created_at", "ended_at")
    span = (max(e for _, e in ends) - min(c for c, _ in ends)).total_seconds()
    delays = sorted(first_node_delays(ids))
    return {
        "requests per second (web side)": count / requested,
        "runs per second": count / span,
        "request to first node, median (ms)": 1000 * statistics.median(delays),
        "request to first node, p95 (ms)": 1000 * delays[int(0.95 * (len(delays) - 1))],
    }


def overhead(rounds: int) -> dict[str, float]:
    from durable import engine
    from durable.models import Run
    from durable.persistence.checkpoint import DjangoSaver

    direct = build_graph().compile(checkpointer=DjangoSaver())
    ours, invoke = [], []
    for _ in range(rounds):
        run = engine.start(GRAPH, {"n": 0})
        wait_all([run.pk])
        run.refresh_from_db()
        ours.append((run.ended_at - run.started_at).total_seconds())
        config = {"configurable": {"thread_id": f"direct-{uuid.uuid4().hex}"}}
        began = time.perf_counter()
        direct.invoke({"n": 0}, config, durability=Run.Durability.ASYNC)
        invoke.append(time.perf_counter() - began)
    mine, theirs = statistics.median(ours[3:]), statistics.median(invoke[3:])
    return {
        "run in the worker, median (ms)": 1000 * mine,
        "graph.invoke, median (ms)": 1000 * theirs,
        "engine overhead (ratio)": mine / theirs,
    }


CHAT = {"messages": [{"type": "human", "content": "hi"}]}
CHAT_UI_MODES = ["values", "messages-tuple", "custom"]


def stream_modes_cost(rounds: int) -> dict[str, float]:
    from durable import engine

    asked = {
        "no stream mode": None,
        "values": ["values"],
        "messages-tuple": CHAT_UI_MODES,
        "events": ["events"],
    }
    times: dict[str, list[float]] = {name: [] for name in asked}
    names = list(asked)
    for i in range(rounds):
        # Each round starts with the next one, so that none is always first after a pause.
        for name in names[i % len(names) :] + names[: i % len(names)]:
            run = engine.start("chat", CHAT, stream_modes=asked[name])
            wait_all([run.pk])
            run.refresh_from_db()
            times[name].append((run.ended_at - run.started_at).total_seconds())
    base = times["no stream mode"][3:]
    results = {}
    for name, taken in times.items():
        results[f"chat run, {name}, median (ms)"] = 1000 * statistics.median(taken[3:])
    # Each round's runs follow one another: the ratio is taken round by round, so that
    # the machine's drift between rounds cancels out.
    for name in names[1:]:
        ratios = [mine / theirs for mine, theirs in zip(times[name][3:], base, strict=True)]
        results[f"chat run, {name} / no stream mode (ratio)"] = statistics.median(ratios)
    return results


def main() -> None:
    from bench_saver import prepare

    os.environ["DURABLE_EXTRA_GRAPHS"] = f"{GRAPH}=bench_runs.build_graph"
    os.environ.setdefault("CELERY_BROKER_URL", DEFAULT_BROKER)
    args = prepare(__doc__, "runs", 500)
    from django.conf import settings
    from django.db import connection

    from dashboard.celery import app

    app.conf.broker_url = os.environ["CELERY_BROKER_URL"]
    with app.connection_for_write() as conn:  # no task left over from an earlier run
        conn.default_channel.queue_declare(settings.DURABLE_QUEUE, durable=True, auto_delete=False)
        conn.default_channel.queue_purge(settings.DURABLE_QUEUE)
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'benchmarks'}{os.pathsep}{ROOT}")
    settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
    workers = start_workers(2, env, settings.VAR_DIR)
    connection.ensure_connection()
    try:
        throughput(20)  # warm both workers up: imports, compiled graph, pools
        results = throughput(args.runs) | overhead(60) | stream_modes_cost(60)
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=60)
    width = max(map(len, results))
    print(f"\n{args.runs} runs, 2 worker processes, Redis + PostgreSQL")
    for name, value in results.items():
        print(f"{name:<{width}}  {value:>9.2f}")


if __name__ == "__main__":
    main()
