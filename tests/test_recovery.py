"""A worker dies (SIGKILL) or shuts down (SIGTERM) in the middle of a run: nothing is
lost, and another worker process finishes the run.

These tests start their own worker processes, so the session's worker is stopped while
they run (it would take the runs) and started again afterwards.
"""

from __future__ import annotations

import pytest
from django.conf import settings

from durable import runs
from durable.models import Run, Thread
from tests.conftest import WorkerProcess
from tests.graphs import release, runs_of
from tests.test_runs import draining, lifecycle, probe, slow_started
from tests.test_worker import finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


@pytest.fixture(scope="module")
def own_workers(worker):
    worker.stop()
    yield
    worker.start()


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
    thread = Thread.objects.get(pk=run.thread_id)
    assert sorted(runs.thread_state(thread).values["log"]) == ["after", "fast", "slow"]
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
