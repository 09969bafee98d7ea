"""A thread's diagnosis (``durable.reports.diagnosis``) and the threads-list filter by it,
on threads that real runs brought there: each run is executed in this process, as a
worker executes it (``durable.engine.execution.execute``). The classes that need a worker
process (running, stalled, ran more than once) are in
``tests/worker/test_diagnosis_recovery.py``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from durable import engine
from durable.engine import execution
from durable.models import Run, Thread
from durable.reports.diagnosis import DIAGNOSES, diagnose, filter_threads
from tests.helpers.threads import INPUTS

pytestmark = pytest.mark.django_db(transaction=True)


def executed(run: Run) -> Run:
    """``run`` executed here, as a worker does."""
    execution.execute(run.pk, worker="here@test")
    return Run.objects.get(pk=run.pk)


def counted(tmp_path, fail: str = "") -> Run:
    return engine.start("counted", {"dir": str(tmp_path), "fail": fail, "log": []})


def only(kind: str) -> list[str]:
    return sorted(filter_threads(Thread.objects.all(), kind).values_list("name", flat=True))


def test_a_thread_with_no_run_has_never_started():
    thread = engine.create_thread("counted")
    found = diagnose(thread)
    assert found.kind == "never_started"
    assert found.text == "Never started: no run and no checkpoint yet."
    assert found.action.name == "start"
    assert only("never_started") == [thread.name]
    assert only("finished") == []


def test_a_run_no_worker_took_is_queued(tmp_path):
    run = counted(tmp_path)
    found = diagnose(run.thread)
    assert found.kind == "queued"
    assert found.text.startswith(f"Queued: run {run.pk} (start) has waited for a worker since ")
    assert (found.action.name, found.action.args) == ("run", {"run": run.pk})
    assert only("queued") == [run.thread.name]
    # A lease and a reaper pass later, no worker has taken it: the line says what to check.
    later = timezone.now() + timedelta(minutes=5)
    assert "is any worker" in diagnose(run.thread, now=later).text


def test_a_failed_run_names_its_node_exception_and_attempt_and_retries_by_replay(tmp_path):
    run = executed(counted(tmp_path, fail="left"))
    assert run.status == Run.Status.ERROR
    thread = Thread.objects.get(pk=run.thread_pk)
    found = diagnose(thread)
    assert found.kind == "failed"
    assert found.text == (
        f"Failed: run {run.pk} in node left (ValueError: left was told to fail), attempt 1."
    )
    assert found.since == run.ended_at
    # Retry: a replay from the checkpoint the failed step started from, whose next
    # tasks are the failed step's.
    assert found.action.name == "replay"
    snapshot = engine.state_at(thread, found.action.args["checkpoint_id"])
    assert set(snapshot.next) == {"left", "right"}
    assert only("failed") == [thread.name]


def test_a_thread_at_an_interrupt_waits_for_a_person():
    run = executed(engine.start("expense_approval", INPUTS["expense_approval"]))
    assert run.status == Run.Status.INTERRUPTED
    thread = Thread.objects.get(pk=run.thread_pk)
    found = diagnose(thread)
    assert found.kind == "waiting"
    assert found.since == run.ended_at
    assert found.text.startswith("Waiting for a person: since ")
    assert found.text.endswith(", 1 interrupt in request_approval.")
    assert found.details["interrupts"] == 1
    assert found.action.name == "answer"
    assert only("waiting") == [thread.name]


def test_a_run_that_ended_well_is_finished(tmp_path):
    run = executed(counted(tmp_path))
    assert run.status == Run.Status.SUCCESS
    thread = Thread.objects.get(pk=run.thread_pk)
    found = diagnose(thread)
    assert found.kind == "finished"
    assert found.text.startswith(f"Finished: run {run.pk} (start) ended success at ")
    assert found.action.name == "history"
    assert only("finished") == [thread.name]


def test_the_filter_puts_each_thread_in_exactly_one_class(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    never = engine.create_thread("counted")
    queued = counted(tmp_path / "a").thread
    failed = Thread.objects.get(pk=executed(counted(tmp_path / "b", fail="first")).thread_pk)
    waiting = Thread.objects.get(
        pk=executed(engine.start("expense_approval", INPUTS["expense_approval"])).thread_pk
    )
    expected = {
        "never_started": [never.name],
        "queued": [queued.name],
        "failed": [failed.name],
        "waiting": [waiting.name],
    }
    for kind, _label in DIAGNOSES:
        assert only(kind) == expected.get(kind, []), kind
    for thread in (never, queued, failed, waiting):
        assert only(diagnose(thread).kind) == [thread.name]


def test_an_unknown_kind_is_refused():
    with pytest.raises(KeyError):
        filter_threads(Thread.objects.all(), "sleeping")
