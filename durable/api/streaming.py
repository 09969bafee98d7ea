"""A run's recorded events as the Agent Server's stream events: which RunEvents a stream
asked for with ``stream_mode`` carries, under which SSE event name, with what data.

The worker records LangGraph's chunks as they come (``durable.engine.execution``); the
stream modes that are views of the same chunks are shaped here, as the Agent Server
shapes them (``langgraph_api/stream.py``, ``astream_state``):

- ``values``, ``updates``, ``custom``, ``tasks``, ``debug``, ``checkpoints``: the chunk
  as it is, as ``event: mode``, or ``mode|ns`` for a subgraph's (``ns``: its
  ``"node:task_id"`` parts joined by ``|``) when the stream asked for subgraphs;
- ``messages-tuple``: each of LangGraph's ``messages`` chunks as ``event: messages``,
  data ``[message, metadata]`` (a token's ``AIMessageChunk`` and where it came from:
  ``langgraph_node``, ``langgraph_step``...). A stream without subgraphs gets what
  LangGraph's ``messages`` mode without subgraphs yields: the graph's own chunks and,
  for a subgraph's reply, the whole message from the parent's node that ran it
  (``durable.engine.parent_messages``), which a stream with subgraphs gets as the
  subgraph's tokens instead;
- ``messages``: the same chunks gathered per message id: ``messages/metadata``
  (``{id: {"metadata": ...}}``, once per message), then ``messages/partial`` with the
  message so far (the chunks added up), or ``messages/complete`` for a message that came
  whole; data ``[message]``, never suffixed with a subgraph;
- ``events``: each ``astream_events`` v2 record (``on_chain_start``...) as
  ``event: events``.

LangGraph names the thread by its ``configurable.thread_id``, which is ours (a thread's
``Thread.thread_id``), not the id its client knows (``Thread.name``): a ``thread_id``
with our id in a chunk's metadata or config (``messages``, ``debug``, ``checkpoints``,
``events``) is sent as the client's.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessageChunk, message_chunk_to_message, messages_from_dict

from durable.engine.follow import Event
from durable.engine.parent_messages import PARENT_MESSAGES
from durable.values import jsonable

# RunEvents shown as they are, under their own name.
AS_RECORDED = ("values", "updates", "custom", "tasks", "debug", "checkpoints")
# The RunEvent that records LangGraph's messages chunks, and that of astream_events.
MESSAGES, EVENTS = "messages", "events"
# The RunEvents whose chunks carry LangGraph's thread id: in metadata, or in configs.
NAMING_THE_THREAD = (MESSAGES, "debug", "checkpoints", EVENTS)


class Shaper:
    """Turns one stream's RunEvents, in order, into its SSE events (``shape``). A
    ``messages`` stream adds up each message's chunks, so it must see a run's messages
    from its first, even when it sends only those after a reconnect's event."""

    def __init__(self, modes: list[str], subgraphs: bool, thread_ids: tuple[str, str] = ("", "")):
        """``thread_ids``: the thread's ``(thread_id, name)``, LangGraph's id for it and
        the client's."""
        self.modes = set(modes)
        self.subgraphs = subgraphs
        self._ours, self._theirs = thread_ids
        if self._ours == self._theirs:
            self._ours = ""  # nothing to rename
        self._messages: dict[str, Any] = {}  # message id -> the message so far

    @property
    def replays_messages(self) -> bool:
        return "messages" in self.modes

    def shape(self, event: Event) -> list[tuple[str, Any]]:
        """The ``(name, data)`` SSE events ``event`` gives this stream: none, one, or (a
        message's first chunk, in ``messages`` mode) two."""
        name = event.event
        if name == PARENT_MESSAGES:
            if self.subgraphs:
                return []
            name = MESSAGES
        elif event.ns and not self.subgraphs:
            return []
        suffix = f"|{event.ns}" if event.ns else ""
        data = event.data
        if name in NAMING_THE_THREAD and self._ours:
            data = self._renamed(data)
        if name in AS_RECORDED:
            return [(name + suffix, data)] if name in self.modes else []
        if name == MESSAGES:
            shaped = [("messages" + suffix, data)] if "messages-tuple" in self.modes else []
            if "messages" in self.modes:
                shaped += self._message(*data)
            return shaped
        if name == EVENTS and EVENTS in self.modes:
            return [(EVENTS, data)]
        return []

    def _renamed(self, data: Any) -> Any:
        """``data`` with each ``thread_id`` that is ours the client's; a copy where it
        changes (the event is shared by every stream of the run)."""
        if isinstance(data, dict):
            return {
                k: self._theirs if k == "thread_id" and v == self._ours else self._renamed(v)
                for k, v in data.items()
            }
        if isinstance(data, list):
            return [self._renamed(v) for v in data]
        return data

    def _message(self, data: Any, metadata: Any) -> list[tuple[str, Any]]:
        try:
            [message] = messages_from_dict([{"type": data.get("type"), "data": data}])
        except (AttributeError, TypeError, ValueError):  # not a LangChain message
            return []
        shaped = []
        known = self._messages.get(message.id)
        if known is None:
            shaped.append(("messages/metadata", {message.id: {"metadata": metadata}}))
        elif isinstance(known, BaseMessageChunk) and isinstance(message, BaseMessageChunk):
            message = known + message
        self._messages[message.id] = message
        if isinstance(message, BaseMessageChunk):
            shaped.append(("messages/partial", [jsonable(message_chunk_to_message(message))]))
        else:
            shaped.append(("messages/complete", [jsonable(message)]))
        return shaped
