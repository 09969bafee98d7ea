"""A worker dies (SIGKILL) or shuts down (SIGTERM) in the middle of a run: nothing is
lost, and another worker process finishes the run.

These tests start their own worker processes, so the session's worker is stopped while
they run (it would take the runs) and started again afterwards.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection, transaction

from durable import engine
from durable.models import Run, Thread
from tests.helpers.graphs import release, runs_of
from tests.helpers.processes import WORKER_APPLICATION_NAME, WorkerProcess, pg_connections
from tests.helpers.runs import draining, finished, lifecycle, probe, slow_started
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def start_worker(name: str, concurrency: int = 1) -> WorkerProcess:
    return WorkerProcess(settings.VAR_DIR / f"test-worker-{name}.log", name, concurrency).start()


def test_a_killed_workers_run_is_recovered_by_a_worker_without_beat(own_workers, tmp_path):
    """No Celery beat runs (``WorkerProcess`` starts none): the rescuer's own reaper
    finds the expired lease. Nothing is lost, and the nodes that had finished in the
    interrupted super-step do not run again."""
    doomed = start_worker("doomed")
    run = probe(tmp_path)
    # "fast" has finished and its write is saved; "slow", beside it, is still running.
    slow_started(run, tmp_path)
    assert Run.objects.get(pk=run.pk).worker == doomed.hostname

    doomed.kill()
    release(tmp_path)  # so that "slow" returns when it runs again
    rescuer = start_worker("rescuer")
    try:
        run = finished(run)
    finally:
        rescuer.stop()

    assert run.status == Run.Status.SUCCESS
    assert (run.attempt, run.worker) == (2, rescuer.hostname)
    # The interrupted super-step went on: "fast" kept its saved write, "slow" ran again.
    assert (runs_of(tmp_path, "fast"), runs_of(tmp_path, "slow")) == (1, 2)
    assert runs_of(tmp_path, "after") == 1
    thread = Thread.objects.get(pk=run.thread_pk)
    assert sorted(engine.thread_state(thread).values["log"]) == ["after", "fast", "slow"]
    assert {
        "status": "pending",
        "detail": f"worker {doomed.hostname} stopped renewing its lease; re-enqueued",
    } in lifecycle(run)


def test_sigterm_drains_the_run_after_its_super_step_and_another_worker_goes_on(
    own_workers, tmp_path
):
    leaving = start_worker("leaving")
    run = probe(tmp_path)
    slow_started(run, tmp_path)

    leaving.terminate()
    # Warm shutdown: the worker asks its run to drain, and the super-step under way
    # finishes (the test lets "slow" return only once the run is draining).
    draining(run, "shutdown")
    release(tmp_path)
    assert leaving.proc.wait(timeout=60) == 0
    drained = Run.objects.get(pk=run.pk)
    assert (drained.status, drained.worker) == (Run.Status.PENDING, "")
    assert runs_of(tmp_path, "after") == 0

    successor = start_worker("successor")
    try:
        run = finished(run)
    finally:
        successor.stop()

    assert run.status == Run.Status.SUCCESS
    assert (run.attempt, run.worker) == (2, successor.hostname)
    # Nothing ran twice: the first worker finished the super-step, the second went on.
    assert [runs_of(tmp_path, n) for n in ("fast", "slow", "after")] == [1, 1, 1]
    assert {"status": "pending", "detail": "drained for the worker's shutdown"} in lifecycle(run)


@contextmanager
def claims_held_back(directory: Path):
    """Start a probe run whose claim waits: once the run is committed, and before its
    task is sent, this test locks the run's thread row (a connection of its own), which
    a worker's claim locks first. Yields the run; leaving lets the claim through. This
    is a task that reached a worker's pool just before its shutdown began, and claims
    its run just after."""
    locked, unlock, row = threading.Event(), threading.Event(), {}

    def hold():
        try:
            with transaction.atomic():
                list(Thread.objects.select_for_update().filter(pk=row["thread"]))
                locked.set()
                unlock.wait(120)
        finally:
            connection.close()

    def lock_before_dispatch():
        threading.Thread(target=hold, name="hold-thread-row").start()
        assert locked.wait(30), "the thread row was not locked"

    with transaction.atomic():
        # on_commit callbacks run in order: this one before the one that sends the task.
        transaction.on_commit(lock_before_dispatch)
        run = probe(directory)
        row["thread"] = run.thread_pk
    try:
        yield run
    finally:
        unlock.set()


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="holds a claim back with a row lock; SQLite's only lock would hold back the drain too",
)
def test_a_run_claimed_after_the_shutdown_began_is_drained_too(own_workers, tmp_path):
    leaving = start_worker("late", concurrency=2)
    early_dir, late_dir = tmp_path / "early", tmp_path / "late"
    early_dir.mkdir()
    late_dir.mkdir()
    try:
        early = probe(early_dir)
        slow_started(early, early_dir)

        with claims_held_back(late_dir) as late:
            wait_for(
                lambda: pg_connections(WORKER_APPLICATION_NAME, "wait_event_type = 'Lock'") == 1,
                message="the worker's claim to wait for the thread's row",
            )
            leaving.terminate()
            # The worker has asked the runs it was running to drain; the late one was
            # not running yet.
            draining(early, "shutdown")
            assert Run.objects.get(pk=late.pk).status == Run.Status.PENDING
        # Now the worker claims it, and must ask it to drain as well.
        slow_started(late, late_dir)
        assert Run.objects.get(pk=late.pk).worker == leaving.hostname
        draining(late, "shutdown")
        release(early_dir)
        release(late_dir)
        assert leaving.proc.wait(timeout=60) == 0
    finally:
        release(early_dir)
        release(late_dir)
        leaving.stop()
    for run in (early, late):
        drained = Run.objects.get(pk=run.pk)
        assert (drained.status, drained.worker) == (Run.Status.PENDING, "")

    successor = start_worker("successor")
    try:
        early, late = finished(early), finished(late)
    finally:
        successor.stop()

    for run, directory in ((early, early_dir), (late, late_dir)):
        assert run.status == Run.Status.SUCCESS
        assert (run.attempt, run.worker) == (2, successor.hostname)
        assert [runs_of(directory, n) for n in ("fast", "slow", "after")] == [1, 1, 1]
        assert {"status": "pending", "detail": "drained for the worker's shutdown"} in lifecycle(
            run
        )
