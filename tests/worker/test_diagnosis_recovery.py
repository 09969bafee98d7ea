"""The diagnoses a worker process brings a thread to: running (in which node, on which
worker), stalled (its worker SIGKILLed: the lease expired and no worker has taken the run),
and, once another worker recovered the run, ran more than once (the node that was
running when the first worker died ran again in the same super-step).

This test starts its own worker processes, so the session's worker is stopped while it
runs (it would take the run) and started again afterwards.
"""

from __future__ import annotations

import pytest
from django.conf import settings

from durable.models import Run, Thread
from durable.reports.diagnosis import diagnose, filter_threads
from tests.helpers.graphs import release, runs_of
from tests.helpers.processes import ENGINE_TIMINGS, WorkerProcess
from tests.helpers.runs import finished, probe, slow_started
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


@pytest.fixture
def worker_timings(settings):
    """This process reads the workers' lease and reaper interval, as a web process
    configured like its workers does."""
    for name in ("DURABLE_RUN_LEASE_SECONDS", "DURABLE_REAPER_INTERVAL_SECONDS"):
        setattr(settings, name, float(ENGINE_TIMINGS[name]))


def start_worker(name: str) -> WorkerProcess:
    return WorkerProcess(settings.VAR_DIR / f"test-worker-diag-{name}.log", name, 1).start()


def kinds(kind: str) -> list[int]:
    return list(filter_threads(Thread.objects.all(), kind).values_list("pk", flat=True))


def test_a_killed_worker_leaves_the_run_stalled_and_its_recovery_ran_a_node_twice(
    own_workers, worker_timings, tmp_path
):
    doomed = start_worker("doomed")
    run = probe(tmp_path)
    slow_started(run, tmp_path)
    thread = Thread.objects.get(pk=run.thread_pk)

    running = wait_for(
        lambda: (d := diagnose(thread)).details.get("nodes") == ["slow"] and d,
        message="the diagnosis to see slow running",
    )
    assert running.kind == "running"
    assert running.text.startswith(f"Running: run {run.pk} (start) since ")
    assert running.text.endswith(f" in node slow, on worker {doomed.hostname}.")
    assert kinds("running") == [thread.pk]

    doomed.kill()
    # No worker is left: the lease expires and no reaper takes the run.
    stalled = wait_for(
        lambda: (d := diagnose(thread)).kind == "stalled" and d,
        message="the run's lease to expire",
    )
    run = Run.objects.get(pk=run.pk)
    assert stalled.since == run.lease_expires_at
    assert stalled.text.startswith(
        f"Stalled: run {run.pk}'s lease (worker {doomed.hostname}, attempt 1) expired at "
    )
    assert stalled.details["reaper_acts_by"] > run.lease_expires_at
    assert kinds("stalled") == [thread.pk] and kinds("running") == []
    # A reaper interval later, none has acted: the line asks whether a worker runs.
    overdue = wait_for(
        lambda: (d := diagnose(thread)).details.get("overdue") and d,
        message="the reaper to be overdue",
    )
    assert overdue.text.endswith("is any worker (celery -A dashboard worker) running?")
    assert Run.objects.get(pk=run.pk).status == Run.Status.RUNNING  # still not taken

    release(tmp_path)
    rescuer = start_worker("rescuer")
    try:
        run = finished(run)
    finally:
        rescuer.stop()
    assert (run.status, run.attempt) == (Run.Status.SUCCESS, 2)
    assert (runs_of(tmp_path, "fast"), runs_of(tmp_path, "slow")) == (1, 2)

    twice = diagnose(thread)
    assert twice.kind == "ran_twice"
    # Only slow ran again: fast's saved write was applied, not re-executed.
    assert twice.details["nodes"] == ["slow"]
    assert twice.text == (
        f"Ran more than once: after a recovery, slow ran again in the same super-step of "
        f"run {run.pk} (success); side effects may have happened twice."
    )
    assert (twice.action.name, twice.action.args) == ("run", {"run": run.pk})
    assert kinds("ran_twice") == [thread.pk] and kinds("finished") == []
