"""The broker goes away (a Redis of the test's own is killed, and comes back empty on
the same port) or loses a message: requests are answered as usual, with their runs
``pending``, and the workers' reapers send what was not sent once the broker is back.

These tests start their own broker, worker and web server, so the session's worker is
stopped while they run (it would send and take the runs through the tests' broker) and
started again afterwards.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from langgraph_sdk import get_sync_client

from durable import engine
from durable.models import Run, Thread
from tests.helpers.processes import ENGINE_TIMINGS, RedisServer, WebProcess, WorkerProcess
from tests.helpers.runs import finished
from tests.helpers.threads import EXPENSE
from tests.helpers.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker,
    pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server"),
]

LEASE = float(ENGINE_TIMINGS["DURABLE_RUN_LEASE_SECONDS"])
REAPER = float(ENGINE_TIMINGS["DURABLE_REAPER_INTERVAL_SECONDS"])
# Celery's consumer reconnects to the broker on kombu's back-off (2 s, then 4 s, 6 s, ...
# between attempts): after the outage here (about 5 s), within about 6 s of its end.
RECONNECT = 6.0


@pytest.fixture(scope="module")
def broker(worker):
    """Redis on a port of its own, with a worker and a web server that use it."""
    worker.stop()
    redis = RedisServer(settings.VAR_DIR / "test-redis.log").start()
    own = WorkerProcess(settings.VAR_DIR / "test-worker-outage.log", "outage", broker=redis.url)
    web = WebProcess(settings.VAR_DIR / "test-web-outage.log", broker=redis.url)
    try:
        own.start()
        web.start()
        yield redis, own, web
    finally:
        web.stop()
        own.stop()
        redis.stop()
        worker.start()


def test_runs_posted_while_the_broker_is_down_are_pending_then_run_when_it_is_back(broker, api_key):
    redis, worker, web = broker
    with get_sync_client(url=f"{web.url}/api", api_key=api_key, timeout=60) as client:
        ids = [client.threads.create()["thread_id"] for _ in range(2)] + ["made-on-the-way"]
        redis.kill()
        answers = []
        for thread_id in ids:
            asked = time.monotonic()
            run = client.runs.create(
                thread_id, "expense_approval", input=EXPENSE, if_not_exists="create"
            )
            answers.append((run["status"], time.monotonic() - asked < 5))
        # A client that waits for the output waits for the broker, and gets it.
        waited = {}
        waiter = threading.Thread(
            target=lambda: waited.update(
                client.runs.wait(
                    ids[0], "expense_approval", input=EXPENSE, multitask_strategy="enqueue"
                )
            )
        )
        waiter.start()
        assert answers == [("pending", True)] * 3
        runs = wait_for(
            lambda: len(r := list(Run.objects.order_by("pk"))) == 4 and r,
            timeout=10,
            message="the waiting client's run",
        )
        # Committed, not sent: the API's sends failed, and so do the reaper's, which
        # goes on trying every interval.
        time.sleep(3 * REAPER)
        runs = list(Run.objects.order_by("pk"))
        assert [(r.status, r.attempt) for r in runs] == [("pending", 0)] * 4
        assert worker.proc.poll() is None

        redis.start()
        back = time.monotonic()
        runs = [finished(r, timeout=60) for r in runs]
        took = time.monotonic() - back
        waiter.join(timeout=30)

    assert [(r.status, r.attempt) for r in runs] == [("interrupted", 1)] * 4
    assert Thread.objects.filter(name="made-on-the-way").exists()
    assert waited["__interrupt__"][0]["value"]["action_requests"][0]["name"] == "pay_expense"
    # The reaper sends them within an interval of the broker being back; two of them
    # run one after the other on their thread.
    assert took < REAPER + RECONNECT + 3, took
    assert "reaper failed" not in worker.log()
    assert "could not send run" in worker.log()
    assert "could not send run" in web.log()
    # Each such line is one of its run's (the run page's query finds it).
    unsent = [json.loads(line) for line in web.log().splitlines() if "could not send run" in line]
    assert {line["run_id"] for line in unsent} <= {r.pk for r in runs}
    assert unsent[0]["run_id"] == runs[0].pk


def test_a_run_whose_message_was_lost_is_sent_again_after_a_lease(broker):
    """Its row says a message is on its way (``dispatched_at``), but none is: the one a
    pool process took before it was killed, or one a broker restarted without. The
    reaper sends it again once it has gone a lease unclaimed, not before."""
    thread = engine.create_thread("expense_approval")
    sent = timezone.now()
    lost = Run.objects.create(
        thread=thread,
        graph=thread.graph,
        kind=Run.Kind.START,
        input=EXPENSE,
        task_id="never-sent",
        dispatched_at=sent,
    )
    time.sleep(LEASE - REAPER)
    assert Run.objects.get(pk=lost.pk).task_id == "never-sent"  # not sent again yet

    run = finished(lost, timeout=30)

    assert run.status == Run.Status.INTERRUPTED
    assert run.task_id != "never-sent"
    assert run.started_at - sent < timedelta(seconds=LEASE + 2 * REAPER + 1)
