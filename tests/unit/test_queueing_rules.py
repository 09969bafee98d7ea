"""The run engine's queueing rules (``durable.engine.policy``) on the real database, with no
broker and no worker: the rules write rows and say what the broker must do (``Sends``),
and these tests read both. Also ``engine.close``, on a thread run in this process."""

from __future__ import annotations

import pytest
from django.utils import timezone

from durable import conf, engine
from durable.engine import policy, queue, records
from durable.graphs import get_graph
from durable.models import AuditEvent, Run, RunEvent, Tenant, Thread
from examples.expense_approval import EXAMPLE_INPUT

pytestmark = pytest.mark.django_db

START = {"kind": Run.Kind.START, "input": {}}


@pytest.fixture
def thread() -> Thread:
    return Thread.objects.create(
        tenant=Tenant.default(), thread_id="policy", name="policy", graph="expense_approval"
    )


def a_run(thread: Thread, status: str = Run.Status.PENDING, **fields) -> Run:
    return Run.objects.create(thread=thread, graph=thread.graph, status=status, **START, **fields)


def test_the_threads_status_after_a_run_follows_how_it_ended():
    after = policy.thread_status_after
    assert after(Run.Status.SUCCESS) == Thread.Status.IDLE
    assert after(Run.Status.INTERRUPTED) == Thread.Status.INTERRUPTED
    assert after(Run.Status.ERROR) == Thread.Status.ERROR
    # Cancelled, timed out or rolled back: as the latest checkpoint stands.
    assert after(Run.Status.CANCELLED) == Thread.Status.IDLE
    assert after(Run.Status.TIMEOUT, interrupts_waiting=True) == Thread.Status.INTERRUPTED
    assert after(None) == Thread.Status.IDLE


def test_reject_refuses_a_run_on_a_busy_thread_and_writes_nothing(thread):
    a_run(thread, Run.Status.RUNNING)
    with pytest.raises(engine.InvalidRequest) as refused:
        policy.submit(thread, multitask_strategy=Run.MultitaskStrategy.REJECT, **START)
    assert refused.value.field == "thread"
    assert thread.runs.count() == 1


def test_a_submitted_run_on_an_idle_thread_is_pending_and_written_dispatched(thread):
    run, sends = policy.submit(thread, multitask_strategy=Run.MultitaskStrategy.REJECT, **START)

    assert run.status == Run.Status.PENDING
    assert run.timeout_seconds == conf.DURABLE_RUN_TIMEOUT_SECONDS
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.BUSY
    event = RunEvent.objects.get(run=run)
    assert (event.seq, event.data["status"]) == (1, "pending")
    # It is the thread's next run, so its message is marked as on its way in the same
    # row (the outbox does not resend it) and goes once the transaction commits.
    assert policy.next_run(thread.pk) == run
    stored = Run.objects.get(pk=run.pk)
    assert stored.task_id and stored.dispatched_at is not None
    assert not queue.unsent(timezone.now()).filter(pk=run.pk).exists()
    assert sends == policy.Sends(ready=[run])


def test_enqueue_queues_behind_the_active_run_oldest_first(thread):
    running = a_run(thread, Run.Status.RUNNING)
    queued, sends = policy.submit(thread, multitask_strategy=Run.MultitaskStrategy.ENQUEUE, **START)

    assert Run.objects.get(pk=running.pk).stop_requested == Run.Stop.NONE
    assert records.must_wait(queued)
    assert policy.next_run(thread.pk) is None  # the running run dispatches it when it ends
    Run.objects.filter(pk=running.pk).update(status=Run.Status.SUCCESS)
    assert not records.must_wait(queued)
    assert policy.next_run(thread.pk) == queued


def test_interrupt_asks_a_running_run_to_stop_and_cancels_a_pending_one(thread):
    running = a_run(thread, Run.Status.RUNNING)
    waiting = a_run(thread, task_id="message-of-waiting")
    new, sends = policy.submit(thread, multitask_strategy=Run.MultitaskStrategy.INTERRUPT, **START)

    assert Run.objects.get(pk=running.pk).stop_requested == Run.Stop.INTERRUPT
    assert Run.objects.get(pk=waiting.pk).status == Run.Status.CANCELLED
    assert sends.revoke == ["message-of-waiting"]
    assert sends.next_of == [thread.pk]


def test_rollback_deletes_a_pending_run_and_revokes_its_message(thread):
    waiting = a_run(thread, task_id="message-of-waiting")
    new, sends = policy.submit(thread, multitask_strategy=Run.MultitaskStrategy.ROLLBACK, **START)

    assert not Run.objects.filter(pk=waiting.pk).exists()
    assert sends == policy.Sends(revoke=["message-of-waiting"], next_of=[thread.pk])


def test_a_stronger_stop_request_replaces_a_weaker_one_never_the_reverse(thread):
    run = a_run(thread, Run.Status.RUNNING)

    assert policy.request_stop(run.pk, Run.Stop.SHUTDOWN, "leaving")
    assert policy.request_stop(run.pk, Run.Stop.CANCEL, "cancelled")
    assert not policy.request_stop(run.pk, Run.Stop.SHUTDOWN, "leaving")
    assert not policy.request_stop(run.pk, Run.Stop.INTERRUPT, "newer run")
    assert policy.request_stop(run.pk, Run.Stop.ROLLBACK, "rolled back")
    assert Run.objects.get(pk=run.pk).stop_requested == Run.Stop.ROLLBACK
    # Only a running run has a worker to ask.
    assert not policy.request_stop(a_run(thread).pk, Run.Stop.CANCEL, "cancelled")


def test_settling_a_thread_sets_its_status_or_asks_for_its_next_run(thread):
    ended = a_run(thread, Run.Status.ERROR)
    assert policy.settle_thread(thread.pk, ended.status) == policy.Sends()
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.ERROR

    a_run(thread)
    assert policy.settle_thread(thread.pk, Run.Status.SUCCESS) == policy.Sends(next_of=[thread.pk])
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.ERROR  # left as it was


def test_a_pending_run_ended_unrun_revokes_its_message_and_settles_its_thread(thread):
    run = a_run(thread, task_id="its-message")

    sends = policy.end_pending(run, Run.Status.CANCELLED, "cancelled")

    assert Run.objects.get(pk=run.pk).status == Run.Status.CANCELLED
    assert sends == policy.Sends(revoke=["its-message"])
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.IDLE
    assert policy.end_pending(run, Run.Status.CANCELLED, "again") == policy.Sends()


# The graph's saver writes from LangGraph's own threads: on SQLite they must not wait for
# the write lock of a test's transaction.
@pytest.mark.django_db(transaction=True)
def test_close_ends_a_thread_without_resuming_and_says_so_in_the_audit():
    thread = engine.create_thread("expense_approval")
    get_graph("expense_approval").invoke(EXAMPLE_INPUT, engine.config_for(thread))
    assert engine.pending_interrupts(thread)
    seen = engine.thread_state(thread).config["configurable"]["checkpoint_id"]

    closed = engine.close(thread, seen, requested_by="ops", reason="duplicate claim")

    assert engine.pending_interrupts(thread) == []
    assert engine.thread_state(thread).next == ()
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.IDLE
    event = AuditEvent.objects.get(action=AuditEvent.Action.CLOSE)
    assert (event.actor, event.reason) == ("ops", "duplicate claim")
    assert (event.checkpoint_before, event.checkpoint_after) == (seen, closed.checkpoint_id)
    # The thread has moved on from what the caller saw: refused, nothing written.
    with pytest.raises(engine.InvalidRequest) as refused:
        engine.close(thread, seen, requested_by="ops", reason="again")
    assert refused.value.field == "checkpoint_id"
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CLOSE).count() == 1
