"""The database drops the worker's connections while runs are under way (its backends
terminated, as a failover or an administrator does): every run goes on from its last
checkpoint within seconds, none ends ``error``, and no node whose writes were saved runs
again. A node's own exception still ends its run ``error``.

The worker here holds a 30 s lease and redispatches a forgotten pending run after 300 s,
so a run that waited for either would be seen waiting. These tests start their own
worker, so the session's worker is stopped while they run.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
from django.conf import settings
from django.db import connection

from durable import engine
from durable.engine.state import config_for
from durable.graphs import get_graph
from durable.models import Run, Thread
from tests.helpers.graphs import COUNTED_NODES, executions
from tests.helpers.processes import WORKER_APPLICATION_NAME, WorkerProcess
from tests.helpers.runs import finished, lifecycle
from tests.helpers.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker,
    pytest.mark.skipif(
        not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
        reason="terminates PostgreSQL backends; SQLite has no server connections to lose",
    ),
]

LEASE_SECONDS = 30
# How long after the last fault every run has ended at most: well under the lease, so a
# run that waited for its lease to expire fails the test.
GOES_ON_WITHIN = 12.0
RUNS = 10


@pytest.fixture(scope="module")
def patient_worker(worker):
    worker.stop()
    process = WorkerProcess(
        settings.VAR_DIR / "test-worker-dbfaults.log",
        "dbfaults",
        concurrency=2,
        env={
            "DURABLE_RUN_LEASE_SECONDS": str(LEASE_SECONDS),
            "DURABLE_HEARTBEAT_SECONDS": "1",
        },
    ).start()
    yield process
    process.stop()
    worker.start()


def terminate_backends(count: int | None = None) -> int:
    """Terminate ``count`` (all when None) of the worker's backends on this test
    database; returns how many."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND application_name = %s",
            [WORKER_APPLICATION_NAME],
        )
        pids = [pid for (pid,) in cur.fetchall()]
        if count is not None:
            pids = random.sample(pids, min(count, len(pids)))
        for pid in pids:
            cur.execute("SELECT pg_terminate_backend(%s)", [pid])
    return len(pids)


def start_runs(tmp_path, count: int, fail: str = "") -> list[Run]:
    runs = []
    for i in range(count):
        directory = tmp_path / f"run-{i}"
        directory.mkdir(parents=True)
        runs.append(engine.start("counted", {"dir": str(directory), "fail": fail, "log": []}))
    return runs


def saved_tokens(run: Run) -> set[str]:
    """Every token the run's thread saved: in a checkpoint's state or a pending write."""
    thread = Thread.objects.get(pk=run.thread_pk)
    saved = set()
    for item in get_graph("counted").checkpointer.list(config_for(thread)):
        saved.update(item.checkpoint["channel_values"].get("log", []))
        for _task, channel, value in item.pending_writes or ():
            if channel == "log":
                saved.update(value)
    return saved


def assert_all_succeeded_once(runs: list[Run], tmp_path) -> None:
    for i, run in enumerate(runs):
        run = Run.objects.get(pk=run.pk)
        assert run.status == Run.Status.SUCCESS, (run.pk, run.error_type, run.error_message)
        directory = tmp_path / f"run-{i}"
        saved = saved_tokens(run)
        for node in COUNTED_NODES:
            tokens = executions(directory, node)
            assert tokens, f"run {run.pk}: {node} never ran"
            # An execution that ran again after an earlier one's writes were saved.
            again = [t for t in tokens[:-1] if t in saved]
            assert not again, f"run {run.pk}: {node} ran again after its writes were saved"
        # Each node's write applied once: the state holds one token per node.
        log = engine.thread_state(Thread.objects.get(pk=run.thread_pk)).values["log"]
        assert sorted(t.split(":")[0] for t in log) == sorted(COUNTED_NODES)


def all_ended(runs: list[Run], timeout: float) -> None:
    wait_for(
        lambda: not Run.objects.filter(pk__in=[r.pk for r in runs], status__in=Run.ACTIVE).exists(),
        timeout=timeout,
        message="every run to end",
    )


def abandoned(runs: list[Run]) -> list[str]:
    """What the runs' events say of the attempts abandoned on a fault of the database."""
    details = [event.get("detail", "") for run in runs for event in lifecycle(run)]
    return [d for d in details if d.startswith("database fault")]


def test_runs_go_on_when_every_connection_is_dropped_at_once(patient_worker, tmp_path):
    runs = start_runs(tmp_path, RUNS)
    wait_for(lambda: Run.objects.filter(status=Run.Status.RUNNING).count() == 2)
    time.sleep(0.5)  # into the runs' first super-steps
    assert terminate_backends() > 0
    blip = time.monotonic()

    all_ended(runs, timeout=GOES_ON_WITHIN + 20)
    took = time.monotonic() - blip
    assert took < GOES_ON_WITHIN, f"the runs ended {took:.1f} s after the blip"
    # The console tells why an attempt was abandoned, e.g. "database fault (AdminShutdown:
    # terminating connection due to administrator command); re-enqueued".
    assert abandoned(runs), "the blip stopped no run: the test did not test"
    assert_all_succeeded_once(runs, tmp_path)


def test_runs_go_on_while_a_connection_is_dropped_every_second(patient_worker, tmp_path):
    runs = start_runs(tmp_path, RUNS)
    stop = threading.Event()
    last_fault = [time.monotonic()]

    def terminate_one_a_second():
        while not stop.wait(1.0):
            terminate_backends(1)
            last_fault[0] = time.monotonic()
        connection.close()

    terminator = threading.Thread(target=terminate_one_a_second)
    terminator.start()
    try:
        all_ended(runs, timeout=GOES_ON_WITHIN + 20)
    finally:
        stop.set()
        terminator.join()
    took = time.monotonic() - last_fault[0]
    assert took < GOES_ON_WITHIN, f"the runs ended {took:.1f} s after the last fault"
    assert_all_succeeded_once(runs, tmp_path)


def test_a_nodes_own_error_still_ends_its_run(patient_worker, tmp_path):
    """Beside runs that a blip interrupts, one whose node raises ValueError ends
    ``error``, naming the node: a graph's failure is not the database's."""
    runs = start_runs(tmp_path, 2)
    (tmp_path / "failing").mkdir()
    failing = engine.start("counted", {"dir": str(tmp_path / "failing"), "fail": "left", "log": []})
    wait_for(lambda: Run.objects.filter(status=Run.Status.RUNNING).exists())
    terminate_backends()

    failing = finished(failing, timeout=30)
    assert failing.status == Run.Status.ERROR
    assert (failing.error_type, failing.error_node) == ("ValueError", "left")
    assert failing.error_message == "left was told to fail"
    all_ended(runs, timeout=30)
    assert_all_succeeded_once(runs, tmp_path)


def test_a_claim_on_a_dropped_connection_is_tried_again(patient_worker, tmp_path):
    """Right after a run, a pool process keeps its connections for the next one without
    checking them (``dashboard.celery``). Those are dropped, and a run is started at
    once: its claim meets a dead connection and is tried again on a fresh one, instead
    of leaving the run pending until its message is sent again a lease later (30 s
    here)."""
    # Both pool processes have just run one.
    all_ended(start_runs(tmp_path / "before", 2), timeout=30)
    terminate_backends()
    started = time.monotonic()
    (run,) = start_runs(tmp_path, 1)

    run = finished(run, timeout=GOES_ON_WITHIN + 20)
    took = time.monotonic() - started
    assert took < GOES_ON_WITHIN, f"the run ended {took:.1f} s after it was started"
    assert_all_succeeded_once([run], tmp_path)
