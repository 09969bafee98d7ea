"""The run engine's statements (durable.engine.records) against the real database, on runs no
worker gets a message for: each test plays the worker itself."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from durable.engine import records
from durable.models import Run, RunEvent, Tenant, Thread

pytestmark = pytest.mark.django_db(transaction=True)

LEASE = 30.0


def pending(thread: Thread, **fields) -> Run:
    """A pending run with no message on its way: ``dispatched_at`` is set ahead, so no
    reaper sends one either."""
    later = timezone.now() + timedelta(hours=1)
    return Run.objects.create(
        thread=thread, graph=thread.graph, kind=Run.Kind.START, dispatched_at=later, **fields
    )


@pytest.fixture
def thread() -> Thread:
    return Thread.objects.create(
        tenant=Tenant.default(), thread_id="records", name="records", graph="expense_approval"
    )


def event(name: str) -> records.Event:
    return records.Event("custom", "", json.dumps({"name": name}), timezone.now())


def test_a_claim_takes_the_run_and_its_lease(thread):
    run = pending(thread)
    before = timezone.now()
    claimed, ok = records.claim(run.pk, "w1", LEASE)
    assert ok
    assert (claimed.status, claimed.attempt, claimed.worker) == ("running", 1, "w1")
    assert claimed.thread.thread_id == "records"
    assert before <= claimed.started_at <= timezone.now()
    assert claimed.lease_expires_at >= claimed.started_at + timedelta(seconds=LEASE)
    assert claimed.checkpoint_id == ""  # the thread has no checkpoint yet
    assert Run.objects.get(pk=run.pk).status == "running"
    # Claimed once only.
    again, ok = records.claim(run.pk, "w2", LEASE)
    assert not ok and (again.attempt, again.worker) == (1, "w1")


def test_a_run_behind_an_active_one_waits_and_gives_its_message_back(thread):
    first, second = pending(thread), pending(thread)
    waiting, ok = records.claim(second.pk, "w1", LEASE)
    assert not ok
    assert (waiting.status, waiting.dispatched_at) == ("pending", None)
    assert records.claim(first.pk, "w1", LEASE)[1]
    assert not records.claim(second.pk, "w2", LEASE)[1]  # the first is running now


def test_a_missing_run_is_not_claimed(thread):
    assert records.claim(10**9, "w1", LEASE) == (None, False)


def test_the_outcome_ends_the_run_writes_its_last_events_and_settles_the_thread(thread):
    run, _ = records.claim(pending(thread).pk, "w1", LEASE)
    assert records.insert_events(run, [event("a")])
    interrupts = [{"id": "i1", "value": {"question": "?"}}]
    status = Run.Status.INTERRUPTED
    events, waiting = [event("b"), event("c")], Thread.Status.INTERRUPTED
    outcome = records.finish(run, status, {"interrupts": interrupts}, events, thread_status=waiting)
    assert outcome == records.ENDED
    ended = Run.objects.get(pk=run.pk)
    assert (ended.status, ended.interrupts, ended.lease_expires_at) == (status, interrupts, None)
    assert ended.ended_at >= ended.started_at
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.INTERRUPTED
    found = RunEvent.objects.filter(run=run).order_by("seq")
    assert [(e.seq, e.data["name"]) for e in found] == [(1, "a"), (2, "b"), (3, "c")]


def test_a_stale_attempt_changes_nothing(thread):
    run, _ = records.claim(pending(thread).pk, "w1", LEASE)
    stale = Run(pk=run.pk, thread=thread, attempt=run.attempt - 1)
    assert not records.insert_events(stale, [event("a")])
    done = {"interrupts": []}
    assert records.finish(stale, "success", done, [event("b")], thread_status="idle") == "lost"
    assert Run.objects.get(pk=run.pk).status == "running"
    assert not RunEvent.objects.filter(run=run).exists()
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.IDLE


def test_a_rollback_asked_while_the_run_ended_is_left_to_the_caller(thread):
    run, _ = records.claim(pending(thread).pk, "w1", LEASE)
    Run.objects.filter(pk=run.pk).update(stop_requested=Run.Stop.ROLLBACK)
    outcome = records.finish(run, "success", {"interrupts": []}, [event("b")], thread_status="idle")
    assert outcome == records.STOPPING
    assert Run.objects.get(pk=run.pk).status == "running"
    assert not RunEvent.objects.filter(run=run).exists()


def test_the_thread_stays_busy_while_another_run_waits(thread):
    Thread.objects.filter(pk=thread.pk).update(status=Thread.Status.BUSY)
    run, _ = records.claim(pending(thread).pk, "w1", LEASE)
    behind = pending(thread)
    # Its message is on its way (dispatched_at is set), so nothing is sent again.
    failed = {"error_type": "E"}
    assert records.finish(run, "error", failed, [], thread_status="error") == records.QUEUED
    assert Run.objects.get(pk=run.pk).error_type == "E"
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.BUSY
    assert Run.objects.get(pk=behind.pk).status == "pending"
