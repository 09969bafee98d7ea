"""Graphs for the run engine's tests (``GRAPHS``), registered by ``tests/conftest.py`` in
the test process and in the processes it starts (``DURABLE_EXTRA_GRAPHS``).

``probe``: ``fast`` and ``slow`` run in parallel in one super-step, then ``after``.
Each node appends a line to ``<dir>/<node>`` when it starts, so a test counts how many
times each one ran, across worker processes. ``slow`` then waits until the test creates
``<dir>/release`` (so a test decides when the super-step may end, instead of guessing
how long it lasts); ``fast`` writes a custom stream event.

``nested``: ``prepare``, then two subgraph nodes side by side, each of which stops at an
``interrupt()`` inside its subgraph; answered by interrupt id, each records its answer.

``counted``: ``first``, then ``left`` and ``right`` side by side, then ``last``, each
taking ``COUNTED_STEP_SECONDS``. Each execution of a node makes a token
(``<node>:<uuid>``), appends it to ``<dir>/<node>`` when it starts and returns it in
``log``: a test tells which execution's writes were saved (``executions``). The node
named ``fail`` raises ``ValueError`` instead.
"""

from __future__ import annotations

import operator
import time
import uuid
from pathlib import Path
from typing import Annotated

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

from tests.helpers.drift_graphs import GRAPHS as DRIFT_GRAPHS
from tests.helpers.stream_graphs import GRAPHS as STREAM_GRAPHS

GRAPHS = {
    "probe": "tests.helpers.graphs.build_probe",
    "nested": "tests.helpers.graphs.build_nested",
    "counted": "tests.helpers.graphs.build_counted",
    "options": "tests.helpers.option_graphs.build_options",
    **DRIFT_GRAPHS,
    "coin": "tests.helpers.divergence_graphs.build_coin",
    "steady": "tests.helpers.divergence_graphs.build_steady",
    "redaction": "tests.helpers.redaction_graphs.build_redaction",
    "logged": "tests.helpers.log_graphs.build_logged",
    **STREAM_GRAPHS,
}

# How long ``slow`` waits for its release at most: far longer than any test needs.
RELEASE_WAIT_SECONDS = 120


class Probe(TypedDict):
    dir: str
    log: Annotated[list[str], operator.add]


def runs_of(directory: Path | str, node: str) -> int:
    """How many times ``node`` started, in any process."""
    path = Path(directory) / node
    return len(path.read_text().splitlines()) if path.exists() else 0


def release(directory: Path | str) -> None:
    (Path(directory) / "release").touch()


def _started(state: Probe, node: str) -> None:
    with (Path(state["dir"]) / node).open("a") as f:
        f.write("ran\n")


def fast(state: Probe) -> dict:
    _started(state, "fast")
    get_stream_writer()({"node": "fast", "progress": 1.0})
    return {"log": ["fast"]}


def slow(state: Probe) -> dict:
    _started(state, "slow")
    gate = Path(state["dir"]) / "release"
    deadline = time.monotonic() + RELEASE_WAIT_SECONDS
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return {"log": ["slow"]}


def after(state: Probe) -> dict:
    _started(state, "after")
    return {"log": ["after"]}


def build_probe() -> StateGraph:
    builder = StateGraph(Probe)
    builder.add_node("fast", fast)
    builder.add_node("slow", slow)
    builder.add_node("after", after)
    builder.add_edge(START, "fast")
    builder.add_edge(START, "slow")
    builder.add_edge(["fast", "slow"], "after")
    builder.add_edge("after", END)
    return builder


class Nested(TypedDict):
    answers: Annotated[list[str], operator.add]


def _asking(name: str):
    def ask(state: Nested) -> dict:
        return {"answers": [f"{name}: {interrupt({'question': f'{name}?'})}"]}

    builder = StateGraph(Nested)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile()


def build_nested() -> StateGraph:
    builder = StateGraph(Nested)
    builder.add_node("prepare", lambda state: {"answers": []})
    builder.add_node("left", _asking("left"))
    builder.add_node("right", _asking("right"))
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "left")
    builder.add_edge("prepare", "right")
    builder.add_edge(["left", "right"], END)
    return builder


COUNTED_NODES = ("first", "left", "right", "last")
COUNTED_STEP_SECONDS = 0.2


class Counted(TypedDict):
    dir: str
    fail: str
    log: Annotated[list[str], operator.add]


def executions(directory: Path | str, node: str) -> list[str]:
    """The tokens of ``node``'s executions, in the order they started, in any process."""
    path = Path(directory) / node
    return path.read_text().splitlines() if path.exists() else []


def _counted(name: str):
    def node(state: Counted) -> dict:
        token = f"{name}:{uuid.uuid4().hex}"
        with (Path(state["dir"]) / name).open("a") as f:
            f.write(token + "\n")
        time.sleep(COUNTED_STEP_SECONDS)
        if state["fail"] == name:
            raise ValueError(f"{name} was told to fail")
        return {"log": [token]}

    return node


def build_counted() -> StateGraph:
    builder = StateGraph(Counted)
    for name in COUNTED_NODES:
        builder.add_node(name, _counted(name))
    builder.add_edge(START, "first")
    builder.add_edge("first", "left")
    builder.add_edge("first", "right")
    builder.add_edge(["left", "right"], "last")
    builder.add_edge("last", END)
    return builder
