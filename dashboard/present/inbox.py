"""One interrupted thread as the inbox shows it: what is pending, on which checkpoint,
since when, and the link to that checkpoint's JSON."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.types import StateSnapshot

from dashboard.present.links import json_url
from durable.models import Thread


@dataclass
class Entry:
    """One interrupted thread in the inbox: its ``pending`` interrupts, the
    ``checkpoint_id`` they wait on (``""`` for a thread with no checkpoint), since when
    (``since``), the link to that checkpoint's JSON (``json_url``), and its answer
    ``form`` and ``close_form``, which the view sets."""

    thread: Thread
    pending: list
    checkpoint_id: str
    since: datetime | None
    json_url: str = ""
    form: Any = None
    close_form: Any = None


def entry_at(thread: Thread, state: StateSnapshot) -> Entry:
    """The inbox entry of ``thread`` at its latest ``state``, without its forms."""
    checkpoint_id = state.config["configurable"].get("checkpoint_id", "")
    return Entry(
        thread=thread,
        pending=list(state.interrupts),
        checkpoint_id=checkpoint_id,
        since=datetime.fromisoformat(state.created_at) if state.created_at else None,
        json_url=json_url(thread, checkpoint_id) if checkpoint_id else "",
    )
