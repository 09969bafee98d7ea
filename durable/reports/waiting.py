"""Threads waiting for a human, as a queue: since when each interrupt waits, what it asks
(its action's name), its payload as text, and whether it is overdue, all in SQL so a
page's queries do not grow with the backlog.

A waiting thread is an ``interrupted`` one with an interrupt pending at its latest
checkpoint (an ``__interrupt__`` write on it): a thread is ``interrupted`` too when that
checkpoint merely has next tasks (an update or fork written without a run, a breakpoint),
and then nothing there is for a person to answer.

What a waiting thread waits on is read from its newest run that ended ``interrupted``
(``Run.interrupts``, ``[{"id", "value"}]``, and ``Run.ended_at``, when the interrupt
arrived). A thread interrupted without such a run (its checkpoints written in another
way) counts from its own ``updated_at`` and has no action name.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import (
    DateTimeField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
)
from django.db.models.functions import Cast, Coalesce
from django.utils import timezone

from durable.history import INTERRUPT
from durable.interrupt_payloads import action_name
from durable.models import Checkpoint, CheckpointWrite, Run, Thread


def _interrupted_run():
    return Run.objects.filter(thread=OuterRef("pk"), status=Run.Status.INTERRUPTED).order_by("-pk")


def interrupt_pending() -> Exists:
    """True for a thread (the outer row) whose latest root checkpoint has an interrupt
    pending: LangGraph's ``StateSnapshot.interrupts`` are read from these writes. A
    subgraph's interrupt counts too: its parent's task writes it at the root."""
    latest = Checkpoint.objects.filter(thread_id=OuterRef(OuterRef("thread_id")), checkpoint_ns="")
    return Exists(
        CheckpointWrite.objects.filter(
            thread_id=OuterRef("thread_id"),
            checkpoint_ns="",
            checkpoint_id=Subquery(latest.order_by("-checkpoint_id").values("checkpoint_id")[:1]),
            channel=INTERRUPT,
        )
    )


def awaiting_answer(queryset: QuerySet[Thread]) -> QuerySet[Thread]:
    """The threads of ``queryset`` waiting for an answer: ``interrupted``, with an
    interrupt pending at their latest checkpoint (``interrupt_pending``). The one rule
    of the inbox, the Operations page and ``durable_interrupts_waiting``."""
    return queryset.filter(interrupt_pending(), status=Thread.Status.INTERRUPTED)


def waiting(queryset: QuerySet[Thread]) -> QuerySet[Thread]:
    """The ``interrupted`` threads of ``queryset`` with an interrupt pending at their
    latest checkpoint (``interrupt_pending``), annotated with ``waiting_since``
    (a datetime: when the newest interrupted run ended, else the thread's
    ``updated_at``) and ``action`` (the first pending interrupt's action name, or
    ``None`` for a payload that names none). ``payload`` (the pending interrupts as JSON
    text) is an alias to filter on, not selected."""
    run = _interrupted_run()
    return (
        awaiting_answer(queryset)
        .annotate(
            waiting_since=Coalesce(Subquery(run.values("ended_at")[:1]), F("updated_at")),
            action=Subquery(
                run.annotate(name=action_name("interrupts__0__value")).values("name")[:1]
            ),
        )
        .alias(
            payload=Subquery(run.annotate(text=Cast("interrupts", TextField())).values("text")[:1])
        )
    )


def overdue_since(now: datetime | None = None) -> ExpressionWrapper:
    """The time before which a thread's interrupt is overdue: ``now`` minus its tenant's
    ``overdue_after``."""
    return ExpressionWrapper(
        Value(now or timezone.now()) - F("tenant__overdue_after"),
        output_field=DateTimeField(),
    )


def overdue(queryset: QuerySet[Thread], now: datetime | None = None) -> QuerySet[Thread]:
    """The threads of ``queryset`` whose interrupts have waited longer than their
    tenant's ``overdue_after``, annotated as ``waiting``."""
    return waiting(queryset).filter(waiting_since__lt=overdue_since(now))


def matching(queryset: QuerySet[Thread], action: str = "", text: str = "") -> QuerySet[Thread]:
    """``waiting`` threads of ``queryset`` whose first interrupt names ``action`` (``""``:
    any) and whose pending payloads contain ``text``, any case (``""``: any)."""
    condition = Q()
    if action:
        condition &= Q(action=action)
    if text:
        condition &= Q(payload__icontains=text)
    return queryset.filter(condition)
