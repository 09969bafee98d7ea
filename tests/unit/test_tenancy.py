"""Tenants, roles, API tokens and the audit trail in the console and the admin (over the
HTTP API: ``tests/server/test_tenants_over_http.py``).

Threads made by ``durable.engine`` without a tenant belong to the default tenant, where
the ``operator`` fixture is an operator; ``globex`` is another tenant, whose operator
``mallory`` must never see them.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.db import connection, transaction
from django.db.utils import DatabaseError
from django.test import Client
from django.urls import reverse

from durable import engine
from durable.models import ApiToken, AuditEvent, Role, Run, Tenant, Thread
from durable.tenancy import create_token
from tests.helpers.threads import at_interrupt, everything, head, made_run
from tests.helpers.users import PASSWORD, member

pytestmark = pytest.mark.django_db(transaction=True)


def logged_in(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def console_urls(thread: Thread, checkpoint: str, run: Run) -> list[tuple[str, str]]:
    """Every console URL that names a thread or a run, as (method, url)."""
    return [
        ("GET", reverse("thread", args=[thread.pk])),
        ("GET", reverse("thread-history", args=[thread.pk])),
        ("GET", reverse("checkpoint", args=[thread.pk, checkpoint])),
        ("GET", reverse("diff", args=[thread.pk]) + f"?a={checkpoint}&b={checkpoint}"),
        ("GET", reverse("thread-graph", args=[thread.pk])),
        ("GET", reverse("inbox-thread", args=[thread.pk])),
        ("GET", reverse("fork", args=[thread.pk, checkpoint])),
        ("GET", reverse("replay", args=[thread.pk, checkpoint])),
        ("GET", reverse("run", args=[run.pk])),
        ("POST", reverse("resume", args=[thread.pk])),
        ("POST", reverse("inbox-answer", args=[thread.pk])),
        ("POST", reverse("inbox-close", args=[thread.pk])),
        ("POST", reverse("fork", args=[thread.pk, checkpoint])),
        ("POST", reverse("replay", args=[thread.pk, checkpoint])),
        ("POST", reverse("cancel-run", args=[run.pk])),
    ]


def test_another_tenants_thread_is_a_404_everywhere_in_the_console(globex):
    thread = at_interrupt()
    run = made_run(status=Run.Status.PENDING)
    mallory = logged_in(member("mallory", globex, Role.OPERATOR))
    before = everything()
    for method, url in console_urls(thread, head(thread), run):
        response = mallory.get(url) if method == "GET" else mallory.post(url, {"reason": "x"})
        assert response.status_code == 404, (method, url, response.status_code)
    assert mallory.get(reverse("run-events", args=[run.pk])).status_code == 404
    listing = mallory.get(reverse("threads")).content.decode()
    assert thread.name not in listing
    assert thread.name not in mallory.get(reverse("inbox")).content.decode()
    assert everything() == before


def test_a_viewer_reads_but_cannot_act(client):
    thread = at_interrupt()
    run = made_run(status=Run.Status.PENDING)
    viewer = logged_in(member("vera", role=Role.VIEWER))
    before = everything()
    urls = console_urls(thread, head(thread), run)
    for method, url in urls:
        if method == "GET":
            assert viewer.get(url).status_code == 200, url
        else:
            assert viewer.post(url, {"reason": "x"}).status_code == 403, url
    start = viewer.post(reverse("start-run"), {"graph": "expense_approval", "input": "{}"})
    assert start.status_code == 403
    assert everything() == before
    assert Run.objects.get(pk=run.pk).status == Run.Status.PENDING
    page = viewer.get(reverse("thread", args=[thread.pk])).content.decode()
    assert "(viewer)" in page
    # Pages offer a viewer no form that would be refused.
    inbox = viewer.get(reverse("inbox-thread", args=[thread.pk])).content.decode()
    assert 'class="answer-form"' not in inbox and "answering is for operators" in inbox
    listing = viewer.get(reverse("threads")).content.decode()
    assert "Start expense_approval" not in listing
    operator_inbox = client.get(reverse("inbox-thread", args=[thread.pk])).content.decode()
    assert 'class="answer-form"' in operator_inbox


def test_the_console_needs_a_login():
    anonymous = Client()
    response = anonymous.get(reverse("threads"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    member("ann")
    assert (
        anonymous.post(reverse("login"), {"username": "ann", "password": PASSWORD}).status_code
        == 302
    )
    assert anonymous.get(reverse("threads")).status_code == 200


def test_a_member_of_two_tenants_switches_between_them(globex):
    ann = member("ann")
    Thread.objects.filter(pk=at_interrupt().pk).update(name="in-default")
    from durable.models import Membership

    Membership.objects.create(user=ann, tenant=globex, role=Role.VIEWER)
    engine.create_thread("expense_approval", name="in-globex", tenant=globex)
    ann_client = logged_in(ann)
    first = ann_client.get(reverse("threads")).content.decode()
    assert "in-default" in first and "in-globex" not in first
    assert ann_client.post(reverse("switch-tenant"), {"tenant": "globex"}).status_code == 302
    second = ann_client.get(reverse("threads")).content.decode()
    assert "in-globex" in second and "in-default" not in second
    # A tenant she is not a member of is refused: she stays where she was.
    Tenant.objects.create(slug="initech", name="Initech")
    ann_client.post(reverse("switch-tenant"), {"tenant": "initech"})
    assert "in-globex" in ann_client.get(reverse("threads")).content.decode()


def test_a_staff_auditor_reads_every_tenant_and_changes_nothing(globex):
    from django.contrib.auth.models import Permission

    theirs = engine.create_thread("expense_approval", name="globex-thread", tenant=globex)
    auditor = member("audrey", role=Role.VIEWER)
    auditor.user_permissions.add(Permission.objects.get(codename="audit_all_tenants"))
    audrey = logged_in(auditor)
    audrey.post(reverse("switch-tenant"), {"tenant": "globex"})
    assert "globex-thread" in audrey.get(reverse("threads")).content.decode()
    assert audrey.get(reverse("thread", args=[theirs.pk])).status_code == 200
    assert audrey.get(reverse("audit")).status_code == 200
    start = audrey.post(reverse("start-run"), {"graph": "expense_approval", "input": "{}"})
    assert start.status_code == 403


# -- the audit trail -------------------------------------------------------------------


def test_operator_actions_are_audited_with_actor_reason_and_checkpoints(client, operator):
    thread = at_interrupt()
    at = head(thread)
    response = client.post(
        reverse("fork", args=[thread.pk, at]),
        {"as_node": "validate", "reason": "wrong amount", "state-amount": "10"},
    )
    assert response.status_code == 303, response.content.decode()[:2000]
    fork = AuditEvent.objects.get(action=AuditEvent.Action.FORK)
    assert (fork.actor, fork.reason, fork.tenant) == ("operator", "wrong amount", Tenant.default())
    assert fork.thread_name == thread.name and fork.checkpoint_id == at
    assert fork.checkpoint_before == at and fork.checkpoint_after not in ("", at)
    run = made_run(status=Run.Status.PENDING)  # no worker takes it: nothing races
    client.post(reverse("cancel-run", args=[run.pk]))
    cancel = AuditEvent.objects.get(action=AuditEvent.Action.CANCEL)
    assert (cancel.actor, cancel.run_id) == ("operator", run.pk)
    engine.delete_thread(Thread.objects.get(pk=thread.pk), requested_by="script", reason="cleanup")
    deleted = AuditEvent.objects.get(action=AuditEvent.Action.DELETE)
    assert (deleted.actor, deleted.reason, deleted.thread_name) == (
        "script",
        "cleanup",
        thread.name,
    )


def test_audit_events_cannot_be_changed_or_deleted():
    event = runs_audit_event()
    with pytest.raises(PermissionError):
        event.save()
    with pytest.raises(PermissionError):
        event.delete()
    with pytest.raises(PermissionError):
        AuditEvent.objects.filter(pk=event.pk).update(reason="edited")
    with pytest.raises(PermissionError):
        AuditEvent.objects.all().delete()
    # Around the ORM, the database refuses the edit itself.
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE durable_auditevent SET reason = 'edited'")
    assert AuditEvent.objects.get(pk=event.pk).reason == "because"


def runs_audit_event() -> AuditEvent:
    thread = at_interrupt()
    engine.replay(thread, head(thread), metadata={"reason": "because"}, requested_by="ann")
    return AuditEvent.objects.get(action=AuditEvent.Action.REPLAY)


def test_the_audit_page_filters_and_exports_csv_of_its_tenant_only(client, globex):
    runs_audit_event()
    theirs = engine.create_thread("expense_approval", tenant=globex)
    engine.delete_thread(theirs, requested_by="=HYPERLINK(evil)", reason="theirs")
    page = client.get(reverse("audit") + "?action=replay").content.decode()
    assert "because" in page and "theirs" not in page
    assert (
        "No audit events match." in client.get(reverse("audit") + "?action=fork").content.decode()
    )
    bad = client.get(reverse("audit") + "?after=yesterday")
    assert bad.status_code == 400 and "after" in bad.content.decode()
    exported = client.get(reverse("audit") + "?action=replay&format=csv")
    assert exported["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert [(r["action"], r["actor"], r["reason"]) for r in rows] == [("replay", "ann", "because")]
    mallory = logged_in(member("mallory", globex, Role.ADMIN))
    theirs_csv = b"".join(mallory.get(reverse("audit") + "?format=csv").streaming_content).decode()
    assert "'=HYPERLINK(evil)" in theirs_csv  # not a formula in a spreadsheet
    assert "because" not in theirs_csv


def test_logins_are_audited():
    member("ann")
    Client().post(reverse("login"), {"username": "ann", "password": PASSWORD})
    login = AuditEvent.objects.get(action=AuditEvent.Action.LOGIN)
    assert (login.actor, login.tenant) == ("ann", Tenant.default())


# -- the store -------------------------------------------------------------------------


def test_the_store_browser_shows_only_the_tenants_namespaces(client, globex):
    from durable.persistence.store import DjangoStore, ScopedStore

    ScopedStore(DjangoStore(), ("default",)).put(("notes",), "ours", {"text": "ours"})
    ScopedStore(DjangoStore(), ("globex",)).put(("secrets",), "theirs", {"text": "theirs"})
    page = client.get(reverse("store")).content.decode()
    assert "notes" in page and "secrets" not in page and "globex" not in page
    climbing = client.get(reverse("store"), {"ns": "globex.secrets"}).content.decode()
    assert "theirs" not in climbing


# -- a fresh installation --------------------------------------------------------------


def test_bootstrap_makes_the_first_admin_once(settings, tmp_path):
    from django.contrib.auth import authenticate, get_user_model
    from django.core.management import call_command

    settings.DURABLE_VAR_DIR = tmp_path
    settings.DURABLE_ADMIN_PASSWORD = ""
    out = io.StringIO()
    call_command("bootstrap", stdout=out)
    password = (tmp_path / "admin-password").read_text().strip()
    assert password in out.getvalue()
    assert out.getvalue().index("'admin'") < out.getvalue().index(password)  # whose it is
    assert (tmp_path / "admin-password").stat().st_mode & 0o777 == 0o600
    admin = authenticate(username="admin", password=password)
    assert admin is not None and admin.is_superuser
    assert admin.memberships.get().role == Role.ADMIN
    again = io.StringIO()
    call_command("bootstrap", stdout=again)
    assert again.getvalue() == "" and get_user_model().objects.count() == 1


def test_bootstrap_gives_the_first_admin_the_chosen_name_and_password(settings, tmp_path):
    from django.contrib.auth import authenticate
    from django.core.management import call_command

    settings.DURABLE_VAR_DIR = tmp_path
    settings.DURABLE_ADMIN_USERNAME = "ops"
    settings.DURABLE_ADMIN_PASSWORD = "chosen-pass-123"
    out = io.StringIO()
    call_command("bootstrap", stdout=out)
    assert "'ops'" in out.getvalue() and "chosen-pass-123" not in out.getvalue()
    assert not (tmp_path / "admin-password").exists()
    assert authenticate(username="ops", password="chosen-pass-123").is_superuser


# -- the Django admin ------------------------------------------------------------------


def test_a_tenant_admin_manages_only_their_tenants_rows_in_the_django_admin(globex):
    from django.contrib.auth.models import Permission

    from durable.persistence.store import DjangoStore, ScopedStore

    ours = at_interrupt()  # the default tenant's
    theirs = engine.create_thread("expense_approval", name="globex-1", tenant=globex)
    ScopedStore(DjangoStore(), ("default",)).put(("users",), "1", {"secret": "default's"})
    ScopedStore(DjangoStore(), ("globex",)).put(("users",), "1", {"secret": "globex's"})
    create_token(Tenant.default(), "default-token")
    gadmin = member("gadmin", globex, Role.ADMIN)
    gadmin.is_staff = True
    gadmin.save()
    every_model = Permission.objects.filter(content_type__app_label="durable")
    gadmin.user_permissions.add(*every_model.exclude(codename="audit_all_tenants"))
    admin = logged_in(gadmin)

    threads = admin.get("/admin/durable/thread/").content.decode()
    assert "globex-1" in threads and ours.name not in threads
    assert admin.get(f"/admin/durable/thread/{ours.pk}/change/").status_code == 302
    assert admin.get(f"/admin/durable/thread/{theirs.pk}/change/").status_code == 200
    items = admin.get("/admin/durable/storeitem/").content.decode()
    assert "globex.users" in items and "default.users" not in items
    assert "default-token" not in admin.get("/admin/durable/apitoken/").content.decode()
    checkpoints = admin.get("/admin/durable/checkpoint/").content.decode()
    assert ours.thread_id not in checkpoints
    # The token form offers only globex, and no admin role.
    form = admin.get("/admin/durable/apitoken/add/").content.decode()
    assert 'value="' + str(globex.pk) + '"' in form
    assert 'value="' + str(Tenant.default().pk) + '"' not in form
    assert 'value="admin"' not in form
    refused = admin.post(
        "/admin/durable/apitoken/add/",
        {"tenant": Tenant.default().pk, "name": "sneaky", "role": "operator"},
    )
    assert refused.status_code == 200  # the form again, with its error
    assert not ApiToken.objects.filter(name="sneaky").exists()


def test_a_forks_run_and_values_and_a_close_are_in_the_audit(client):
    thread = at_interrupt()
    at = head(thread)
    forked = engine.fork(
        thread, at, {"amount": 99}, as_node="validate", run=True, metadata={"reason": "r"}
    )
    fork = AuditEvent.objects.get(action=AuditEvent.Action.FORK)
    assert fork.run_id == forked.run.pk and fork.detail["values"] == {"amount": 99}
    other = at_interrupt()
    client.post(
        reverse("inbox-close", args=[other.pk]), {"checkpoint_id": head(other), "reason": "spam"}
    )
    close = AuditEvent.objects.get(action=AuditEvent.Action.CLOSE)
    assert (close.thread_name, close.reason, close.actor) == (other.name, "spam", "operator")
    exported = client.get(reverse("audit") + "?action=fork&format=csv")
    (row,) = csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode()))
    assert json.loads(row["detail"]) == {"as_node": "validate", "values": {"amount": 99}}
