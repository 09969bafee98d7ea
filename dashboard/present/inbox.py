"""One interrupted thread as the inbox shows it: what is pending, on which checkpoint,
since when (and whether that is overdue), the link to that checkpoint's JSON, and the
kind it shares with the entries it can be answered in bulk with."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from django.utils.timesince import timesince
from langgraph.types import StateSnapshot

from dashboard.present import interrupts
from dashboard.present.links import json_url
from durable.models import Thread

# Under a minute, ``timesince`` says "0 minutes": a wait that short is said in words.
JUST_NOW = timedelta(minutes=1)


def waited(since: datetime, now: datetime | None = None) -> str:
    """How long since ``since``, to one unit ("3 hours"), or ``"less than a minute"``."""
    now = now or timezone.now()
    return "less than a minute" if now - since < JUST_NOW else timesince(since, now, depth=1)


def ago(since: datetime, now: datetime | None = None) -> str:
    """When ``since`` was, said from now: ``"3 hours ago"``, or ``"just now"``."""
    now = now or timezone.now()
    return "just now" if now - since < JUST_NOW else f"{timesince(since, now, depth=1)} ago"


@dataclass
class Entry:
    """One interrupted thread in the inbox: its ``pending`` interrupts, the
    ``checkpoint_id`` they wait on (``""`` for a thread with no checkpoint), since when
    (``since``: when the interrupt arrived), whether that is longer ago than its
    tenant's ``overdue_after`` (``overdue``), the link to that checkpoint's JSON
    (``json_url``), and its answer ``form`` and ``close_form``, which the view sets."""

    thread: Thread
    pending: list
    checkpoint_id: str
    since: datetime | None
    json_url: str = ""
    overdue: bool = False
    form: Any = None
    close_form: Any = None

    @property
    def waited(self) -> str:
        """How long it has waited, to one unit ("3 hours", ``waited``)."""
        return waited(self.since) if self.since else ""

    @property
    def bulk_kind(self) -> str:
        """What entries answered together must share: ``"<graph> · <kind> · <action>"``
        for one interrupt with one action (a ``HITLRequest`` or an agent-inbox request),
        else ``""`` (the entry is answered on its own)."""
        if len(self.pending) != 1:
            return ""
        value = self.pending[0].value
        kind = interrupts.kind_of(value)
        if kind == interrupts.HITL:
            actions = interrupts.hitl_actions(value)
            if len(actions) != 1:
                return ""
            return f"{self.thread.graph} · HITL · {actions[0].name}"
        if kind == interrupts.HUMAN:
            return f"{self.thread.graph} · agent-inbox · {interrupts.human_request(value).action}"
        return ""


def entry_at(thread: Thread, state: StateSnapshot, now: datetime | None = None) -> Entry:
    """The inbox entry of ``thread`` at its latest ``state``, without its forms. The
    wait counts from ``thread.waiting_since`` when the queryset annotated it
    (``durable.reports.waiting``), else from the checkpoint's time."""
    checkpoint_id = state.config["configurable"].get("checkpoint_id", "")
    since = getattr(thread, "waiting_since", None)
    if since is None and state.created_at:
        since = datetime.fromisoformat(state.created_at)
    now = now or timezone.now()
    return Entry(
        thread=thread,
        pending=list(state.interrupts),
        checkpoint_id=checkpoint_id,
        since=since,
        json_url=json_url(thread, checkpoint_id) if checkpoint_id else "",
        overdue=bool(state.interrupts and since and now - since > thread.tenant.overdue_after),
    )
