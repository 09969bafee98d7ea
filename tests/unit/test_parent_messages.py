"""``ParentView``: the messages LangGraph's stream without subgraphs yields that its stream
with subgraphs does not, found beside a stream with subgraphs, for a graph whose own node
streams a chat model (none) and for one whose subgraph does (the reply, whole, once)."""

from __future__ import annotations

import uuid

from langgraph.checkpoint.memory import InMemorySaver

from durable.engine.parent_messages import ParentView
from examples.chat import build_graph as build_chat
from tests.helpers.stream_graphs import build_subgraph_chat

HI = {"messages": [{"type": "human", "content": "hi"}]}


def _config(**extra) -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}, **extra}


def _both_views(builder) -> tuple[list, list, list]:
    """LangGraph's root messages with subgraphs, those ParentView found beside them, and
    LangGraph's messages without subgraphs, each as ``(type, content, node)``."""
    graph = builder().compile(checkpointer=InMemorySaver())
    view = ParentView()
    root, found = [], []
    stream = graph.stream(
        HI, _config(callbacks=view.callbacks), stream_mode="messages", subgraphs=True
    )
    for ns, (message, meta) in stream:
        found += view.take()
        if not ns:
            root.append((message.type, message.content, meta["langgraph_node"]))
    found = [(m.type, m.content, meta["langgraph_node"]) for m, meta in found + view.take()]
    alone = [
        (m.type, m.content, meta["langgraph_node"])
        for m, meta in graph.stream(HI, _config(), stream_mode="messages", subgraphs=False)
    ]
    return root, found, alone


def test_a_graphs_own_chat_model_needs_nothing_more():
    root, found, alone = _both_views(build_chat)
    assert found == []
    assert root == alone and len(root) > 5


def test_a_subgraphs_reply_comes_whole_from_the_parents_node():
    root, found, alone = _both_views(build_subgraph_chat)
    assert root == []
    [(kind, content, node)] = found
    assert (kind, node) == ("ai", "child") and content.startswith("You said: hi.")
    assert root + found == alone
