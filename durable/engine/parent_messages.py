"""The ``messages`` chunks that LangGraph's stream without subgraphs yields and its
stream with subgraphs does not, recorded beside the run's own.

A run streams its graph once, with ``subgraphs=True`` (``durable.engine.execution``), and
each client picks its view with ``stream_subgraphs``. For every mode but ``messages`` the
view without subgraphs is the chunks of the graph itself (namespace ``()``). Not for
``messages``: LangGraph's ``StreamMessagesHandler`` (``langgraph/pregel/_messages.py``)
without ``subgraphs`` ignores a subgraph's chat model, and when the parent's node that ran
the subgraph ends it yields the messages of that node's output it has not seen, whole,
from the parent's node. With ``subgraphs`` it has seen them (as the subgraph's tokens),
so it yields nothing there. Those messages are what ``ParentView`` finds: it runs two of
LangGraph's own handlers as the run's callbacks, one without ``subgraphs`` and one with
(which sees what the run's own handler sees), and keeps what the first yields at a node's
end that the second has already seen.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.pregel._messages import StreamMessagesHandler

# The RunEvent of such a chunk: data ``[message, metadata]``, as a ``messages`` one.
PARENT_MESSAGES = "messages/parent"


class ParentView:
    """Pass ``callbacks`` in the run's config, ahead of LangGraph's own handler (a
    config's callbacks come first), and ``take`` what was found, in order, before each
    chunk of the stream is handled: a node's end comes before the chunks of its writes.
    ``take`` may be called from another thread than the graph's nodes."""

    def __init__(self) -> None:
        self._found: deque[tuple[Any, dict]] = deque()
        self._nested = StreamMessagesHandler(_ignore, subgraphs=True)
        self._parent = _ParentHandler(self._found, self._nested)

    @property
    def callbacks(self) -> list:
        # The parent's handler first, so that at a node's end it asks the nested one
        # what it had seen before that end.
        return [self._parent, self._nested]

    def take(self) -> list[tuple[Any, dict]]:
        """The ``(message, metadata)`` pairs found since the last call."""
        found = []
        while self._found:
            found.append(self._found.popleft())
        return found


def _ignore(chunk: Any) -> None:
    pass


class _ParentHandler(BaseCallbackHandler):
    """LangGraph's handler without subgraphs, keeping only what it yields at a node's
    end (``on_chain_end``) that the handler with subgraphs had seen: the rest it yields
    as the run's own handler does. It wraps LangGraph's handler rather than being one,
    since LangGraph drops a caller's handler without subgraphs from the graph it streams
    (``_streams_only_its_graph``), which its own is not. Nodes may end on several
    threads at once."""

    run_inline = True  # as LangGraph's: in the thread of the callback, in order

    def __init__(self, found: deque, nested: StreamMessagesHandler):
        self._handler = StreamMessagesHandler(self._yielded, subgraphs=False)
        self._found = found
        self._nested = nested
        self._ending = threading.local()

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> Any:
        return self._handler.on_chat_model_start(*args, **kwargs)

    def on_llm_new_token(self, *args: Any, **kwargs: Any) -> Any:
        return self._handler.on_llm_new_token(*args, **kwargs)

    def on_llm_end(self, *args: Any, **kwargs: Any) -> Any:
        return self._handler.on_llm_end(*args, **kwargs)

    def on_llm_error(self, *args: Any, **kwargs: Any) -> Any:
        return self._handler.on_llm_error(*args, **kwargs)

    def on_chain_start(self, *args: Any, **kwargs: Any) -> Any:
        return self._handler.on_chain_start(*args, **kwargs)

    def on_chain_error(self, *args: Any, **kwargs: Any) -> Any:
        return self._handler.on_chain_error(*args, **kwargs)

    def on_chain_end(self, *args: Any, **kwargs: Any) -> Any:
        self._ending.now = True
        try:
            return self._handler.on_chain_end(*args, **kwargs)
        finally:
            self._ending.now = False

    def _yielded(self, chunk: tuple) -> None:
        _ns, _mode, (message, metadata) = chunk
        if getattr(self._ending, "now", False) and message.id in self._nested.seen:
            self._found.append((message, metadata))
