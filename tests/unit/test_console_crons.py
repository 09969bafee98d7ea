"""The console's Crons page: a cron made from its form (stored with its beat task, and
audited), refusals shown on the form field with nothing stored, enable, disable and
delete, the schedule in words, a cron's runs marked on the run and thread pages, and a
viewer who reads only."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from django_celery_beat.models import PeriodicTask

from dashboard.present.crons import LAST_RUNS
from dashboard.views.crons import CRONS_PER_PAGE
from durable import engine
from durable.engine import crons
from durable.models import AuditEvent, Cron, Run, Tenant
from durable.tasknames import CRON_TASK
from tests.helpers.html import described_by, unnamed_descriptions
from tests.helpers.users import member

pytestmark = pytest.mark.django_db

FORM = {
    "assistant_id": "preferences",
    "schedule": "30 9 * * 1-5",
    "timezone": "Europe/Paris",
    "input": '{"user_id": "ada"}',
    "on_run_completed": "delete",
}


def test_a_cron_made_on_the_page_is_listed_in_words(client):
    response = client.post(reverse("crons"), FORM)
    assert response.status_code == 303
    cron = Cron.objects.get()
    assert (cron.schedule, cron.timezone, cron.payload["input"]) == (
        "30 9 * * 1-5",
        "Europe/Paris",
        {"user_id": "ada"},
    )
    assert PeriodicTask.objects.filter(name=cron.task_name, task=CRON_TASK).exists()
    assert AuditEvent.objects.filter(action="cron_create", actor="operator").exists()
    page = client.get(reverse("crons")).content.decode()
    assert "At 09:30, Monday through Friday" in page
    assert "<code>30 9 * * 1-5</code>" in page and "Europe/Paris" in page
    assert "none yet" in page and ">Disable<" in page


@pytest.mark.parametrize(
    "change, field, says",
    [
        ({"schedule": "61 * * * *"}, "schedule", "minute"),
        ({"timezone": "Mars/Olympus"}, "timezone", "IANA"),
        ({"end_time": "2020-01-01T00:00"}, "end_time", "in the past"),
        ({"assistant_id": "nope"}, "assistant_id", "not found"),
        ({"input": "{not json"}, "input", "not valid JSON"),
        ({"input": '{"user_id": 7}'}, "input", "user_id"),
    ],
)
def test_a_refused_cron_shows_the_error_on_its_field(client, change, field, says):
    response = client.post(reverse("crons"), FORM | change)
    assert response.status_code == 400
    page = response.content.decode()
    error = page.split(f'id="id_{field}_error"', 1)[1].split("</span>", 1)[0]
    assert says in error, error
    assert f'role="alert">{field}:' not in error  # said once, beside its field
    assert not Cron.objects.exists() and not PeriodicTask.objects.filter(task=CRON_TASK).exists()


def test_two_bad_fields_are_each_shown_with_their_error(client):
    response = client.post(
        reverse("crons"), FORM | {"schedule": "61 * * * *", "timezone": "Mars/Olympus"}
    )

    assert response.status_code == 400
    page = response.content.decode()
    schedule = page.split('id="id_schedule_error"', 1)[1].split("</span>", 1)[0]
    timezone = page.split('id="id_timezone_error"', 1)[1].split("</span>", 1)[0]
    assert "bad minute field &#x27;61&#x27;" in schedule
    assert "timezone &#x27;Mars/Olympus&#x27; is not an IANA time zone" in timezone
    assert not Cron.objects.exists() and not PeriodicTask.objects.filter(task=CRON_TASK).exists()


def test_each_field_names_the_ids_of_its_help_and_of_its_error(client):
    page = client.post(reverse("crons"), FORM | {"schedule": "61 * * * *"}).content.decode()

    assert set(described_by(page)["schedule"]) == {"id_schedule_helptext", "id_schedule_error"}
    assert unnamed_descriptions(page) == {}


def test_disable_enable_and_delete(client):
    client.post(reverse("crons"), FORM)
    cron = Cron.objects.get()
    assert client.post(reverse("cron-enable", args=[cron.pk]), {"enabled": "0"}).status_code == 303
    cron.refresh_from_db()
    task = PeriodicTask.objects.get(name=cron.task_name)
    assert not cron.enabled and cron.next_run_date is None and not task.enabled
    assert ">Enable<" in client.get(reverse("crons")).content.decode()
    client.post(reverse("cron-enable", args=[cron.pk]), {"enabled": "1"})
    cron.refresh_from_db()
    assert cron.enabled and cron.next_run_date is not None
    assert client.post(reverse("cron-delete", args=[cron.pk])).status_code == 303
    assert not Cron.objects.exists() and not PeriodicTask.objects.filter(task=CRON_TASK).exists()
    actions = list(AuditEvent.objects.values_list("action", flat=True))
    assert actions.count("cron_update") == 2 and "cron_delete" in actions


def test_a_cron_s_run_is_marked_on_its_run_and_thread_pages(
    client, django_capture_on_commit_callbacks
):
    client.post(reverse("crons"), FORM | {"on_run_completed": "keep"})
    cron = Cron.objects.get()
    with django_capture_on_commit_callbacks():
        run = crons.fire(cron.pk, now=cron.next_run_date)
    assert Run.objects.get().cron_id == cron.pk
    mark = f'href="{reverse("crons")}#cron-{cron.pk}" class="cron-mark"'
    for page in (reverse("run", args=[run.pk]), reverse("thread", args=[run.thread_pk])):
        assert mark in client.get(page).content.decode()
    assert (
        "started by cron <code>30 9 * * 1-5</code>"
        in client.get(reverse("run", args=[run.pk])).content.decode()
    )
    listed = client.get(reverse("crons")).content.decode()
    assert f"run {run.pk}: pending" in listed


def test_a_viewer_reads_the_page_but_cannot_change_a_cron(client):
    client.post(reverse("crons"), FORM)
    cron = Cron.objects.get()
    viewer = Client()
    viewer.force_login(member("vera", role="viewer"))
    page = viewer.get(reverse("crons")).content.decode()
    assert "30 9 * * 1-5" in page and "Create cron" not in page and ">Disable<" not in page
    assert viewer.post(reverse("crons"), FORM).status_code == 403
    assert viewer.post(reverse("cron-enable", args=[cron.pk]), {"enabled": "0"}).status_code == 403
    assert viewer.post(reverse("cron-delete", args=[cron.pk])).status_code == 403
    assert Cron.objects.get().enabled and Cron.objects.count() == 1


def test_another_tenant_s_cron_is_a_404(client, globex):
    cron = crons.create_cron(
        "0 * * * *",
        tenant=globex,
        assistant_id="preferences",
        payload={"input": {"user_id": "x"}},
    )
    assert client.post(reverse("cron-delete", args=[cron.pk])).status_code == 404
    assert "0 * * * *" not in client.get(reverse("crons")).content.decode()
    assert Cron.objects.filter(tenant=globex).count() == 1
    assert Tenant.default().crons.count() == 0


def _make_crons(n: int) -> list[Cron]:
    return [
        crons.create_cron(
            f"{minute} * * * *",
            tenant=Tenant.default(),
            assistant_id="preferences",
            payload={"input": {"user_id": "x"}},
        )
        for minute in range(n)
    ]


def test_the_page_lists_a_page_of_crons_newest_first_and_links_the_next(client):
    made = _make_crons(CRONS_PER_PAGE + 3)
    first = client.get(reverse("crons")).content.decode()
    shown = [c for c in made if f'id="cron-{c.pk}"' in first]
    assert shown == made[3:]  # the newest page's worth
    assert 'href="?page=2"' in first and "Page 1 of 2" in first
    second = client.get(reverse("crons") + "?page=2").content.decode()
    assert [c for c in made if f'id="cron-{c.pk}"' in second] == made[:3]
    assert 'href="?page=1"' in second and "?page=3" not in second


def test_a_page_s_queries_do_not_grow_with_its_crons_or_their_runs(
    client, django_assert_max_num_queries
):
    cron, *others = _make_crons(CRONS_PER_PAGE)
    runs = [engine.start("preferences", {"user_id": "x"}) for _ in range(LAST_RUNS + 2)]
    Run.objects.update(cron=cron)
    with django_assert_max_num_queries(12):
        page = client.get(reverse("crons")).content.decode()
    row = page.split(f'id="cron-{cron.pk}"', 1)[1].split("</tr>", 1)[0]
    newest = [r.pk for r in runs[-LAST_RUNS:]]
    assert [pk for pk in (r.pk for r in runs) if f"run {pk}:" in row] == newest
    assert all(
        "none yet" in page.split(f'id="cron-{c.pk}"', 1)[1].split("</tr>")[0] for c in others
    )


def test_a_cron_names_its_assistant_and_shows_a_fire_that_started_no_run(
    client, django_capture_on_commit_callbacks
):
    options = engine.create_assistant(Tenant.default(), "options", name="Ann's options")
    on_it = crons.create_cron(
        "* * * * *",
        tenant=Tenant.default(),
        assistant_id=str(options.assistant_id),
        payload={"input": {}},
    )
    # An input the graph no longer takes (its code changed since): the fire is refused.
    Cron.objects.filter(pk=on_it.pk).update(payload={"input": {"nobody": 1}})
    with django_capture_on_commit_callbacks():
        assert crons.fire(on_it.pk, now=on_it.next_run_date) is None
    page = client.get(reverse("crons")).content.decode()
    row = page.split(f'id="cron-{on_it.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "Ann&#x27;s options</a>" in row and "(options)" in row
    assert str(on_it.cron_id)[:8] in row
    refused = row.split('data-testid="cron-last-error">', 1)[1].split("</span>", 1)[0]
    assert refused.startswith("started no run: input: ")


def test_enabling_a_cron_that_has_ended_is_refused_on_the_page(client):
    ended = _make_crons(1)[0]
    Cron.objects.filter(pk=ended.pk).update(enabled=False, end_time="2020-01-01T00:00:00Z")
    response = client.post(reverse("cron-enable", args=[ended.pk]), {"enabled": "1"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "give a later end_time" in page.split('data-testid="cron-refused">', 1)[1]
    ended.refresh_from_db()
    assert not ended.enabled
