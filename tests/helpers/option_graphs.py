"""A graph for the run options' tests (``options``, registered with the tests' graphs):
``read`` records what the run's config and runtime context told it, ``ask`` stops at an
``interrupt()`` and records the answer, ``finish`` records that it ran; ``pick`` runs
only when a command sends it (``goto`` or a ``Send``), and records its input.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt
from typing_extensions import TypedDict


@dataclass
class Who:
    user: str = "nobody"


class Seen(TypedDict, total=False):
    topic: str
    log: Annotated[list[str], operator.add]


def read(state: Seen, config: RunnableConfig, runtime: Runtime[Who]) -> dict:
    configurable = config["configurable"]
    return {
        "log": [
            f"x={configurable.get('x')}",
            f"own_thread={configurable.get('thread_id') != 'theirs'}",
            f"user={runtime.context.user if runtime.context else None}",
            f"tags={','.join(t for t in config.get('tags', []) if t.startswith('t-'))}",
            f"limit={config.get('recursion_limit')}",
        ]
    }


def ask(state: Seen) -> dict:
    return {"log": [f"answer={interrupt({'question': 'go on?'})}"]}


def finish(state: Seen) -> dict:
    return {"log": ["finish"]}


def pick(state: Seen) -> dict:
    return {"log": [f"pick={state.get('topic')}"]}


def build_options() -> StateGraph:
    builder = StateGraph(Seen, context_schema=Who)
    builder.add_node("read", read)
    builder.add_node("ask", ask)
    builder.add_node("finish", finish)
    builder.add_node("pick", pick)
    builder.add_edge(START, "read")
    builder.add_edge("read", "ask")
    builder.add_edge("ask", "finish")
    builder.add_edge("finish", END)
    builder.add_edge("pick", END)
    return builder
