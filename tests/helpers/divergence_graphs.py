"""Graphs for the replay divergence tests, registered in ``tests.helpers.graphs.GRAPHS``.

``coin``: ``prepare``, then ``toss`` picks ``heads`` or ``tails`` at random on each
execution, unless the file ``<dir>/side`` names the side (a test writes it between a run
and its replay, so that the replay takes the other path, never by chance), then the node
of that side. ``steady``: ``prepare``, ``double``, ``finish``: the same writes every time.
"""

from __future__ import annotations

import operator
import random
from pathlib import Path
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

SIDES = ("heads", "tails")


class Coin(TypedDict, total=False):
    dir: str
    side: str
    log: Annotated[list[str], operator.add]


def choose(directory: Path | str, side: str) -> None:
    """Make the next tosses of the ``coin`` graph run on ``directory`` land on ``side``."""
    (Path(directory) / "side").write_text(side)


def _toss(state: Coin) -> dict:
    chosen = Path(state["dir"]) / "side"
    side = chosen.read_text().strip() if chosen.exists() else random.choice(SIDES)
    return {"side": side, "log": [f"tossed {side}"]}


def build_coin() -> StateGraph:
    builder = StateGraph(Coin)
    builder.add_node("prepare", lambda state: {"log": ["prepared"]})
    builder.add_node("toss", _toss)
    builder.add_node("heads", lambda state: {"log": ["heads won"]})
    builder.add_node("tails", lambda state: {"log": ["tails won"]})
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "toss")
    builder.add_conditional_edges("toss", lambda state: state["side"], list(SIDES))
    builder.add_edge("heads", END)
    builder.add_edge("tails", END)
    return builder


class Steady(TypedDict, total=False):
    number: int
    log: Annotated[list[str], operator.add]


def build_steady() -> StateGraph:
    builder = StateGraph(Steady)
    builder.add_node("prepare", lambda state: {"log": ["prepared"]})
    builder.add_node("double", lambda state: {"number": state.get("number", 1) * 2})
    builder.add_node("finish", lambda state: {"log": [f"finished at {state['number']}"]})
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "double")
    builder.add_edge("double", "finish")
    builder.add_edge("finish", END)
    return builder
