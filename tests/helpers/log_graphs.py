"""A graph whose nodes log, for the structured-log tests.

``logged``: ``plan`` then ``act``; each logs ``"<node> ran"`` (``LINE``) on this module's
logger, and ``act`` also prints one (``PRINTED``), which Celery logs for it.
"""

from __future__ import annotations

import logging
import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

logger = logging.getLogger(__name__)

LINE = "{} ran"
PRINTED = "act printed this"


class Logged(TypedDict, total=False):
    done: Annotated[list[str], operator.add]


def plan(state: Logged) -> dict:
    logger.info(LINE.format("plan"))
    return {"done": ["plan"]}


def act(state: Logged) -> dict:
    logger.info(LINE.format("act"))
    print(PRINTED)
    return {"done": ["act"]}


def build_logged() -> StateGraph:
    graph = StateGraph(Logged)
    graph.add_node("plan", plan)
    graph.add_node("act", act)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "act")
    graph.add_edge("act", END)
    return graph
