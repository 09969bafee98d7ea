"""A run that a request waits on executes in the web process that took the request
(``durable.engine.inline``), under the same claim and lease as in a worker: a web process
killed or stopped in the middle of it loses nothing, a cancel from another process stops
it, and a client of another web process follows it.

These tests start their own web and worker processes (a real uvicorn, real Celery
workers), so the session's worker is stopped while they run.
"""

from __future__ import annotations

import threading
import uuid

import httpx
import pytest
from django.conf import settings

from durable import engine
from durable.models import Checkpoint, Run, Thread
from tests.helpers.graphs import release, runs_of
from tests.helpers.processes import WebProcess, WorkerProcess
from tests.helpers.runs import draining, finished, lifecycle, slow_started
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def start_worker(name: str) -> WorkerProcess:
    return WorkerProcess(settings.VAR_DIR / f"test-worker-{name}.log", name).start()


def start_web(name: str, slots: int = 2) -> WebProcess:
    log = settings.VAR_DIR / f"test-web-{name}.log"
    return WebProcess(log, DURABLE_WEB_RUN_SLOTS=str(slots)).start()


class Waiting:
    """A client's ``runs.wait`` of a probe run on thread ``name``, on a thread of its own
    (it blocks until the run ends, or its server goes away): ``.response`` or ``.error``."""

    def __init__(self, web: WebProcess, api_key: str, directory, name: str | None = None):
        self.name = name or f"inline-{uuid.uuid4().hex[:8]}"
        self.response: httpx.Response | None = None
        self.error: Exception | None = None
        body = {
            "assistant_id": "probe",
            "input": {"dir": str(directory), "log": []},
            "if_not_exists": "create",
        }
        url = f"{web.url}/api/threads/{self.name}/runs/wait"

        def call():
            try:
                self.response = httpx.post(
                    url, json=body, headers={"x-api-key": api_key}, timeout=120
                )
            except httpx.HTTPError as exc:
                self.error = exc

        self._thread = threading.Thread(target=call, name=f"wait-{self.name}", daemon=True)
        self._thread.start()

    def run(self) -> Run:
        """The run, once it is written."""
        return wait_for(
            lambda: Run.objects.filter(thread__name=self.name).order_by("pk").first(),
            message=f"a run on thread {self.name}",
        )

    def join(self, timeout: float = 60) -> httpx.Response | None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the wait did not return"
        return self.response


def executing_in(web: WebProcess, run: Run, directory) -> Run:
    """Wait until ``run``'s first super-step is under way in ``web``; the run, fresh."""
    slow_started(run, directory)
    run = Run.objects.get(pk=run.pk)
    assert run.worker.startswith("web@") and run.worker.endswith(f":{web.proc.pid}"), run.worker
    return run


@pytest.fixture
def rescuer(own_workers):
    """A worker of this test's own, for the runs the web processes leave or do not take."""
    process = start_worker("inline-rescuer")
    yield process
    process.stop()


def test_a_waited_run_executes_in_the_web_process_and_answers(rescuer, api_key, tmp_path):
    web = start_web("waited")
    try:
        release(tmp_path)
        waiting = Waiting(web, api_key, tmp_path)
        response = waiting.join()
        assert response is not None and response.status_code == 200, waiting.error
        assert sorted(response.json()["log"]) == ["after", "fast", "slow"]
        run = finished(waiting.run())
    finally:
        web.stop()
    assert run.status == Run.Status.SUCCESS
    assert run.attempt == 1
    assert run.worker.startswith("web@") and run.worker.endswith(f":{web.proc.pid}")
    assert [runs_of(tmp_path, n) for n in ("fast", "slow", "after")] == [1, 1, 1]


def test_with_no_slots_every_run_goes_to_the_workers(rescuer, api_key, tmp_path):
    web = start_web("no-slots", slots=0)
    try:
        release(tmp_path)
        waiting = Waiting(web, api_key, tmp_path)
        assert waiting.join().status_code == 200, waiting.error
        run = finished(waiting.run())
    finally:
        web.stop()
    assert (run.status, run.worker) == (Run.Status.SUCCESS, rescuer.hostname)


def test_a_run_finding_no_free_slot_goes_to_the_workers(rescuer, api_key, tmp_path):
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    web = start_web("one-slot", slots=1)
    try:
        first = Waiting(web, api_key, first_dir)
        executing_in(web, first.run(), first_dir)
        release(second_dir)
        second = Waiting(web, api_key, second_dir)
        assert second.join().status_code == 200, second.error
        assert finished(second.run()).worker == rescuer.hostname
        release(first_dir)
        assert first.join().status_code == 200, first.error
    finally:
        web.stop()
    assert finished(first.run()).worker.startswith("web@")


def test_a_killed_web_process_loses_nothing(rescuer, api_key, tmp_path):
    """SIGKILL in the middle of a node: the lease expires, the worker's reaper requeues
    the run, and it goes on from its last checkpoint; ``fast``, which had finished in the
    interrupted super-step, does not run again."""
    web = start_web("doomed")
    waiting = Waiting(web, api_key, tmp_path)
    run = executing_in(web, waiting.run(), tmp_path)
    web.kill()
    release(tmp_path)
    run = finished(run)
    waiting.join()
    assert waiting.error is not None  # its server died under it
    assert run.status == Run.Status.SUCCESS
    assert (run.attempt, run.worker) == (2, rescuer.hostname)
    assert [runs_of(tmp_path, n) for n in ("fast", "slow", "after")] == [1, 2, 1]
    thread = Thread.objects.get(pk=run.thread_pk)
    assert sorted(engine.thread_state(thread).values["log"]) == ["after", "fast", "slow"]
    assert any(
        e.get("status") == "pending"
        and e.get("detail", "").startswith("worker web@")
        and "stopped renewing its lease" in e["detail"]
        for e in lifecycle(run)
    ), lifecycle(run)


def test_sigterm_drains_the_web_process_runs_back_to_the_workers(own_workers, api_key, tmp_path):
    """SIGTERM: the run under way finishes its super-step, goes back to pending and is
    sent to the workers; nothing is left claimed by the stopped process, and nothing
    runs twice."""
    web = start_web("leaving")
    waiting = Waiting(web, api_key, tmp_path)
    run = executing_in(web, waiting.run(), tmp_path)
    web.proc.terminate()
    draining(run, "shutdown")
    release(tmp_path)
    assert web.proc.wait(timeout=60) in (0, -15)
    drained = Run.objects.get(pk=run.pk)
    assert (drained.status, drained.worker, drained.lease_expires_at) == (
        Run.Status.PENDING,
        "",
        None,
    )
    assert drained.dispatched_at is not None  # handed back: its message is on its way
    successor = start_worker("inline-successor")
    try:
        run = finished(run)
    finally:
        successor.stop()
    assert (run.status, run.attempt, run.worker) == (Run.Status.SUCCESS, 2, successor.hostname)
    assert [runs_of(tmp_path, n) for n in ("fast", "slow", "after")] == [1, 1, 1]


@pytest.mark.parametrize("action", ["interrupt", "rollback"])
def test_a_cancel_from_another_process_stops_the_web_process_run(
    rescuer, api_key, tmp_path, action
):
    web = start_web(f"cancel-{action}")
    try:
        waiting = Waiting(web, api_key, tmp_path)
        run = executing_in(web, waiting.run(), tmp_path)
        # This test's process is not the one executing the run.
        if action == "rollback":
            engine.cancel_with_rollback(run, requested_by="test")
        else:
            engine.cancel(run, requested_by="test")
        draining(run, "rollback" if action == "rollback" else "cancel")
        release(tmp_path)
        assert waiting.join().status_code == 200, waiting.error
    finally:
        web.stop()
    assert runs_of(tmp_path, "after") == 0
    thread = Thread.objects.get(name=waiting.name)
    if action == "rollback":
        wait_for(lambda: not Run.objects.filter(pk=run.pk).exists(), message="the rollback")
        assert not Checkpoint.objects.filter(thread_id=thread.thread_id).exists()
    else:
        assert finished(run).status == Run.Status.CANCELLED
        assert Checkpoint.objects.filter(thread_id=thread.thread_id).exists()


def test_an_enqueued_run_waits_for_the_web_process_run_then_goes_to_a_worker(
    rescuer, api_key, tmp_path
):
    web = start_web("enqueue")
    try:
        waiting = Waiting(web, api_key, tmp_path)
        first = executing_in(web, waiting.run(), tmp_path)
        thread = Thread.objects.get(pk=first.thread_pk)
        second = engine.start(
            "probe",
            {"dir": str(tmp_path), "log": []},
            name=thread.name,
            multitask_strategy="enqueue",
        )
        assert Run.objects.get(pk=second.pk).status == Run.Status.PENDING
        release(tmp_path)
        assert waiting.join().status_code == 200, waiting.error
        first, second = finished(first), finished(second)
    finally:
        web.stop()
    assert first.worker.startswith("web@") and second.worker == rescuer.hostname
    assert (first.status, second.status) == (Run.Status.SUCCESS, Run.Status.SUCCESS)
    assert second.started_at >= first.ended_at


def test_a_client_of_another_web_process_follows_the_run(rescuer, api_key, tmp_path):
    executing, following = start_web("executing"), start_web("following")
    try:
        waiting = Waiting(executing, api_key, tmp_path)
        run = executing_in(executing, waiting.run(), tmp_path)
        joined = {}

        def join():
            url = f"{following.url}/api/threads/{waiting.name}/runs/{run.pk}/join"
            joined["response"] = httpx.get(url, headers={"x-api-key": api_key}, timeout=120)

        joiner = threading.Thread(target=join, daemon=True)
        joiner.start()
        release(tmp_path)
        joiner.join(60)
        assert waiting.join().status_code == 200, waiting.error
    finally:
        executing.stop()
        following.stop()
    assert joined["response"].status_code == 200
    assert sorted(joined["response"].json()["log"]) == ["after", "fast", "slow"]
    assert finished(run).worker.startswith("web@")
