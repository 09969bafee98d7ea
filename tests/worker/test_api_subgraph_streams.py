"""A run's stream with and without ``stream_subgraphs``, through the official
``langgraph-sdk`` against the live server and a real worker, next to LangGraph's own
``graph.stream`` of the same graph with ``subgraphs`` the same: the same events, in the
same order, for ``messages-tuple``, ``updates``, ``values`` and ``custom``.

The graph (``tests/helpers/stream_graphs.py``) is ``prep -> child -> done``, ``child``
a subgraph whose node streams a chat model's reply: without subgraphs LangGraph yields
the reply whole, from the parent's ``child`` node; with them, as the subgraph's tokens.
"""

from __future__ import annotations

import re
import uuid

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_sdk import get_sync_client

from durable.values import jsonable
from examples.chat import reply_to
from tests.helpers.stream_graphs import build_subgraph_chat

pytestmark = pytest.mark.django_db(transaction=True)

HI = {"messages": [{"type": "human", "content": "hi"}]}
MODES = ["messages-tuple", "updates", "values", "custom"]
# What LangGraph itself puts in a messages chunk's metadata (the rest is the caller's
# config: our run id, the graph's version).
LANGGRAPH_METADATA = (
    "langgraph_step",
    "langgraph_node",
    "langgraph_triggers",
    "langgraph_path",
    "langgraph_checkpoint_ns",
    "checkpoint_ns",
)
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
def client(web, api_key):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk:
        yield sdk


def _same_shape(value):
    """``value`` without what differs between two runs of the graph: message ids, the
    task ids in namespaces, metadata that is not LangGraph's."""
    if isinstance(value, str):
        return UUID.sub("<uuid>", value)
    if isinstance(value, list):
        return [_same_shape(v) for v in value]
    if isinstance(value, dict):
        return {k: "<id>" if k == "id" else _same_shape(v) for k, v in value.items()}
    return value


def _event(name: str, data):
    if name.split("|")[0] == "messages":
        message, metadata = data
        data = [message, {k: metadata.get(k) for k in LANGGRAPH_METADATA}]
    return _same_shape(name), _same_shape(data)


def langgraph_events(subgraphs: bool) -> list[tuple]:
    """What LangGraph's own stream of the graph yields, as the Agent Server names it."""
    graph = build_subgraph_chat().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    modes = ["messages" if m == "messages-tuple" else m for m in MODES]
    stream = graph.stream(HI, config, stream_mode=modes, subgraphs=subgraphs)
    chunks = stream if subgraphs else (((), mode, chunk) for mode, chunk in stream)
    return [_event("|".join((mode, *ns)), jsonable(chunk)) for ns, mode, chunk in chunks]


@pytest.mark.parametrize("subgraphs", [False, True])
def test_a_subgraph_reply_streams_as_langgraph_streams_it(client, worker, subgraphs):
    thread_id = client.threads.create()["thread_id"]
    parts = list(
        client.runs.stream(
            thread_id,
            "subgraph_chat",
            input=HI,
            stream_mode=MODES,
            stream_subgraphs=subgraphs,
        )
    )
    assert parts[0].event == "metadata"
    ours = [_event(p.event, p.data) for p in parts[1:]]
    assert ours == langgraph_events(subgraphs)

    messages = [p.data for p in parts if p.event.startswith("messages")]
    if subgraphs:  # the subgraph's tokens, from its node
        names = {p.event for p in parts if p.event.startswith("messages")}
        assert len(names) == 1 and names.pop().startswith("messages|child:")
        assert "".join(m["content"] for m, _ in messages) == reply_to("hi")
        assert {meta["langgraph_node"] for _, meta in messages} == {"respond"}
    else:  # the reply, whole, from the parent's node that ran the subgraph
        [(message, meta)] = messages
        assert (message["type"], message["content"]) == ("ai", reply_to("hi"))
        assert meta["langgraph_node"] == "child"
        assert "custom" in {p.event for p in parts}

    # A join of the run, with the other choice, gets that choice's view.
    run_id = parts[0].data["run_id"]
    joined = client.runs.join_stream(
        thread_id, run_id, stream_mode=MODES, params={"stream_subgraphs": not subgraphs}
    )
    assert [_event(p.event, p.data) for p in joined][1:] == langgraph_events(not subgraphs)
