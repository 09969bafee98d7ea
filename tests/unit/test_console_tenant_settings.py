"""The tenant's settings page on the console: a tenant admin sets "overdue after" (the
inbox then marks an interrupt overdue past it), audited; a bad value is an error on its
field with nothing changed; the form needs its CSRF token; only the tenant's admins
see the page, and each admin changes their own tenant only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from durable.models import AuditEvent, Tenant
from tests.helpers.html import described_by, unnamed_descriptions
from tests.helpers.threads import arrived
from tests.helpers.users import member

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/tenant/settings/"


def logged_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


@pytest.fixture
def admin_client(db) -> Client:
    return logged_in(member("ada", role="admin"))


def field_error(page: str, field: str) -> str:
    return page.split(f'id="id_{field}_error"', 1)[1].split("</span>", 1)[0]


def test_a_tenant_admin_sets_overdue_after_and_the_inbox_follows_it(admin_client):
    arrived(ago=timedelta(hours=3))
    assert "overdue" not in admin_client.get(reverse("inbox")).content.decode().lower()
    page = admin_client.get(URL).content.decode()
    assert reverse("tenant-settings") == URL
    assert 'value="1 00:00:00"' in page and '<a href="/tenant/settings/">Settings</a>' in page

    response = admin_client.post(URL, {"overdue_after": "02:00:00", "reason": "SLA is 2 h"})

    assert response.status_code == 303 and response["Location"] == URL
    assert Tenant.default().overdue_after == timedelta(hours=2)
    event = AuditEvent.objects.get(action="tenant_settings")
    assert (event.actor, event.tenant, event.reason) == ("ada", Tenant.default(), "SLA is 2 h")
    assert event.detail == {"overdue_after": [86400.0, 7200.0]}
    assert 'value="02:00:00"' in admin_client.get(URL).content.decode()
    assert "overdue" in admin_client.get(reverse("inbox")).content.decode().lower()
    # The same value again changes nothing, and adds no event.
    admin_client.post(URL, {"overdue_after": "PT2H"})
    assert AuditEvent.objects.filter(action="tenant_settings").count() == 1


@pytest.mark.parametrize(
    "value, says",
    [
        ("0", "at least 1 second"),
        ("-1 00:00:00", "at least 1 second"),
        # A fraction of a second is refused with the minimum, not as "not more than zero".
        ("00:00:00.5", "at least 1 second (00:00:01)"),
        ("3651 00:00:00", "at most 3650 days"),
        ("soon", "must be a duration"),
        ("", "is required"),
        ("1\x00", "must be a duration"),
    ],
)
def test_a_bad_value_is_an_error_on_its_field_and_changes_nothing(admin_client, value, says):
    response = admin_client.post(URL, {"overdue_after": value})

    assert response.status_code == 400
    assert says in field_error(response.content.decode(), "overdue_after")
    assert Tenant.default().overdue_after == timedelta(hours=24)
    assert not AuditEvent.objects.filter(action="tenant_settings").exists()


def test_the_form_needs_its_csrf_token(db):
    client = logged_in(member("ada", role="admin"), enforce_csrf_checks=True)

    assert client.post(URL, {"overdue_after": "02:00:00"}).status_code == 403
    assert Tenant.default().overdue_after == timedelta(hours=24)
    page = client.get(URL).content.decode()
    assert 'name="csrfmiddlewaretoken"' in page


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_only_the_tenants_admins_see_or_change_its_settings(db, role):
    client = logged_in(member("bob", role=role))

    assert client.get(URL).status_code == 403
    assert client.post(URL, {"overdue_after": "02:00:00"}).status_code == 403
    assert Tenant.default().overdue_after == timedelta(hours=24)
    assert ">Settings</a>" not in client.get(reverse("threads")).content.decode()


def test_an_admin_changes_their_own_tenant_only(db, globex):
    client = logged_in(member("gina", tenant=globex, role="admin"))

    assert client.post(URL, {"overdue_after": "00:30:00"}).status_code == 303

    assert Tenant.objects.get(slug="globex").overdue_after == timedelta(minutes=30)
    assert Tenant.default().overdue_after == timedelta(hours=24)
    assert AuditEvent.objects.get(action="tenant_settings").tenant.slug == "globex"


def test_the_field_names_the_ids_of_its_help_and_of_its_error(admin_client):
    page = admin_client.get(URL).content.decode()
    assert described_by(page)["overdue_after"] == ["id_overdue_after_helptext"]
    assert unnamed_descriptions(page) == {}

    page = admin_client.post(URL, {"overdue_after": "soon"}).content.decode()

    assert set(described_by(page)["overdue_after"]) == {
        "id_overdue_after_helptext",
        "id_overdue_after_error",
    }
    assert unnamed_descriptions(page) == {}


def test_a_save_says_it_saved_once(admin_client):
    response = admin_client.post(URL, {"overdue_after": "PT2H"}, follow=True)

    notice = response.content.decode().split('class="notice" role="status">', 1)[1]
    assert "Saved: overdue after is now 02:00:00." in notice.split("</div>", 1)[0]
    assert 'class="notice"' not in admin_client.get(URL).content.decode()


def test_the_help_says_the_unit_and_a_bare_number_is_seconds(admin_client):
    help_text = admin_client.get(URL).content.decode().split('id="id_overdue_after_helptext">')[1]
    help_text = help_text.split("</span>", 1)[0]
    assert "Days hours:minutes:seconds" in help_text and "A bare number is seconds" in help_text
    assert "At least 1 second" in help_text

    assert admin_client.post(URL, {"overdue_after": "90"}).status_code == 303

    assert Tenant.default().overdue_after == timedelta(seconds=90)
