"""Threads waiting for a human, as a queue: since when each interrupt waits, what it asks
(its action's name), its payload as text, and whether it is overdue, all in SQL so a
page's queries do not grow with the backlog.

What a waiting thread waits on is read from its newest run that ended ``interrupted``
(``Run.interrupts``, ``[{"id", "value"}]``, and ``Run.ended_at``, when the interrupt
arrived). A thread interrupted without such a run (its checkpoints written in another
way) counts from its own ``updated_at`` and has no action name.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import (
    DateTimeField,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce
from django.utils import timezone

from durable.models import Run, Thread

# Where the action's name sits in the first pending interrupt, by payload: a LangChain v1
# ``HITLRequest`` (its first action request), an agent-inbox ``HumanInterrupt`` passed
# alone, or one passed as a list of one (as agent-inbox asks).
ACTION_PATHS = (
    "interrupts__0__value__action_requests__0__name",
    "interrupts__0__value__action_request__action",
    "interrupts__0__value__0__action_request__action",
)


def _interrupted_run():
    return Run.objects.filter(thread=OuterRef("pk"), status=Run.Status.INTERRUPTED).order_by("-pk")


def waiting(queryset: QuerySet[Thread]) -> QuerySet[Thread]:
    """The ``interrupted`` threads of ``queryset``, annotated with ``waiting_since``
    (a datetime: when the newest interrupted run ended, else the thread's
    ``updated_at``) and ``action`` (the first pending interrupt's action name, or
    ``None`` for a payload that names none). ``payload`` (the pending interrupts as JSON
    text) is an alias to filter on, not selected."""
    run = _interrupted_run()
    return (
        queryset.filter(status=Thread.Status.INTERRUPTED)
        .annotate(
            waiting_since=Coalesce(Subquery(run.values("ended_at")[:1]), F("updated_at")),
            action=Subquery(run.annotate(name=Coalesce(*map(KT, ACTION_PATHS))).values("name")[:1]),
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
