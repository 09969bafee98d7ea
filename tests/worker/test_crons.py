"""Crons end to end: the official ``langgraph-sdk``'s ``crons.*`` against the console
served by uvicorn, a real Celery beat (django-celery-beat's ``DatabaseScheduler``) that
picks a new cron up without a restart and fires it, a real worker that runs what it
started, one run for two fires of one slot, and a fire's own thread deleted after its
run."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import UnprocessableEntityError

from durable.engine import crons
from durable.models import AuditEvent, Cron, Run, Tenant, Thread
from tests.helpers.processes import BeatProcess
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

GREETING = {"user_id": "ada"}


@pytest.fixture
def client(web, api_key):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk:
        yield sdk


@pytest.fixture
def beat(worker, tmp_path):
    process = BeatProcess(tmp_path / "beat.log").start()
    yield process
    process.stop()


def test_the_python_sdk_s_crons_calls(client):
    thread = client.threads.create()["thread_id"]
    on_thread = client.crons.create_for_thread(
        thread, "preferences", schedule="0 9 * * 1-5", input=GREETING, timezone="Europe/Paris"
    )
    assert on_thread["thread_id"] == thread and on_thread["timezone"] == "Europe/Paris"
    alone = client.crons.create(
        "preferences", schedule="*/5 * * * *", input=GREETING, metadata={"team": "growth"}
    )
    assert alone["thread_id"] is None and alone["on_run_completed"] == "delete"
    assert client.crons.count() == 2
    assert client.crons.count(thread_id=thread) == 1
    found = client.crons.search(metadata={"team": "growth"})
    assert [c["cron_id"] for c in found] == [alone["cron_id"]]
    changed = client.crons.update(alone["cron_id"], schedule="0 * * * *", enabled=False)
    assert changed["schedule"] == "0 * * * *" and changed["enabled"] is False
    assert client.crons.search(enabled=False)[0]["cron_id"] == alone["cron_id"]
    with pytest.raises(UnprocessableEntityError) as refused:
        client.crons.create("preferences", schedule="every day", input=GREETING)
    assert refused.value.response.json()["field"] == "schedule"
    client.crons.delete(alone["cron_id"])
    assert client.crons.count() == 1
    assert not PeriodicTask.objects.filter(name=f"cron:{alone['cron_id']}").exists()


def _fake_last_fire(cron: Cron, slot, ago: timedelta) -> None:
    """The cron's slot is ``slot``, and beat last fired its task ``ago``: so beat finds
    it due at once (a once-a-minute cron last fired over a minute ago)."""
    Cron.objects.filter(pk=cron.pk).update(next_run_date=slot)
    task = PeriodicTask.objects.get(name=cron.task_name)
    task.last_run_at = timezone.now() - ago
    task.save()  # tells beat its schedule changed


def test_beat_fires_a_new_cron_and_skips_a_missed_slot(client, beat):
    """Beat is already running when the crons are made. Time is faked where the
    scheduler reads it, so that the once-a-minute crons are due at once rather than at
    the next minute: one's slot is now, the other's was ten minutes ago, as if beat had
    been down since. The first runs, and its run succeeds; the second's slot is skipped
    (no run, no burst of the ten missed ones) and it waits for its next slot."""
    made = [
        client.crons.create(
            "preferences", schedule="* * * * *", input=GREETING, on_run_completed="keep"
        )
        for _ in range(2)
    ]
    due, missed = (Cron.objects.get(cron_id=m["cron_id"]) for m in made)
    now = timezone.now().replace(microsecond=0)
    _fake_last_fire(missed, now - timedelta(minutes=10), timedelta(minutes=11))
    _fake_last_fire(due, now, timedelta(minutes=2))
    run = wait_for(
        lambda: Run.objects.filter(cron=due).order_by("pk").first(),
        timeout=40,
        message="the cron's run",
    )
    wait_for(
        lambda: Run.objects.get(pk=run.pk).status == "success",
        timeout=30,
        message="the cron's run to succeed",
    )
    assert Run.objects.get(pk=run.pk).requested_by == f"cron:{due.cron_id}"
    assert client.runs.get(run.thread.name, str(run.pk))["status"] == "success"
    wait_for(
        lambda: Cron.objects.get(pk=missed.pk).next_run_date > now - timedelta(seconds=1),
        timeout=20,
        message="the missed slot to be skipped",
    )
    # One run per slot claimed: the faked one, and the next real minute's if the test
    # crossed it (each fire records its slot as last_run_date; the missed one none).
    for cron, last_fresh_slot in ((due, now), (missed, None)):
        cron.refresh_from_db()
        crossed = cron.last_run_date is not None and cron.last_run_date > now
        assert crossed or cron.last_run_date == last_fresh_slot
        ran_faked_slot = last_fresh_slot is not None
        assert Run.objects.filter(cron=cron).count() == ran_faked_slot + crossed
    assert due.next_run_date > now


def test_two_fires_of_one_slot_start_one_run(worker):
    cron = crons.create_cron(
        "* * * * *",
        tenant=Tenant.default(),
        assistant_id="preferences",
        payload={"input": GREETING},
        on_run_completed="keep",
    )
    barrier, started = threading.Barrier(2), []

    def fire():
        try:
            barrier.wait()
            started.append(crons.fire(cron.pk, now=cron.next_run_date))
        finally:
            connections.close_all()

    fires = [threading.Thread(target=fire) for _ in range(2)]
    for t in fires:
        t.start()
    for t in fires:
        t.join()
    assert sorted(r is not None for r in started) == [False, True]
    assert Run.objects.filter(cron=cron).count() == 1


def test_a_fire_s_own_thread_is_deleted_after_its_run(worker):
    cron = crons.create_cron(
        "* * * * *",
        tenant=Tenant.default(),
        assistant_id="preferences",
        payload={"input": GREETING},
    )
    run = crons.fire(cron.pk, now=cron.next_run_date)
    thread = run.thread_pk
    seen = []

    def ended_then_gone():
        status = Run.objects.filter(pk=run.pk).values_list("status", flat=True).first()
        if status:
            seen.append(status)
        return not Thread.objects.filter(pk=thread).exists()

    wait_for(ended_then_gone, timeout=30, message="the fire's thread to be deleted")
    assert "success" in seen
    assert Cron.objects.filter(pk=cron.pk).exists()
    deleted = AuditEvent.objects.get(action="delete", thread_name=run.thread.name)
    assert deleted.actor == "system" and str(cron.cron_id) in deleted.reason
