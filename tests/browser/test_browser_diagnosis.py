"""The diagnosis line in Debian's chromium, driven by Playwright, against the console as
``make run`` serves it (uvicorn, ``web``) and the session's real worker: it follows a
run live (running in which node, then finished), its retry of a failed thread is a replay
from the failed step, and the threads list filters by it.

Each test saves a screenshot under ``<var>/screenshots/`` as an artifact."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from playwright.sync_api import expect

from durable import engine
from durable.models import Run, Thread
from tests.helpers.browser import shot
from tests.helpers.graphs import executions, release, runs_of
from tests.helpers.processes import WorkerProcess
from tests.helpers.runs import finished, probe, slow_started
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def failed(tmp_path) -> Thread:
    run = finished(engine.start("counted", {"dir": str(tmp_path), "fail": "left", "log": []}))
    assert run.status == Run.Status.ERROR
    return Thread.objects.get(pk=run.thread_pk)


def test_the_line_follows_a_run_live_from_running_to_finished(page, web, worker, tmp_path):
    run = engine.start("probe", {"dir": str(tmp_path), "log": []})
    wait_for(lambda: runs_of(tmp_path, "slow") == 1, message="the probe's slow node")
    page.goto(f"{web.url}/threads/{run.thread_pk}/")
    line = page.get_by_test_id("diagnosis")
    expect(line).to_have_attribute("data-kind", "running")
    expect(line).to_contain_text(
        re.compile(rf"Running\s+run {run.pk} \(start\) since .* in node slow")
    )
    expect(line).to_contain_text(f"on worker {Run.objects.get(pk=run.pk).worker}")
    shot(page, "diagnosis-running")

    release(tmp_path)
    # No reload: the live pane re-renders the line when the run ends.
    expect(line).to_have_attribute("data-kind", "finished")
    expect(line.get_by_test_id("diagnosis-text")).to_contain_text(
        f"run {run.pk} (start) ended success at "
    )
    page.get_by_role("link", name="Open the history").click()
    expect(page).to_have_url(f"{web.url}/threads/{run.thread_pk}/history/")


def test_retry_of_a_failed_thread_replays_the_failed_step(page, web, worker, tmp_path):
    thread = failed(tmp_path)
    page.goto(f"{web.url}/threads/{thread.pk}/")
    line = page.get_by_test_id("diagnosis")
    expect(line).to_have_attribute("data-kind", "failed")
    expect(line).to_contain_text("in node left (ValueError: left was told to fail), attempt 1.")
    shot(page, "diagnosis-failed")

    page.get_by_role("link", name="Retry from the failed step").click()
    expect(page.get_by_text("These nodes run again, with their side effects.")).to_be_visible()
    page.get_by_label("Reason (required)").fill("Retry after the failure")
    page.get_by_role("button", name="Replay from here").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    replay = finished(thread.runs.filter(kind=Run.Kind.REPLAY).get())

    # The failed step ran again, and only it: ``first`` kept its saved result.
    assert len(executions(tmp_path, "first")) == 1
    assert len(executions(tmp_path, "left")) == 2
    assert replay.status == Run.Status.ERROR  # the state still tells left to fail
    page.goto(f"{web.url}/threads/{thread.pk}/")
    expect(line.get_by_test_id("diagnosis-text")).to_contain_text(f"run {replay.pk} in node left")


def test_the_threads_list_filters_by_diagnosis(page, web, worker, tmp_path):
    broken = failed(tmp_path)
    bare = engine.create_thread("counted")
    page.goto(f"{web.url}/")
    rows = page.locator("table.threads tbody tr[data-thread-id]")
    expect(rows).to_have_count(2)
    page.get_by_label("Diagnosis").select_option("failed")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"diagnosis=failed"))
    expect(rows).to_have_count(1)
    expect(page.locator(f'tr[data-thread-id="{broken.name}"]')).to_be_visible()
    shot(page, "diagnosis-filter")

    page.get_by_label("Diagnosis").select_option("never_started")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator(f'tr[data-thread-id="{bare.name}"]')).to_be_visible()
    expect(rows).to_have_count(1)


# Last in this module: it stops the session's worker (it would take the run) for its own.
@pytest.fixture
def own_workers(worker):
    worker.stop()
    yield
    worker.start()


def test_a_killed_worker_shows_stalled_then_ran_twice_after_the_rescue(
    page, web, own_workers, tmp_path
):
    doomed = WorkerProcess(
        settings.VAR_DIR / "test-worker-diag-browser-doomed.log", "doomed"
    ).start()
    run = probe(tmp_path)
    slow_started(run, tmp_path)
    page.goto(f"{web.url}/threads/{run.thread_pk}/")
    line = page.get_by_test_id("diagnosis")
    expect(line).to_have_attribute("data-kind", "running")
    doomed.kill()
    # No reload: the open page turns to stalled once the lease expired, though the dead
    # worker writes no event.
    expect(line).to_have_attribute("data-kind", "stalled")
    expect(line).to_contain_text(f"run {run.pk}'s lease (worker {doomed.hostname}, attempt 1)")
    expect(line).to_contain_text("no worker has taken it")
    shot(page, "diagnosis-stalled")
    page.get_by_role("link", name=f"Follow run {run.pk}").click()
    expect(page).to_have_url(f"{web.url}/runs/{run.pk}/")

    release(tmp_path)
    rescuer = WorkerProcess(settings.VAR_DIR / "test-worker-diag-browser-rescuer.log", "rescuer")
    rescuer.start()
    try:
        finished(run)
    finally:
        rescuer.stop()
    page.goto(f"{web.url}/threads/{run.thread_pk}/")
    expect(line).to_have_attribute("data-kind", "ran_twice")
    expect(line.get_by_test_id("diagnosis-text")).to_have_text(
        f"after a recovery, slow ran again in the same super-step of run {run.pk} (success); "
        "side effects may have happened twice."
    )
    shot(page, "diagnosis-ran-twice")
    page.get_by_role("link", name=f"Review run {run.pk}").click()
    expect(page).to_have_url(f"{web.url}/runs/{run.pk}/")
