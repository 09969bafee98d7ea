"""Runs executed by a real Celery worker process, persisted through DjangoSaver."""

from __future__ import annotations

import re
import threading
import time

import pytest
from django.db import connection

from durable import engine
from durable.engine.tasks import execute_run
from durable.models import Checkpoint, CheckpointBlob, CheckpointWrite, Run, Thread
from tests.helpers.processes import WORKER_APPLICATION_NAME, pg_connections
from tests.helpers.runs import finished
from tests.helpers.threads import EXPENSE
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def test_expense_approval_interrupts_then_pays_after_approval(worker):
    run = finished(engine.start("expense_approval", EXPENSE))
    assert run.status == Run.Status.INTERRUPTED
    [pending] = run.interrupts
    assert pending["value"]["action_requests"][0]["name"] == "pay_expense"
    assert pending["value"]["review_configs"][0]["allowed_decisions"] == [
        "approve",
        "edit",
        "reject",
    ]
    thread = Thread.objects.get(pk=run.thread_pk)
    assert thread.status == Thread.Status.INTERRUPTED
    assert [i.id for i in engine.pending_interrupts(thread)] == [pending["id"]]

    resumed = finished(engine.resume(thread, {"decisions": [{"type": "approve"}]}))

    assert resumed.status == Run.Status.SUCCESS
    thread.refresh_from_db()
    assert thread.status == Thread.Status.IDLE
    values = engine.thread_state(thread).values
    assert values["status"] == "paid"
    assert values["payment"]["payee"] == "Grace Hopper"
    assert values["payment"]["amount"] == 42.5
    # Every super-step landed in our tables, stamped with the run that wrote it.
    rows = Checkpoint.objects.filter(thread_id=thread.thread_id)
    history = engine.thread_history(thread)
    assert rows.count() == len(history)
    # input, validate, request_approval (interrupted); then the resume: pay, the end.
    assert [s.metadata["step"] for s in reversed(history)] == [-1, 0, 1, 2, 3]
    assert [s.next for s in reversed(history)] == [
        ("__start__",),
        ("validate",),
        ("request_approval",),
        ("pay",),
        (),
    ]
    assert {r.metadata["run_id"] for r in rows} == {str(run.pk), str(resumed.pk)}


def test_rejection_takes_the_reject_branch(worker):
    run = finished(engine.start("expense_approval", EXPENSE))
    thread = Thread.objects.get(pk=run.thread_pk)
    decision = {"type": "reject", "message": "Not a business expense"}
    finished(engine.resume(thread, {"decisions": [decision]}))
    values = engine.thread_state(thread).values
    assert values["status"] == "rejected"
    assert values["decision"] == decision
    assert "payment" not in values


def test_parallel_reviews_are_answered_together_by_interrupt_id(worker):
    run = finished(engine.start("parallel_review", {"document": "NDA"}))
    assert run.status == Run.Status.INTERRUPTED
    by_reviewer = {i["value"]["reviewer"]: i["id"] for i in run.interrupts}
    assert set(by_reviewer) == {"legal", "finance"}
    thread = Thread.objects.get(pk=run.thread_pk)
    # In the order the thread lists them (that of their tasks), whichever ended first.
    assert [i["id"] for i in run.interrupts] == [i.id for i in engine.pending_interrupts(thread)]

    resumed = finished(
        engine.resume(
            thread,
            answers={
                by_reviewer["legal"]: {"approved": True},
                by_reviewer["finance"]: {"approved": False, "comment": "Fee too high"},
            },
        )
    )

    assert resumed.status == Run.Status.SUCCESS
    values = engine.thread_state(thread).values
    assert values["verdict"] == "changes requested"
    assert sorted((r["reviewer"], r["approved"]) for r in values["reviews"]) == [
        ("finance", False),
        ("legal", True),
    ]


def test_a_failing_node_records_the_error_and_keeps_the_thread(worker):
    run = finished(engine.start("expense_approval", EXPENSE))
    thread = Thread.objects.get(pk=run.thread_pk)
    before = engine.thread_state(thread)
    # An answer the node cannot read: request_approval indexes decisions[0].
    failed = finished(engine.resume(thread, {"decisions": []}))
    assert failed.status == Run.Status.ERROR
    assert failed.error_type == "IndexError"
    assert "list index out of range" in failed.error_message
    thread.refresh_from_db()
    assert thread.status == Thread.Status.ERROR
    # Nothing is lost: the thread still stands at the interrupted checkpoint, with its
    # values, its next node and its interrupt, and the task carries the error.
    after = engine.thread_state(thread)
    assert after.config == before.config
    assert after.values == before.values
    assert after.next == ("request_approval",)
    assert [i.id for i in after.interrupts] == [i.id for i in before.interrupts]
    assert [t.error for t in after.tasks if t.error] != []
    assert CheckpointWrite.objects.filter(thread_id=thread.thread_id, channel="__error__").exists()


def test_unchanged_channels_are_not_copied_into_new_blobs(worker):
    run = finished(engine.start("expense_approval", EXPENSE))
    thread = Thread.objects.get(pk=run.thread_pk)
    finished(engine.resume(thread, {"decisions": [{"type": "approve"}]}))
    blobs = CheckpointBlob.objects.filter(thread_id=thread.thread_id)
    # One row per (channel, version): no channel has two rows at one version, and the
    # "problems" list, written once by validate, has exactly one blob.
    pairs = list(blobs.values_list("channel", "version"))
    assert len(pairs) == len(set(pairs))
    assert blobs.filter(channel="problems").count() == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="counts PostgreSQL backends")
def test_runs_leave_no_database_connection_open(worker):
    def worker_connections() -> int:
        return pg_connections(WORKER_APPLICATION_NAME)

    seen, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            seen.append(worker_connections())
            time.sleep(0.005)
        connection.close()

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        for _ in range(3):
            run = finished(engine.start("expense_approval", EXPENSE))
            thread = Thread.objects.get(pk=run.thread_pk)
            finished(engine.resume(thread, {"decisions": [{"type": "approve"}]}))
    finally:
        stop.set()
        sampler.join()
    assert max(seen) > 0, "the worker's connections were never seen: is PGAPPNAME set?"
    # The worker gives back what it opened: after each run its connections (those of
    # LangGraph's saver threads included) go back to its process's pool, which keeps
    # them for the next run and closes them once unused for
    # DURABLE_DB_POOL_MAX_IDLE_SECONDS (1 here); give it a moment, then there are none.
    wait_for(lambda: worker_connections() == 0, timeout=10, message="no worker connection")


def test_broker_survives_a_thousand_quick_enqueues(worker):
    """kombu's filesystem transport can crash a worker that reads a half-written message
    (kombu#1551); the broker in use must deliver every one of 1,000 quick enqueues."""
    done = finished(engine.start("expense_approval", EXPENSE))
    log_offset = len(worker.log())
    started = time.monotonic()
    ids = {execute_run.delay(done.pk).id for _ in range(1000)}
    enqueue_seconds = time.monotonic() - started

    def succeeded() -> set[str]:
        found = re.findall(r"Task durable\.execute_run\[([0-9a-f-]+)\] succeeded", worker.log())
        return ids & set(found)

    wait_for(
        lambda: len(succeeded()) == 1000, timeout=300, interval=1, message="1,000 tasks to succeed"
    )
    log = worker.log()[log_offset:]
    assert "Traceback" not in log, log[max(0, log.index("Traceback") - 2000) :][:6000]
    print(
        f"1,000 enqueues took {enqueue_seconds:.2f}s, all done in {time.monotonic() - started:.1f}s"
    )
