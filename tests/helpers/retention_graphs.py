"""Graphs with long histories for the retention tests, registered in
``settings.DURABLE_GRAPHS`` for those tests only (the ``retention_graphs`` fixture of
``tests/conftest.py``), so other tests see the registry as the web and worker processes
do.

``retention_delta``: a ``DeltaChannel`` log (snapshot every 3 updates) that ``tick``
appends to ``steps`` times, with ``left`` and ``right`` in parallel every fifth tick,
then ``review`` interrupts. Its value is rebuilt from ancestors' writes, so pruning must
keep the checkpoints back to the last snapshot.

``retention_nested``: ``tick`` ``steps`` times, then ``approval``, a subgraph (its
checkpoints in their own namespace, ``approval:<task id>``) whose ``ask`` node
interrupts: the pending interrupt lives in the subgraph's namespace.
"""

from __future__ import annotations

import operator
from typing import Annotated

from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

GRAPHS = {
    "retention_delta": "tests.helpers.retention_graphs.build_delta",
    "retention_nested": "tests.helpers.retention_graphs.build_nested",
}
RECURSION_LIMIT = 500


def concat(state: list, batches: list) -> list:
    return state + [item for batch in batches for item in batch]


class DeltaState(TypedDict):
    n: int
    steps: int
    log: Annotated[list, DeltaChannel(concat, snapshot_frequency=3)]


def build_delta() -> StateGraph:
    def tick(state: DeltaState) -> dict:
        return {"n": state["n"] + 1, "log": [f"tick {state['n'] + 1}"]}

    def left(state: DeltaState) -> dict:
        return {"log": [f"left {state['n']}"]}

    def right(state: DeltaState) -> dict:
        return {"log": [f"right {state['n']}"]}

    def review(state: DeltaState) -> dict:
        answer = interrupt({"question": f"accept {len(state['log'])} entries?"})
        return {"log": [f"review: {answer}"]}

    def route(state: DeltaState) -> list[str] | str:
        if state["n"] >= state["steps"]:
            return "review"
        return ["left", "right"] if state["n"] % 5 == 0 else "tick"

    builder = StateGraph(DeltaState)
    for name, fn in (("tick", tick), ("left", left), ("right", right), ("review", review)):
        builder.add_node(name, fn)
    builder.add_edge(START, "tick")
    builder.add_conditional_edges("tick", route, ["tick", "left", "right", "review"])
    builder.add_edge("left", "tick")
    builder.add_edge("right", "tick")
    builder.add_edge("review", END)
    return builder


class NestedState(TypedDict):
    n: int
    steps: int
    notes: Annotated[list, operator.add]


def build_nested() -> StateGraph:
    def draft(state: NestedState) -> dict:
        return {"notes": [f"draft after {state['n']} ticks"]}

    def ask(state: NestedState) -> dict:
        answer = interrupt({"approve": state["notes"][-1]})
        return {"notes": [f"approval: {answer}"]}

    sub = StateGraph(NestedState)
    sub.add_node("draft", draft)
    sub.add_node("ask", ask)
    sub.add_edge(START, "draft")
    sub.add_edge("draft", "ask")
    sub.add_edge("ask", END)

    def tick(state: NestedState) -> dict:
        return {"n": state["n"] + 1, "notes": [f"tick {state['n'] + 1}"]}

    def route(state: NestedState) -> str:
        return "approval" if state["n"] >= state["steps"] else "tick"

    builder = StateGraph(NestedState)
    builder.add_node("tick", tick)
    builder.add_node("approval", sub.compile())
    builder.add_edge(START, "tick")
    builder.add_conditional_edges("tick", route, ["tick", "approval"])
    builder.add_edge("approval", END)
    return builder
