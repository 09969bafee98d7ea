"""Threads for the retention tests: long histories of ``tests.helpers.retention_graphs``
run here up to their interrupt (``history``), their root checkpoints (``root_ids``), and
ageing them past a policy's ``max_age`` (``age``)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from durable import engine
from durable.graphs import get_graph
from durable.models import Checkpoint, Tenant, Thread
from tests.helpers.retention_graphs import RECURSION_LIMIT

OLD = timedelta(days=40)
MONTH = timedelta(days=30)


def history(
    graph: str, steps: int = 20, *, tenant: Tenant | None = None, name: str | None = None
) -> Thread:
    """A thread of one of ``tests.helpers.retention_graphs``' graphs, run here up to its
    interrupt after ``steps`` ticks."""
    thread = engine.create_thread(graph, tenant=tenant, name=name)
    state = {"retention_delta": "log", "retention_nested": "notes"}[graph]
    get_graph(graph).invoke(
        {"n": 0, "steps": steps, state: []},
        {**engine.config_for(thread), "recursion_limit": RECURSION_LIMIT},
    )
    Thread.objects.filter(pk=thread.pk).update(status=Thread.Status.INTERRUPTED)
    thread.refresh_from_db()
    return thread


def root_ids(thread: Thread) -> list[str]:
    """The thread's root checkpoint ids, newest first."""
    return list(
        Checkpoint.objects.filter(thread_id=thread.thread_id, checkpoint_ns="")
        .order_by("-checkpoint_id")
        .values_list("checkpoint_id", flat=True)
    )


def age(*threads: Thread, by: timedelta = OLD) -> None:
    """Make ``threads`` last updated ``by`` ago."""
    Thread.objects.filter(pk__in=[t.pk for t in threads]).update(updated_at=timezone.now() - by)
