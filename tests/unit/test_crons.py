"""Crons in the engine and the API, without a worker: what a create stores (the cron
and its Celery beat task), the refusals that store nothing, tenants and viewers, and the
fire of a slot: claimed once, a missed slot skipped, a cron past its end disabled."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from durable.engine import crons
from durable.models import AuditEvent, Cron, Run, Tenant, Thread
from durable.tasknames import CRON_TASK
from durable.tenancy import create_token

pytestmark = pytest.mark.django_db

GREETING = {"user_id": "ada"}


def api(key: str):
    client = Client(headers={"x-api-key": key})

    def call(method: str, path: str, body: dict | None = None):
        response = getattr(client, method)(
            f"/api{path}", data=json.dumps(body or {}), content_type="application/json"
        )
        return response.status_code, (response.json() if response.content else None)

    return call


@pytest.fixture
def operator_api(db):
    return api(create_token(Tenant.default(), "ops")[1])


def nothing_stored():
    return not Cron.objects.exists() and not PeriodicTask.objects.filter(task=CRON_TASK).exists()


def test_a_cron_is_stored_with_its_beat_task_and_audited(operator_api):
    status, cron = operator_api(
        "post",
        "/runs/crons",
        {
            "assistant_id": "preferences",
            "schedule": "30 9 * * 1-5",
            "timezone": "Europe/Paris",
            "input": GREETING,
            "metadata": {"team": "growth"},
            "on_run_completed": "keep",
        },
    )
    assert status == 200, cron
    assert cron["assistant_id"] == "preferences" and cron["thread_id"] is None
    assert cron["timezone"] == "Europe/Paris" and cron["on_run_completed"] == "keep"
    assert cron["payload"]["input"] == GREETING and cron["metadata"] == {"team": "growth"}
    assert cron["enabled"] is True and cron["user_id"] == "token:ops"
    # 9:30 in Paris is 8:30 UTC in winter: the next weekday's.
    assert cron["next_run_date"].endswith(("08:30:00Z", "08:30:00+00:00", "07:30:00Z"))
    row = Cron.objects.get()
    task = PeriodicTask.objects.get(name=row.task_name)
    assert (task.task, json.loads(task.args), task.enabled) == (CRON_TASK, [row.pk], True)
    assert task.expire_seconds == 60  # DURABLE_CRON_GRACE_SECONDS: a stale message is dropped
    assert (task.crontab.minute, task.crontab.hour, task.crontab.day_of_week) == ("30", "9", "1-5")
    assert str(task.crontab.timezone) == "Europe/Paris"
    assert AuditEvent.objects.filter(action="cron_create", actor="token:ops").count() == 1


@pytest.mark.parametrize(
    "change, field",
    [
        ({"schedule": "61 * * * *"}, "schedule"),
        ({"schedule": "* * *"}, "schedule"),
        ({"schedule": "0 0 31 2 *"}, "schedule"),
        ({"schedule": "0 0 * * SUN#1"}, "schedule"),
        ({"enabled": "yes"}, "enabled"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"end_time": "2020-01-01T00:00:00Z"}, "end_time"),
        ({"assistant_id": "no_such_graph"}, "assistant_id"),
        ({"input": {"user_id": 7}}, "input"),
        (
            {"assistant_id": "options", "input": {}, "config": {"configurable": {"user": 5}}},
            "config.configurable.user",
        ),
    ],
)
def test_bad_input_is_a_422_naming_the_field_and_stores_nothing(operator_api, change, field):
    body = {"assistant_id": "preferences", "schedule": "* * * * *", "input": GREETING} | change
    status, answer = operator_api("post", "/runs/crons", body)
    assert (status, answer["field"]) == (422, field), answer
    assert nothing_stored()
    assert not AuditEvent.objects.filter(action="cron_create").exists()


def test_patch_changes_the_schedule_and_its_beat_task(operator_api):
    _, cron = operator_api(
        "post",
        "/runs/crons",
        {"assistant_id": "preferences", "schedule": "0 * * * *", "input": GREETING},
    )
    path = f"/runs/crons/{cron['cron_id']}"
    status, changed = operator_api("patch", path, {"schedule": "*/5 * * * *", "enabled": False})
    assert status == 200, changed
    assert changed["schedule"] == "*/5 * * * *" and changed["enabled"] is False
    assert changed["next_run_date"] is None
    task = PeriodicTask.objects.get(name=Cron.objects.get().task_name)
    assert task.crontab.minute == "*/5" and task.enabled is False
    status, refused = operator_api("patch", path, {"timezone": "Nowhere/Land"})
    assert (status, refused["field"]) == (422, "timezone")
    assert Cron.objects.get().timezone == "UTC"
    status, _ = operator_api("patch", path, {"enabled": True})
    assert Cron.objects.get().next_run_date is not None
    assert operator_api("delete", path)[0] == 204
    assert nothing_stored()
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"cron_create", "cron_update", "cron_delete"} <= actions


def test_search_and_count_filter_and_select(operator_api):
    thread = operator_api("post", "/threads", {"thread_id": "daily"})[1]["thread_id"]
    operator_api(
        "post",
        f"/threads/{thread}/runs/crons",
        {"assistant_id": "preferences", "schedule": "0 8 * * *", "input": GREETING},
    )
    operator_api(
        "post",
        "/runs/crons",
        {"assistant_id": "preferences", "schedule": "0 9 * * *", "metadata": {"k": "v"}}
        | {"input": GREETING},
    )
    assert operator_api("post", "/runs/crons/count", {})[1] == 2
    assert operator_api("post", "/runs/crons/count", {"thread_id": "daily"})[1] == 1
    assert operator_api("post", "/runs/crons/count", {"metadata": {"k": "v"}})[1] == 1
    status, found = operator_api(
        "post", "/runs/crons/search", {"sort_by": "created_at", "sort_order": "asc"}
    )
    assert status == 200 and [c["schedule"] for c in found] == ["0 8 * * *", "0 9 * * *"]
    assert found[0]["thread_id"] == "daily"
    _, selected = operator_api("post", "/runs/crons/search", {"select": ["cron_id", "schedule"]})
    assert all(set(c) == {"cron_id", "schedule"} for c in selected)


def test_another_tenant_sees_a_404_and_a_viewer_cannot_change(operator_api, globex):
    _, cron = operator_api(
        "post",
        "/runs/crons",
        {"assistant_id": "preferences", "schedule": "0 * * * *", "input": GREETING},
    )
    path = f"/runs/crons/{cron['cron_id']}"
    foreign = api(create_token(globex, "g")[1])
    assert foreign("patch", path, {"enabled": False})[0] == 404
    assert foreign("delete", path)[0] == 404
    assert foreign("post", "/runs/crons/count", {})[1] == 0
    assert foreign("patch", "/runs/crons/not-a-uuid", {})[0] == 404
    viewer = api(create_token(Tenant.default(), "v", role="viewer")[1])
    assert viewer("patch", path, {"enabled": False})[0] == 403
    assert viewer("delete", path)[0] == 403
    body = {"assistant_id": "preferences", "schedule": "0 * * * *", "input": GREETING}
    assert viewer("post", "/runs/crons", body)[0] == 403
    assert viewer("post", "/runs/crons/count", {})[1] == 1
    assert Cron.objects.get().enabled


def a_cron(**fields) -> Cron:
    return crons.create_cron(
        "* * * * *",
        tenant=Tenant.default(),
        assistant_id="preferences",
        payload={"input": GREETING},
        **fields,
    )


def test_a_slot_fires_once_and_its_run_is_marked_with_the_cron(django_capture_on_commit_callbacks):
    cron = a_cron()
    slot = cron.next_run_date
    at = slot + timedelta(seconds=1)
    with django_capture_on_commit_callbacks():  # the run's message is not sent here
        run = crons.fire(cron.pk, now=at)
        again = crons.fire(cron.pk, now=at)
    assert run is not None and again is None
    assert Run.objects.get().cron_id == cron.pk and run.requested_by == f"cron:{cron.cron_id}"
    assert Run.objects.get().on_completion == "delete"
    cron.refresh_from_db()
    assert cron.last_run_date == slot and cron.next_run_date == slot + timedelta(minutes=1)


def test_a_missed_slot_is_skipped_and_the_next_one_runs(django_capture_on_commit_callbacks):
    cron = a_cron()
    slot = cron.next_run_date
    late = slot + timedelta(minutes=10, seconds=5)
    with django_capture_on_commit_callbacks():
        assert crons.fire(cron.pk, now=late) is None
        cron.refresh_from_db()
        assert cron.next_run_date == slot + timedelta(minutes=11)
        assert not Run.objects.exists()
        assert crons.fire(cron.pk, now=cron.next_run_date) is not None
    assert Run.objects.count() == 1


def test_a_cron_on_a_thread_runs_there(django_capture_on_commit_callbacks):
    thread = Thread.objects.create(
        tenant=Tenant.default(), thread_id="t-1", name="daily", graph="preferences"
    )
    cron = a_cron(thread=thread)
    with django_capture_on_commit_callbacks():
        run = crons.fire(cron.pk, now=cron.next_run_date)
    assert run.thread_id == thread.pk and Run.objects.get().on_completion == ""


def test_a_cron_past_its_end_is_disabled_and_fires_no_more():
    cron = a_cron(end_time=timezone.now() + timedelta(seconds=30))
    assert crons.fire(cron.pk, now=timezone.now() + timedelta(minutes=5)) is None
    cron.refresh_from_db()
    assert not cron.enabled and cron.next_run_date is None
    assert not PeriodicTask.objects.get(name=cron.task_name).enabled
    assert not Run.objects.exists()


def test_no_fire_after_the_end_is_shown_and_an_ended_cron_is_not_enabled_again(operator_api):
    minutely = a_cron(end_time=timezone.now() + timedelta(seconds=1))
    minutely.refresh_from_db()
    # Its next minute is past its end: no next fire.
    assert minutely.next_run_date is None or minutely.next_run_date <= minutely.end_time
    Cron.objects.filter(pk=minutely.pk).update(end_time=timezone.now() - timedelta(minutes=1))
    crons.fire(minutely.pk)
    minutely.refresh_from_db()
    assert not minutely.enabled
    status, refused = operator_api("patch", f"/runs/crons/{minutely.cron_id}", {"enabled": True})
    assert (status, refused["field"]) == (422, "enabled")
    minutely.refresh_from_db()
    assert not minutely.enabled


def test_a_thread_s_crons_and_their_beat_tasks_go_with_the_thread(operator_api):
    operator_api("post", "/threads", {"thread_id": "daily"})
    body = {"assistant_id": "preferences", "schedule": "0 8 * * *", "input": GREETING}
    assert operator_api("post", "/threads/daily/runs/crons", body)[0] == 200
    assert PeriodicTask.objects.filter(task=CRON_TASK).count() == 1
    assert operator_api("delete", "/threads/daily")[0] == 204
    assert nothing_stored()


def test_a_patch_that_leaves_the_schedule_keeps_the_due_slot(operator_api):
    _, made = operator_api(
        "post",
        "/runs/crons",
        {"assistant_id": "preferences", "schedule": "* * * * *", "input": GREETING},
    )
    slot = timezone.now().replace(microsecond=0) - timedelta(seconds=1)
    Cron.objects.update(next_run_date=slot)  # fired by beat, not yet claimed
    path = f"/runs/crons/{made['cron_id']}"
    assert operator_api("patch", path, {"metadata": {"k": "v"}})[0] == 200
    assert Cron.objects.get().next_run_date == slot
    assert Cron.objects.get().metadata == {"k": "v"}
    assert operator_api("patch", path, {"schedule": "0 * * * *"})[0] == 200
    assert Cron.objects.get().next_run_date.minute == 0


def test_a_cron_on_a_stored_assistant_fires_its_latest_version(
    operator_api, django_capture_on_commit_callbacks
):
    _, made = operator_api(
        "post",
        "/assistants",
        {"graph_id": "options", "config": {"configurable": {"x": 1}}, "context": {"user": "ann"}},
    )
    aid = made["assistant_id"]
    body = {"assistant_id": aid, "schedule": "* * * * *", "input": {}}
    status, made_cron = operator_api(
        "post", "/runs/crons", body | {"config": {"configurable": {"y": 3}}}
    )
    assert status == 200, made_cron
    assert made_cron["assistant_id"] == aid
    # A version made after the cron is the one its next fire runs.
    operator_api("patch", f"/assistants/{aid}", {"config": {"configurable": {"x": 2}}})
    cron = Cron.objects.get()
    with django_capture_on_commit_callbacks():
        run = crons.fire(cron.pk, now=cron.next_run_date)
    assert run.graph == "options" and run.assistant.assistant_id == uuid.UUID(aid)
    assert run.assistant_version == 2
    assert run.config == {"configurable": {"x": 2, "y": 3}}
    assert run.context == {"user": "ann"}
    # Another tenant's assistant, or none, is refused on assistant_id and stores nothing.
    globex = Tenant.objects.create(slug="globex", name="Globex")
    foreign = api(create_token(globex, "g")[1])
    status, refused = foreign("post", "/runs/crons", body)
    assert status == 422 and refused["field"] == "assistant_id"
    assert Cron.objects.count() == 1


def test_deleting_an_assistant_deletes_its_crons_and_their_beat_tasks(operator_api):
    _, made = operator_api("post", "/assistants", {"graph_id": "options"})
    aid = made["assistant_id"]
    body = {"schedule": "* * * * *", "input": {}}
    _, on_it = operator_api("post", "/runs/crons", body | {"assistant_id": aid})
    _, on_graph = operator_api("post", "/runs/crons", body | {"assistant_id": "options"})
    assert operator_api("delete", f"/assistants/{aid}")[0] == 204
    _, left = operator_api("post", "/runs/crons/search", {})
    assert [c["cron_id"] for c in left] == [on_graph["cron_id"]]
    assert list(PeriodicTask.objects.filter(task=CRON_TASK).values_list("name", flat=True)) == [
        f"cron:{on_graph['cron_id']}"
    ]
    deleted = AuditEvent.objects.get(action="assistant_delete")
    assert deleted.detail["crons"] == [on_it["cron_id"]]


def test_a_refused_fire_is_kept_on_the_cron_until_one_starts_a_run(
    django_capture_on_commit_callbacks,
):
    thread = Thread.objects.create(
        tenant=Tenant.default(), thread_id="t-2", name="idle", graph="preferences"
    )
    # No input, on a thread with nothing to go on with: the fire's run is refused.
    cron = crons.create_cron(
        "* * * * *",
        tenant=Tenant.default(),
        assistant_id="preferences",
        thread=thread,
    )
    with django_capture_on_commit_callbacks():
        assert crons.fire(cron.pk, now=cron.next_run_date) is None
    cron.refresh_from_db()
    assert cron.last_error.startswith("input: ") and not Run.objects.exists()
    crons.update_cron(cron, {"input": GREETING})
    cron.refresh_from_db()
    with django_capture_on_commit_callbacks():
        assert crons.fire(cron.pk, now=cron.next_run_date) is not None
    cron.refresh_from_db()
    assert cron.last_error == ""


def test_an_assistant_with_crons_keeps_its_graph(operator_api):
    _, made = operator_api("post", "/assistants", {"graph_id": "options"})
    aid = made["assistant_id"]
    body = {"assistant_id": aid, "schedule": "* * * * *", "input": {}}
    assert operator_api("post", "/runs/crons", body)[0] == 200
    status, refused = operator_api("patch", f"/assistants/{aid}", {"graph_id": "preferences"})
    assert (status, refused["field"]) == (422, "graph_id")
    _, found = operator_api("post", "/assistants/search", {"graph_id": "options"})
    assert [a["assistant_id"] for a in found if a["assistant_id"] == aid] == [aid]
