"""Stateless runs, bulk cancels, cancelling with rollback and the thread stream, through
the official ``langgraph-sdk`` client against the console served by uvicorn (``web``)
with a real Celery worker."""

from __future__ import annotations

import pytest
from langgraph_sdk import get_sync_client

from durable.models import AuditEvent, Checkpoint, Run, Thread
from tests.helpers.graphs import release, runs_of
from tests.helpers.runs import draining
from tests.helpers.threads import EXPENSE
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

APPROVE = {"decisions": [{"type": "approve"}]}


@pytest.fixture
def client(web, api_key):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk:
        yield sdk


def probe_input(directory) -> dict:
    return {"dir": str(directory), "log": []}


def test_stateless_runs_run_on_a_thread_of_their_own(client, worker):
    """``on_completion`` ``delete`` (the default) deletes the run's thread once it has
    ended, ``keep`` keeps it; waited for, streamed, or in the background."""
    kept = client.runs.wait(None, "expense_approval", input=EXPENSE, on_completion="keep")
    assert kept["__interrupt__"][0]["value"]["action_requests"][0]["name"] == "pay_expense"
    [thread] = Thread.objects.all()
    assert thread.status == "interrupted"
    assert Run.objects.get().on_completion == "keep"

    out = client.runs.wait(None, "expense_approval", input=EXPENSE)
    assert "__interrupt__" in out
    assert list(Thread.objects.values_list("pk", flat=True)) == [thread.pk]

    parts = list(client.runs.stream(None, "expense_approval", input=EXPENSE, stream_mode="updates"))
    assert parts[0].event == "metadata"
    assert any(p.event == "updates" and "validate" in p.data for p in parts)
    assert list(Thread.objects.values_list("pk", flat=True)) == [thread.pk]

    # In the background: no request waits, so the worker's reaper deletes the thread.
    batch = client.runs.create_batch(
        [
            {"assistant_id": "expense_approval", "input": EXPENSE},
            {"assistant_id": "expense_approval", "input": EXPENSE, "on_completion": "keep"},
        ]
    )
    assert [r["status"] for r in batch] == ["pending", "pending"]
    gone, stays = batch
    wait_for(
        lambda: not Thread.objects.filter(name=gone["thread_id"]).exists(),
        message="the background stateless run's thread to be deleted",
    )
    wait_for(
        lambda: Run.objects.get(pk=stays["run_id"]).status == "interrupted",
        message="the kept run to stop at its interrupt",
    )
    assert set(Thread.objects.values_list("name", flat=True)) == {
        thread.name,
        stays["thread_id"],
    }
    started = client.runs.create(None, "expense_approval", input=EXPENSE)
    wait_for(
        lambda: not Thread.objects.filter(name=started["thread_id"]).exists(),
        message="the stateless run's thread to be deleted",
    )


def test_bulk_cancel_and_rollback(client, worker, tmp_path):
    """``POST /runs/cancel`` by run ids and by status; ``action=rollback`` deletes the
    run and the checkpoints it wrote once it has stopped."""
    first = client.threads.create()["thread_id"]
    run = client.runs.create(first, "probe", input=probe_input(tmp_path))
    wait_for(lambda: runs_of(tmp_path, "slow") == 1, message="the probe's slow node")
    queued = client.runs.create(
        first, "probe", input=probe_input(tmp_path), multitask_strategy="enqueue"
    )
    client.runs.cancel_many(thread_id=first, run_ids=[queued["run_id"]])
    assert client.runs.get(first, queued["run_id"])["status"] == "interrupted"
    assert client.runs.get(first, run["run_id"])["status"] == "running"
    # A pending run rolled back is gone at once.
    doomed = client.runs.create(
        first, "probe", input=probe_input(tmp_path), multitask_strategy="enqueue"
    )
    assert client.runs.cancel(first, doomed["run_id"], action="rollback") is None
    assert not Run.objects.filter(pk=doomed["run_id"]).exists()

    # Rolled back: it stops at its super-step's end, and it and its checkpoints go.
    client.runs.cancel(first, run["run_id"], action="rollback")
    draining(Run.objects.get(pk=run["run_id"]), "rollback")
    release(tmp_path)
    wait_for(lambda: not Run.objects.filter(pk=run["run_id"]).exists(), message="the rollback")
    thread = Thread.objects.get(name=first)
    assert not Checkpoint.objects.filter(
        thread_id=thread.thread_id, metadata__run_id=run["run_id"]
    ).exists()
    assert client.threads.get(first)["status"] == "idle"
    assert AuditEvent.objects.filter(
        action="cancel", run_id=run["run_id"], detail__action="rollback"
    ).exists()

    # By status: every pending run of the tenant.
    second = client.threads.create()["thread_id"]
    (tmp_path / "release").unlink()
    blocking = client.runs.create(second, "probe", input=probe_input(tmp_path))
    wait_for(lambda: runs_of(tmp_path, "slow") == 2, message="the second probe's slow node")
    pending = client.runs.create(
        second, "probe", input=probe_input(tmp_path), multitask_strategy="enqueue"
    )
    client.runs.cancel_many(status="pending")
    assert client.runs.get(second, pending["run_id"])["status"] == "interrupted"
    assert client.runs.list(second, status="interrupted")[0]["run_id"] == pending["run_id"]
    client.runs.cancel_many(status="all")
    draining(Run.objects.get(pk=blocking["run_id"]), "cancel")
    release(tmp_path)
    assert client.runs.join(second, blocking["run_id"]) is not None
    assert client.runs.get(second, blocking["run_id"])["status"] == "interrupted"


def test_joining_a_threads_stream_follows_its_runs(client, worker):
    """``GET /threads/{id}/stream``: each run's events, then ``run_done``; a stream
    from the start (``Last-Event-ID: -``) carries every run."""
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "expense_approval", input=EXPENSE)
    client.runs.wait(thread_id, "expense_approval", command={"resume": APPROVE})
    parts = client.threads.join_stream(thread_id, last_event_id="-")
    seen = []
    for part in parts:
        seen.append((part.event, part.data))
        if sum(1 for e, d in seen if e == "metadata" and d.get("status") == "run_done") == 2:
            break
    parts.close()  # the stream stays open for the next run until its client leaves
    runs = [d["run_id"] for e, d in seen if e == "metadata" and "attempt" in d]
    assert runs == [r["run_id"] for r in reversed(client.runs.list(thread_id))]
    assert ("values", client.threads.get_state(thread_id)["values"]) in seen
    lifecycle = client.threads.join_stream(thread_id, stream_mode="lifecycle", last_event_id="-")
    events = [next(lifecycle) for _ in range(4)]
    lifecycle.close()
    assert [e.event for e in events] == ["metadata"] * 4
    assert [e.data.get("status") for e in events] == [None, "run_done", None, "run_done"]
