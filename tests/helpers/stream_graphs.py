"""``subgraph_chat``: ``prep`` -> ``child`` -> ``done``, where ``child`` is a subgraph whose
``respond`` node streams examples/chat.py's chat model reply; ``prep`` and ``respond``
each write a custom stream event. What LangGraph streams of it differs with
``subgraphs``: the reply as the subgraph's tokens, or whole, from the parent's ``child``.
"""

from __future__ import annotations

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph

from examples.chat import respond

GRAPHS = {"subgraph_chat": "tests.helpers.stream_graphs.build_subgraph_chat"}


def _respond(state: MessagesState) -> dict:
    get_stream_writer()({"at": "respond"})
    return respond(state)


def _prep(state: MessagesState) -> dict:
    get_stream_writer()({"at": "prep"})
    return {}


def build_subgraph_chat() -> StateGraph:
    child = StateGraph(MessagesState)
    child.add_node("respond", _respond)
    child.add_edge(START, "respond")
    builder = StateGraph(MessagesState)
    builder.add_node("prep", _prep)
    builder.add_node("child", child.compile())
    builder.add_node("done", lambda state: {})
    builder.add_edge(START, "prep")
    builder.add_edge("prep", "child")
    builder.add_edge("child", "done")
    builder.add_edge("done", END)
    return builder
