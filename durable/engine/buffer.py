"""A run's events in the worker, written in batches.

Each stream chunk and lifecycle change is stamped when it happens and buffered; a batch
is written (``durable.engine.records.insert_events``: one INSERT and one NOTIFY on
PostgreSQL) once its oldest has waited ``FLUSH_EVERY`` seconds, by the next chunk or by
the beat thread while a node runs (``durable.engine.lease``), and the last one in the
same transaction as the run's outcome. The first chunk of each stream mode the run was
asked for (``Run.stream_modes``: what its followers read, such as the first ``updates`` of
a stream or the first ``messages`` token) is ``urgent``: the beat thread, woken, writes it
at once with what waited before it, while the graph goes on. A client sees a run's first
event when it happens, not a batch later (on a short run, with the outcome); the modes
the engine records for itself stay batched.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from django.utils import timezone

from durable.engine import follow, records
from durable.engine.checks import langgraph_mode
from durable.engine.parent_messages import PARENT_MESSAGES
from durable.models import Run
from durable.values import json_text

# The longest a run's event waits in the worker before it is written (seconds), so that
# live progress stays live while events are written in batches.
FLUSH_EVERY = 0.1


class EventBuffer:
    """The events of one attempt at a run. Batches are written one at a time, in order,
    so ``seq`` follows the order of events; safe to use from the run's thread and the
    beat thread at once."""

    def __init__(self, run: Run):
        self.run = run
        self._buffer: list[records.Event] = []
        self._oldest: float | None = None  # when the oldest buffered event happened
        # The RunEvent names of the modes asked for (LangGraph names messages-tuple
        # chunks "messages"), and those this attempt has had chunks of.
        self._asked = {langgraph_mode(m) for m in run.stream_modes}
        if "messages" in self._asked:  # the first message of a stream without subgraphs
            self._asked.add(PARENT_MESSAGES)
        self._modes: set[str] = set()
        self._first_waiting = False  # a mode's first chunk is buffered
        self._lock = threading.Lock()  # the buffer
        self._writing = threading.Lock()  # one batch at a time

    def add(self, event: str, data: Any, ns: str = "") -> None:
        """Buffer an event; ``data`` is made JSON-safe (``values.json_text``)."""
        self.add_text(event, json_text(data), ns)

    def add_text(self, event: str, text: str, ns: str = "") -> None:
        item = records.Event(event, ns, text, timezone.now())
        with self._lock:
            if not self._buffer:
                self._oldest = time.monotonic()
            self._buffer.append(item)
            if event in self._asked and event not in self._modes:
                self._modes.add(event)
                self._first_waiting = True

    def due(self) -> bool:
        """Whether the oldest buffered event has waited ``FLUSH_EVERY``."""
        oldest = self._oldest
        return oldest is not None and time.monotonic() - oldest >= FLUSH_EVERY

    def urgent(self) -> bool:
        """Whether the first chunk of a mode asked for waits: to be written now."""
        return self._first_waiting

    def flush(self) -> None:
        """Write the buffered events, unless the run was handed to another attempt
        (whose events they are not)."""
        with self._writing:
            first_waiting = self._first_waiting
            batch = self.take()
            try:
                written = records.insert_events(self.run, batch)
            except Exception:  # kept for the next try
                with self._lock:
                    self._buffer[:0] = batch
                    self._oldest = time.monotonic()
                    self._first_waiting = first_waiting
                raise
            if written:  # this process's own followers need not wait for a notification
                follow.wake_here(self.run.pk, chunks_only=not records.changes_status(batch))

    def take(self) -> list[records.Event]:
        """The buffered events, which the caller writes."""
        with self._lock:
            batch, self._buffer, self._oldest = self._buffer, [], None
            self._first_waiting = False
        return batch
