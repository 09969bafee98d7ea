"""The outbox rule (``durable.engine.queue.unsent``): which pending runs the reaper sends,
on rows written by hand, without a broker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from durable.engine import queue
from durable.models import Run, Tenant, Thread

pytestmark = pytest.mark.django_db

LEASE = 30.0


def a_thread(name: str) -> Thread:
    return Thread.objects.create(
        tenant=Tenant.default(), thread_id=name, name=name, graph="expense_approval"
    )


def a_run(thread: Thread, status=Run.Status.PENDING, sent_ago: float | None = None) -> Run:
    """A run of ``thread``; ``sent_ago``: seconds since its message was sent (``None``:
    never sent, or its send failed)."""
    sent = None if sent_ago is None else timezone.now() - timedelta(seconds=sent_ago)
    return Run.objects.create(
        thread=thread, graph=thread.graph, kind=Run.Kind.START, status=status, dispatched_at=sent
    )


def test_the_runs_to_send_are_those_whose_turn_it_is_and_whose_message_is_not_on_its_way(
    settings,
):
    settings.DURABLE_RUN_LEASE_SECONDS = LEASE
    a_run(a_thread("never-sent"))
    a_run(a_thread("lost"), sent_ago=LEASE + 1)
    a_run(a_thread("on-its-way"), sent_ago=LEASE - 5)
    busy = a_thread("behind-a-running-run")
    a_run(busy, Run.Status.RUNNING)
    a_run(busy)
    queued = a_thread("queued")
    first = a_run(queued, sent_ago=LEASE + 1)
    a_run(queued)  # behind the first, never sent
    a_run(a_thread("ended"), Run.Status.SUCCESS)

    found = queue.unsent(timezone.now())

    assert sorted(found.values_list("thread__name", flat=True)) == [
        "lost",
        "never-sent",
        "queued",
    ]
    assert found.get(thread=queued) == first
