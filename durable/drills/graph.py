"""The drill graph: its nodes cause the faults themselves, on the real worker that runs
them, and count their executions in the database (``DrillExecution``), since the
workers may be other machines and a killed process keeps nothing.

Input ``{"drill": name}`` routes to one path:

- ``kill``: ``kill_before`` -> ``kill_victim`` (the first time it runs on the thread,
  waits until ``kill_sibling``, beside it in the super-step, has its write saved, then
  SIGKILLs its own pool process) and ``kill_sibling`` -> ``kill_after``. The reaper must
  re-enqueue the run once its lease expires, and the next attempt go on from the
  checkpoint after ``kill_before`` with the sibling's pending write: only the victim runs
  again.
- ``drain``: ``drain_before`` -> ``drain_leave`` (the first time, SIGTERMs its worker's
  main process, then waits until the run is draining) -> ``drain_after``, which
  another worker must run.
- ``database``: ``database_before`` -> ``database_drop`` (the first time, terminates
  every PostgreSQL backend of its own process: the run records', the lease's, the
  checkpointer's) -> ``database_after``.
- ``timeout``: ``timeout_sleeper`` (async) sleeps ``SLEEP`` seconds under a
  ``TimeoutPolicy`` of ``TIMEOUT``; its ``error_handler`` ``timeout_handled`` ends the run.
- ``retry``: ``retry_flaky`` always raises ``ConnectionError`` under a ``RetryPolicy`` of
  ``RETRY_ATTEMPTS``; its ``error_handler`` ``retry_fallback`` ends the run.

A node that decides "first time" asks the database (``executed``), never the run's local
state: a fault drill's second attempt may run on another machine.
"""

from __future__ import annotations

import asyncio
import itertools
import operator
import os
import signal
import time
from typing import Annotated

from django.db import connection
from django.utils import timezone
from langchain_core.runnables import RunnableConfig
from langgraph.errors import NodeError
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, RetryPolicy, TimeoutPolicy
from typing_extensions import TypedDict

from durable import db as sql
from durable.engine import lease
from durable.models import CheckpointWrite, DrillExecution, Run

TIMEOUT = 0.5  # seconds: the sleeper's TimeoutPolicy
SLEEP = 30.0  # seconds the sleeper would take without it
RETRY_ATTEMPTS = 3
# How long (seconds) the draining node waits for its worker to ask the run to drain.
DRAIN_WAIT = 30.0
# How long (seconds) the kill drill's victim waits for its sibling's write to be saved.
SIBLING_WAIT = 30.0
PATHS = {
    "kill": ["kill_before", "kill_victim", "kill_sibling", "kill_after"],
    "drain": ["drain_before", "drain_leave", "drain_after"],
    "database": ["database_before", "database_drop", "database_after"],
    "timeout": ["timeout_sleeper"],
    "retry": ["retry_flaky"],
}


class DrillInput(TypedDict):
    drill: str


class DrillState(DrillInput):
    log: Annotated[list[str], operator.add]


def executed(config: RunnableConfig, node: str, **detail) -> int:
    """Record an execution of ``node`` on this run's thread; returns how many executions
    of it the thread had before this one."""
    thread_id = config["configurable"]["thread_id"]
    run_id = int(config["metadata"]["run_id"])
    with sql.connection_as_found("default"):
        run = Run.objects.filter(pk=run_id).values("attempt", "worker").first() or {}
        before = DrillExecution.objects.filter(thread_id=thread_id, node=node).count()
        DrillExecution.objects.create(
            thread_id=thread_id,
            node=node,
            attempt=run.get("attempt", 0),
            worker=run.get("worker", ""),
            pid=os.getpid(),
            at=timezone.now(),
            detail=detail,
        )
    return before


def _counted(node: str):
    def run(state: DrillState, config: RunnableConfig) -> dict:
        executed(config, node)
        return {"log": [node]}

    run.__name__ = node
    return run


def _needs_pool_child(what: str) -> None:
    if not lease.in_pool_child():
        raise RuntimeError(
            f"{what} needs a prefork pool process (celery worker --pool=prefork): "
            "this worker would not survive it"
        )


def kill_victim(state: DrillState, config: RunnableConfig) -> dict:
    if executed(config, "kill_victim") == 0:
        _needs_pool_child("the kill drill")
        _wait_for_saved_write(config, "kill_sibling")
        os.kill(os.getpid(), signal.SIGKILL)
    return {"log": ["kill_victim"]}


def _wait_for_saved_write(config: RunnableConfig, node: str) -> None:
    """Wait (at most ``SIBLING_WAIT`` seconds) until ``node``'s write of this super-step
    is saved as a pending write: then it must not run again on resume."""
    thread_id = config["configurable"]["thread_id"]
    deadline = time.monotonic() + SIBLING_WAIT
    with sql.connection_as_found("default"):
        saved = CheckpointWrite.objects.filter(thread_id=thread_id, task_path__contains=node)
        while not saved.exists() and time.monotonic() < deadline:
            time.sleep(0.05)


def drain_leave(state: DrillState, config: RunnableConfig, runtime: Runtime) -> dict:
    if executed(config, "drain_leave") == 0:
        _needs_pool_child("the drain drill")
        os.kill(os.getppid(), signal.SIGTERM)
        # Return only once this run is draining (LangGraph's ``Runtime.drain_requested``,
        # which the lease sets when the worker asks it to), so that the next super-step
        # is another worker's.
        deadline = time.monotonic() + DRAIN_WAIT
        while not runtime.drain_requested and time.monotonic() < deadline:
            time.sleep(0.05)
    return {"log": ["drain_leave"]}


def _process_backends() -> list[int]:
    """The PostgreSQL backends of this process's TCP connections (matched by the
    client's address and port, as the server sees them), but the caller's."""
    import psutil  # only here: a worker that never drills need not load it

    ends = [
        f"{c.laddr.ip}:{c.laddr.port}"
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr
    ]
    with connection.cursor() as cur:
        cur.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()"
            " AND host(client_addr) || ':' || client_port = ANY(%s)",
            [ends],
        )
        return [pid for (pid,) in cur.fetchall()]


def database_drop(state: DrillState, config: RunnableConfig) -> dict:
    if connection.vendor == "postgresql" and executed(config, "database_drop") == 0:
        with sql.connection_as_found("default"):
            pids = _process_backends()
            # Counted first: once they are gone, this thread's next connection from the
            # pool may be one of them.
            executed(config, "database_dropped", backends=len(pids))
            with connection.cursor() as cur:
                for pid in pids:
                    cur.execute("SELECT pg_terminate_backend(%s)", [pid])
    return {"log": ["database_drop"]}


async def timeout_sleeper(state: DrillState, config: RunnableConfig) -> dict:
    await asyncio.to_thread(executed, config, "timeout_sleeper")
    await asyncio.sleep(SLEEP)
    return {"log": ["timeout_sleeper"]}


def timeout_handled(state: DrillState, error: NodeError, config: RunnableConfig) -> Command:
    executed(config, "timeout_handled", error=type(error.error).__name__)
    return Command(update={"log": ["timeout_handled"]}, goto=END)


def retry_flaky(state: DrillState, config: RunnableConfig, runtime: Runtime) -> dict:
    executed(config, "retry_flaky", node_attempt=runtime.execution_info.node_attempt)
    raise ConnectionError("the drill's flaky service is down")


def retry_fallback(state: DrillState, error: NodeError, config: RunnableConfig) -> Command:
    executed(config, "retry_fallback", error=type(error.error).__name__)
    return Command(update={"log": ["retry_fallback"]}, goto=END)


def route(state: DrillState) -> str:
    return PATHS[state["drill"]][0]


def build_graph() -> StateGraph:
    builder = StateGraph(DrillState, input_schema=DrillInput)
    own = {
        "kill_victim": kill_victim,
        "drain_leave": drain_leave,
        "database_drop": database_drop,
    }
    for path in ("drain", "database"):
        nodes = PATHS[path]
        for node in nodes:
            builder.add_node(node, own.get(node) or _counted(node))
        for a, b in itertools.pairwise(nodes):
            builder.add_edge(a, b)
        builder.add_edge(nodes[-1], END)
    # The victim shares its super-step with a sibling that finishes first.
    for node in PATHS["kill"]:
        builder.add_node(node, own.get(node) or _counted(node))
    builder.add_edge("kill_before", "kill_victim")
    builder.add_edge("kill_before", "kill_sibling")
    builder.add_edge(["kill_victim", "kill_sibling"], "kill_after")
    builder.add_edge("kill_after", END)
    builder.add_node(
        "timeout_sleeper",
        timeout_sleeper,
        timeout=TimeoutPolicy(run_timeout=TIMEOUT),
        error_handler=timeout_handled,
    )
    builder.add_node(
        "retry_flaky",
        retry_flaky,
        retry_policy=RetryPolicy(
            max_attempts=RETRY_ATTEMPTS,
            initial_interval=0.05,
            jitter=False,
            retry_on=ConnectionError,
        ),
        error_handler=retry_fallback,
    )
    builder.add_edge("timeout_sleeper", END)
    builder.add_edge("retry_flaky", END)
    builder.add_conditional_edges(START, route, [nodes[0] for nodes in PATHS.values()])
    return builder
