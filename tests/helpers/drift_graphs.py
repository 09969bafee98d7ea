"""A graph whose structure changes between two deployments, for the schema-drift tests.

``drifting`` is built as version ``DRIFT_VERSION`` (the environment variable, ``1`` by
default) says, so a test "deploys" version 2 by starting a process with it set
(``tests.helpers.drift.deployed``):

- v1: state ``topic`` and ``verdict``; ``prepare`` → ``review`` (an ``interrupt()``
  asking about the topic) → ``finish``;
- v2: ``topic`` is renamed ``subject`` and ``review`` is renamed ``approve``;
- v3: v1's keys and nodes, but ``verdict`` is an integer.

``finish`` writes ``"<verdict>: <topic or subject>"`` to ``verdict``, so a test sees that
the migrated value reached the node that reads it.
"""

from __future__ import annotations

import os

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

GRAPHS = {"drifting": "tests.helpers.drift_graphs.build_drifting"}
VERSION_VARIABLE = "DRIFT_VERSION"


class V1(TypedDict):
    topic: str
    verdict: str


class V2(TypedDict):
    subject: str
    verdict: str


class V3(TypedDict):
    topic: str
    verdict: int


def deployed_version() -> int:
    return int(os.environ.get(VERSION_VARIABLE, "1"))


def build_drifting() -> StateGraph:
    version = deployed_version()
    v2 = version == 2
    key, asks = ("subject", "approve") if v2 else ("topic", "review")

    def prepare(state) -> dict:
        return {"verdict": "asked"}

    def ask(state) -> dict:
        return {"verdict": str(interrupt({"question": f"Approve {state[key]}?"}))}

    def finish(state) -> dict:
        return {"verdict": f"{state['verdict']}: {state[key]}"}

    builder = StateGraph({1: V1, 2: V2, 3: V3}[version])
    builder.add_node("prepare", prepare)
    builder.add_node(asks, ask)
    builder.add_node("finish", finish)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", asks)
    builder.add_edge(asks, "finish")
    builder.add_edge("finish", END)
    return builder
