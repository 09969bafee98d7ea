"""The run engine's operations (durable.engine), executed by the session's real worker."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from durable import engine
from durable.engine import records
from durable.models import (
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
    Run,
    RunEvent,
    Thread,
)
from tests.helpers.graphs import release, runs_of
from tests.helpers.runs import draining, events, finished, lifecycle, probe, slow_started
from tests.helpers.threads import EXPENSE, everything
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

APPROVE = {"decisions": [{"type": "approve"}]}
REJECT = {"decisions": [{"type": "reject", "message": "Not this time"}]}


def interrupted_expense() -> tuple[Thread, Run]:
    run = finished(engine.start("expense_approval", EXPENSE))
    assert run.status == Run.Status.INTERRUPTED
    return Thread.objects.get(pk=run.thread_pk), run


# -- lifecycle and events ----------------------------------------------------------------


def test_a_run_records_its_lifecycle_and_each_stream_chunk_as_numbered_events(worker):
    user = User.objects.create_user("grace")
    thread, run = interrupted_expense()
    asked_at = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    resumed = finished(engine.resume(thread, APPROVE, requested_by=user, metadata={"ticket": 7}))

    assert resumed.status == Run.Status.SUCCESS
    assert resumed.requested_by == "grace"
    assert resumed.attempt == 1
    assert resumed.started_at <= resumed.ended_at
    # A resume starts from the checkpoint where the interrupt waited.
    assert resumed.checkpoint_id == asked_at
    found = events(resumed)
    assert [e.seq for e in found] == list(range(1, len(found) + 1))
    assert found[0].event == "lifecycle" and found[0].data["status"] == "pending"
    assert found[1].data["status"] == "running"
    assert found[-1].data == {"status": "success"}
    kinds = {e.event for e in found}
    assert {"updates", "tasks"} <= kinds
    updates = [e.data for e in found if e.event == "updates"]
    assert any("pay" in u for u in updates)
    assert any(e.data.get("name") == "pay" for e in found if e.event == "tasks")
    # The run's metadata is in the metadata of the checkpoints it wrote.
    written = Checkpoint.objects.filter(
        thread_id=thread.thread_id, metadata__run_id=str(resumed.pk)
    )
    assert written.exists()
    assert all(c.metadata["ticket"] == 7 for c in written)


def test_custom_stream_events_are_recorded(worker, tmp_path):
    release(tmp_path)
    run = finished(probe(tmp_path))
    assert run.status == Run.Status.SUCCESS
    custom = [e for e in events(run) if e.event == "custom"]
    assert [e.data for e in custom] == [{"node": "fast", "progress": 1.0}]


def test_events_keep_the_time_they_happened(worker, tmp_path):
    release(tmp_path)
    run = finished(probe(tmp_path))
    found = events(run)
    assert [e.seq for e in found] == list(range(1, len(found) + 1))
    # The worker writes them in batches, each stamped when it happened, in order.
    written = [e.created_at for e in found[1:]]  # the first is the request's "pending"
    assert written == sorted(written)
    assert run.started_at <= written[0] and written[-1] <= run.ended_at
    assert len(set(written)) > 1


def test_only_the_attempt_that_holds_a_run_writes_its_events(worker, tmp_path):
    run = probe(tmp_path)
    slow_started(run, tmp_path)
    holder = Run.objects.get(pk=run.pk)
    stale = Run(pk=run.pk, thread=run.thread, attempt=holder.attempt - 1)

    def event(text: str) -> records.Event:
        return records.Event("custom", "", json.dumps({"text": text}), timezone.now())

    assert not records.insert_events(stale, [event("stale")])
    # Another writer (a cancel's event, say) numbers its event between two batches.
    RunEvent.objects.append(run.pk, "custom", {"text": "between"})
    assert records.insert_events(holder, [event("first"), event("second")])
    release(tmp_path)
    found = events(finished(run))

    assert [e.seq for e in found] == list(range(1, len(found) + 1))
    texts = [e.data["text"] for e in found if e.event == "custom" and "text" in e.data]
    assert texts == ["between", "first", "second"]


@pytest.mark.parametrize(("durability", "checkpoints"), [("async", 3), ("exit", 1)])
def test_durability_is_chosen_per_run(worker, durability, checkpoints):
    run = finished(engine.start("expense_approval", EXPENSE, durability=durability))
    assert run.durability == durability
    assert run.status == Run.Status.INTERRUPTED
    thread = Thread.objects.get(pk=run.thread_pk)
    # "exit" saves only when the graph stops; "async" at every super-step.
    assert Checkpoint.objects.filter(thread_id=thread.thread_id).count() == checkpoints


def test_an_error_records_the_exception_and_the_node(worker):
    thread, _ = interrupted_expense()
    failed = finished(engine.resume(thread, {"decisions": []}))
    assert failed.status == Run.Status.ERROR
    assert (failed.error_type, failed.error_node) == ("IndexError", "request_approval")
    assert lifecycle(failed)[-1] == {
        "status": "error",
        "error": "IndexError",
        "node": "request_approval",
    }


# -- fork, replay, answer again ----------------------------------------------------------


def test_fork_with_as_node_runs_a_new_branch_and_keeps_the_old_one(worker):
    thread, run = interrupted_expense()
    asked = engine.thread_state(thread)
    at = asked.config["configurable"]["checkpoint_id"]

    result = engine.fork(thread, at, {"amount": 99.0}, as_node="validate", run=True)

    forked = finished(result.run)
    assert (forked.kind, forked.status) == (Run.Kind.FORK, Run.Status.INTERRUPTED)
    assert forked.forked_from == at
    assert forked.checkpoint_id == result.checkpoint_id
    assert forked.command == {"update": {"amount": 99.0}, "as_node": "validate"}
    # Counting as "validate", the update sent the graph to the approval again.
    [again] = forked.interrupts
    assert again["value"]["action_requests"][0]["args"]["amount"] == 99.0
    fork_point = engine.state_at(thread, result.checkpoint_id)
    assert fork_point.metadata["source"] == "update"
    assert fork_point.parent_config["configurable"]["checkpoint_id"] == at
    # History is not edited: the old checkpoint still holds the old claim.
    assert engine.state_at(thread, at).values["amount"] == EXPENSE["amount"]


def test_fork_without_a_run_only_writes_the_checkpoint(worker):
    thread, _ = interrupted_expense()
    at = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    before = Run.objects.count()

    result = engine.fork(thread, at, None, as_node="__end__")

    assert result.run is None
    assert Run.objects.count() == before
    latest = engine.thread_state(thread)
    assert latest.config["configurable"]["checkpoint_id"] == result.checkpoint_id
    assert latest.next == ()  # "__end__" with no values clears the next tasks
    thread.refresh_from_db()
    assert thread.status == Thread.Status.IDLE


def test_fork_after_parallel_nodes_needs_as_node(worker, tmp_path):
    release(tmp_path)
    run = finished(probe(tmp_path))
    thread = Thread.objects.get(pk=run.thread_pk)
    # The checkpoint after the super-step where "fast" and "slow" both wrote.
    [joined] = [s for s in engine.thread_history(thread) if s.next == ("after",)]
    at = joined.config["configurable"]["checkpoint_id"]
    before = everything()

    with pytest.raises(engine.InvalidRequest) as refused:
        engine.fork(thread, at, {"log": ["edited"]})

    assert refused.value.field == "as_node"
    assert "name one with as_node" in refused.value.message
    assert everything() == before
    result = engine.fork(thread, at, {"log": ["edited"]}, as_node="slow")
    assert engine.state_at(thread, result.checkpoint_id).values["log"] == [
        "fast",
        "slow",
        "edited",
    ]


def test_replay_runs_again_from_a_past_checkpoint_and_interrupts_fire_again(worker):
    thread, first = interrupted_expense()
    finished(engine.resume(thread, APPROVE))
    start = engine.thread_history(thread)[-1]  # the input checkpoint
    assert start.metadata["source"] == "input"

    replayed = finished(engine.replay(thread, start.config["configurable"]["checkpoint_id"]))

    assert (replayed.kind, replayed.status) == (Run.Kind.REPLAY, Run.Status.INTERRUPTED)
    [fired] = replayed.interrupts
    assert fired["id"] != first.interrupts[0]["id"]
    assert engine.thread_state(thread).values.get("status") == "validated"


def test_answer_again_branches_at_the_interrupt_and_keeps_the_paid_branch(worker):
    thread, first = interrupted_expense()
    paid = finished(engine.resume(thread, APPROVE))
    paid_at = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    asked_at = paid.checkpoint_id

    again = finished(engine.answer_again(thread, asked_at, REJECT))

    assert (again.kind, again.status) == (Run.Kind.RESUME, Run.Status.SUCCESS)
    assert again.forked_from == asked_at
    assert engine.thread_state(thread).values["status"] == "rejected"
    assert engine.state_at(thread, paid_at).values["status"] == "paid"
    assert engine.state_at(thread, asked_at).interrupts[0].id == first.interrupts[0]["id"]


def test_answer_again_by_interrupt_id_with_parallel_interrupts(worker):
    run = finished(engine.start("parallel_review", {"document": "NDA"}))
    thread = Thread.objects.get(pk=run.thread_pk)
    ids = {i["value"]["reviewer"]: i["id"] for i in run.interrupts}
    approved = finished(
        engine.resume(thread, answers={i: {"approved": True} for i in ids.values()})
    )
    assert engine.thread_state(thread).values["verdict"] == "approved"

    again = finished(
        engine.answer_again(
            thread,
            approved.checkpoint_id,
            answers={ids["legal"]: {"approved": True}, ids["finance"]: {"approved": False}},
        )
    )

    assert again.status == Run.Status.SUCCESS
    values = engine.thread_state(thread).values
    assert values["verdict"] == "changes requested"
    assert sorted((r["reviewer"], r["approved"]) for r in values["reviews"]) == [
        ("finance", False),
        ("legal", True),
    ]


def test_interrupts_inside_subgraphs_stop_the_run_and_are_answered_by_id(worker):
    run = finished(engine.start("nested", {"answers": []}))
    assert run.status == Run.Status.INTERRUPTED
    thread = Thread.objects.get(pk=run.thread_pk)
    # The run's interrupts are those waiting on the thread, in the same order.
    assert [i["id"] for i in run.interrupts] == [i.id for i in engine.pending_interrupts(thread)]
    asked = {i["value"]["question"]: i["id"] for i in run.interrupts}
    assert sorted(asked) == ["left?", "right?"]

    resumed = finished(
        engine.resume(thread, answers={asked["left?"]: "yes", asked["right?"]: "no"})
    )

    assert (resumed.status, resumed.interrupts) == (Run.Status.SUCCESS, [])
    assert sorted(engine.thread_state(thread).values["answers"]) == ["left: yes", "right: no"]


# -- refused requests change nothing ------------------------------------------------------


def test_bad_requests_name_the_field_and_change_nothing(worker):
    thread, run = interrupted_expense()
    other, _ = interrupted_expense()
    at = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    elsewhere = engine.thread_state(other).config["configurable"]["checkpoint_id"]
    first = engine.thread_history(thread)[-1].config["configurable"]["checkpoint_id"]
    pending_id = run.interrupts[0]["id"]
    cases = [
        ("as_node", lambda: engine.fork(thread, at, {"amount": 1}, as_node="approve_all")),
        ("as_node", lambda: engine.fork(thread, at, {"amount": 1}, as_node=7)),
        ("values", lambda: engine.fork(thread, at, {"salary": 1}, as_node="validate")),
        ("values", lambda: engine.fork(thread, at, ["amount"], as_node="validate")),
        ("values", lambda: engine.fork(thread, at, {"amount": 1}, as_node="__copy__")),
        ("values", lambda: engine.fork(thread, at, {"amount": 1}, as_node="__end__")),
        ("values", lambda: engine.fork(thread, at, {"status": "paid"}, as_node="__input__")),
        ("values", lambda: engine.fork(thread, at, {"amount": float("nan")}, as_node="validate")),
        (
            "checkpoint_id",
            lambda: engine.fork(thread, elsewhere, {"amount": 1}, as_node="validate"),
        ),
        ("checkpoint_id", lambda: engine.fork(thread, "no-such-checkpoint", None)),
        ("checkpoint_id", lambda: engine.replay(thread, elsewhere)),
        ("checkpoint_id", lambda: engine.state_at(thread, "x" * 500)),
        ("checkpoint_id", lambda: engine.answer_again(thread, first, APPROVE)),
        ("answers", lambda: engine.answer_again(thread, at, answers={"0" * 32: APPROVE})),
        ("answers", lambda: engine.resume(thread, answers={"not-an-interrupt": 1})),
        # Shaped as a resume map, which LangGraph would take it for: it would answer nothing.
        ("resume", lambda: engine.resume(thread, {"0" * 32: APPROVE})),
        ("resume", lambda: engine.answer_again(thread, at, {pending_id: APPROVE, "f" * 32: 1})),
        ("answers", lambda: engine.resume(thread, answers={pending_id: float("inf")})),
        ("durability", lambda: engine.resume(thread, APPROVE, durability="fast")),
        ("multitask_strategy", lambda: engine.resume(thread, APPROVE, multitask_strategy="x")),
        ("metadata", lambda: engine.resume(thread, APPROVE, metadata=["not", "an", "object"])),
        ("requested_by", lambda: engine.resume(thread, APPROVE, requested_by="x" * 151)),
        ("requested_by", lambda: engine.resume(thread, APPROVE, requested_by=42)),
        ("graph", lambda: engine.start("no_such_graph", {})),
        ("graph", lambda: engine.start("parallel_review", {}, name=thread.name)),
        ("name", lambda: engine.start("expense_approval", EXPENSE, name="t" * 256)),
        ("input", lambda: engine.start("expense_approval", {"payment": {"amount": 1}})),
        ("run", lambda: engine.cancel(run)),
        ("thread", lambda: engine.create_thread("expense_approval", name=thread.name)),
    ]
    before = everything()
    for field, request in cases:
        with pytest.raises(engine.InvalidRequest) as refused:
            request()
        assert refused.value.field == field, (field, refused.value.message)
        assert refused.value.message
        assert everything() == before, field


def test_resume_with_nothing_pending_is_refused(worker):
    thread, _ = interrupted_expense()
    finished(engine.resume(thread, APPROVE))
    before = everything()
    with pytest.raises(engine.InvalidRequest) as refused:
        engine.resume(thread, APPROVE)
    assert refused.value.field == "resume"
    assert "no pending interrupt" in refused.value.message
    assert everything() == before


# -- one run per thread: multitask strategies ----------------------------------------------


def test_reject_refuses_a_second_run_and_forks_wait_for_the_active_one(worker, tmp_path):
    first = probe(tmp_path)
    slow_started(first, tmp_path)
    thread = Thread.objects.get(pk=first.thread_pk)
    at = engine.thread_history(thread)[-1].config["configurable"]["checkpoint_id"]
    before = everything(running=first)
    for field, request in [
        ("thread", lambda: probe(tmp_path, name=thread.name)),
        ("thread", lambda: engine.replay(thread, at)),
        # A fork would become the thread's newest checkpoint, where the run would go on
        # from if its worker died.
        ("thread", lambda: engine.fork(thread, at, {"log": ["x"]}, as_node="fast")),
        ("thread", lambda: engine.fork(thread, at, None, as_node="__copy__", run=True)),
        # A rollback cannot start from a checkpoint it deletes.
        ("multitask_strategy", lambda: engine.replay(thread, at, multitask_strategy="rollback")),
    ]:
        with pytest.raises(engine.InvalidRequest) as refused:
            request()
        assert refused.value.field == field, refused.value.message
        assert everything(running=first) == before
    with pytest.raises(engine.InvalidRequest, match="pass multitask_strategy enqueue"):
        probe(tmp_path, name=thread.name)
    release(tmp_path)
    assert finished(first).status == Run.Status.SUCCESS


def test_enqueue_runs_the_second_run_after_the_first(worker, tmp_path):
    first = probe(tmp_path)
    slow_started(first, tmp_path)
    name = Thread.objects.get(pk=first.thread_pk).name

    second = probe(tmp_path, name=name, multitask_strategy="enqueue")

    assert Run.objects.get(pk=second.pk).status == Run.Status.PENDING  # first still holds
    release(tmp_path)
    first, second = finished(first), finished(second)
    assert (first.status, second.status) == (Run.Status.SUCCESS, Run.Status.SUCCESS)
    assert second.started_at >= first.ended_at
    assert runs_of(tmp_path, "after") == 2


def test_interrupt_stops_the_active_run_at_its_super_step_and_keeps_its_progress(worker, tmp_path):
    first = probe(tmp_path)
    slow_started(first, tmp_path)
    thread = Thread.objects.get(pk=first.thread_pk)
    queued = probe(tmp_path, name=thread.name, multitask_strategy="enqueue")

    second = probe(tmp_path, name=thread.name, multitask_strategy="interrupt")

    # The queued run never started: it ends at once.
    queued.refresh_from_db()
    assert (queued.status, queued.attempt) == (Run.Status.CANCELLED, 0)
    draining(first, "interrupt")
    release(tmp_path)
    first, second = finished(first), finished(second)
    assert first.status == Run.Status.CANCELLED
    assert first.stop_detail == f"interrupted by run {second.pk} (multitask_strategy=interrupt)"
    # The first run's super-step (fast and slow) was saved; "after" never ran in it.
    kept = Checkpoint.objects.filter(thread_id=thread.thread_id, metadata__run_id=str(first.pk))
    assert kept.filter(metadata__step=1).exists()
    assert second.status == Run.Status.SUCCESS


def test_rollback_deletes_the_active_run_and_its_checkpoints(worker, tmp_path):
    first = probe(tmp_path)
    slow_started(first, tmp_path)
    thread = Thread.objects.get(pk=first.thread_pk)

    second = probe(tmp_path, name=thread.name, multitask_strategy="rollback")
    draining(first, "rollback")
    release(tmp_path)

    second = finished(second)
    assert second.status == Run.Status.SUCCESS
    assert not Run.objects.filter(pk=first.pk).exists()
    assert not Checkpoint.objects.filter(
        thread_id=thread.thread_id, metadata__run_id=str(first.pk)
    ).exists()
    # Only the second run's work is in the thread's state.
    assert engine.thread_state(thread).values["log"] == ["fast", "slow", "after"]


# -- cancel, timeout, hard stop -------------------------------------------------------------


def test_cancelling_a_pending_run_means_it_never_runs(worker, tmp_path):
    first = probe(tmp_path)
    slow_started(first, tmp_path)
    name = Thread.objects.get(pk=first.thread_pk).name
    queued = probe(tmp_path, name=name, multitask_strategy="enqueue")

    cancelled = engine.cancel(queued, requested_by="ops")

    assert cancelled.status == Run.Status.CANCELLED
    assert cancelled.stop_detail == "cancelled by ops"
    release(tmp_path)
    assert finished(first).status == Run.Status.SUCCESS
    queued.refresh_from_db()
    assert (queued.status, queued.attempt) == (Run.Status.CANCELLED, 0)
    assert runs_of(tmp_path, "after") == 1


def test_cancelling_a_running_run_stops_it_at_the_next_super_step(worker, tmp_path):
    run = probe(tmp_path)
    slow_started(run, tmp_path)

    asked = engine.cancel(run, requested_by="ops")

    assert (asked.status, asked.stop_requested) == (Run.Status.RUNNING, Run.Stop.CANCEL)
    draining(run, "cancel")
    release(tmp_path)
    run = finished(run)
    assert run.status == Run.Status.CANCELLED
    assert runs_of(tmp_path, "after") == 0
    thread = Thread.objects.get(pk=run.thread_pk)
    assert thread.status == Thread.Status.IDLE
    # Its super-step was kept: the thread goes on from there.
    latest = engine.thread_state(thread)
    assert latest.next == ("after",)
    resumed = finished(engine.replay(thread, latest.config["configurable"]["checkpoint_id"]))
    assert resumed.status == Run.Status.SUCCESS
    assert (runs_of(tmp_path, "fast"), runs_of(tmp_path, "slow")) == (1, 1)
    assert engine.thread_state(thread).values["log"] == ["fast", "slow", "after"]


def test_a_run_over_its_time_limit_ends_timeout(worker, tmp_path, settings):
    settings.DURABLE_RUN_TIMEOUT_SECONDS = 0.5
    run = probe(tmp_path)
    assert run.timeout_seconds == 0.5
    draining(run, "timeout")
    release(tmp_path)
    run = finished(run)
    assert run.status == Run.Status.TIMEOUT
    assert run.stop_detail == "timed out after 0.5 s"
    assert runs_of(tmp_path, "after") == 0


def test_a_run_that_does_not_reach_a_boundary_is_stopped_hard(worker, tmp_path):
    lost = "Task handler raised error: WorkerLostError"
    reported = worker.log().count(lost)
    run = probe(tmp_path)
    slow_started(run, tmp_path)
    engine.cancel(run)
    # "slow" is never released: after the grace period its pool process is killed,
    # and the reaper ends the run as the cancel asked.
    run = finished(run)
    assert run.status == Run.Status.CANCELLED
    assert any("killed process" in e.get("detail", "") for e in lifecycle(run))
    # The worker replaced its pool process and goes on working.
    assert finished(engine.start("expense_approval", EXPENSE)).status == Run.Status.INTERRUPTED
    # Celery logs the killed process's task as lost, with a traceback, only
    # worker_lost_wait (10 s) after the process died: once that is out, later tests that
    # look for tracebacks in the worker's log do not find this one.
    wait_for(lambda: worker.log().count(lost) > reported, timeout=60, message="the lost task")


def test_a_pending_run_whose_message_was_lost_is_sent_again(worker):
    """A run row whose message was never sent (its send failed, or its sender died after
    the commit): the next pass of the reaper sends it."""
    thread = engine.create_thread("expense_approval")
    lost = Run.objects.create(thread=thread, graph=thread.graph, kind=Run.Kind.START, input=EXPENSE)
    assert finished(lost).status == Run.Status.INTERRUPTED


# -- deleting a thread ----------------------------------------------------------------------


def test_delete_thread_leaves_no_checkpoint_write_blob_run_or_event(worker):
    thread, _ = interrupted_expense()
    finished(engine.resume(thread, APPROVE))
    keep, _ = interrupted_expense()
    kept = everything()

    engine.delete_thread(thread)

    assert not Thread.objects.filter(pk=thread.pk).exists()
    for model in (Checkpoint, CheckpointBlob, CheckpointWrite):
        assert not model.objects.filter(thread_id=thread.thread_id).exists()
    assert not Run.objects.filter(thread=thread).exists()
    assert not RunEvent.objects.filter(run__thread=thread).exists()
    assert Checkpoint.objects.filter(thread_id=keep.thread_id).count() == 3
    assert kept["Thread"] - 1 == Thread.objects.count()


def test_a_thread_with_a_running_run_is_not_deleted(worker, tmp_path):
    run = probe(tmp_path)
    slow_started(run, tmp_path)
    thread = Thread.objects.get(pk=run.thread_pk)
    with pytest.raises(engine.InvalidRequest) as refused:
        engine.delete_thread(thread)
    assert refused.value.field == "thread"
    release(tmp_path)
    finished(run)
    assert Thread.objects.filter(pk=thread.pk).exists()
