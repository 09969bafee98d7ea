"""The Django admin: a page for every model, retention's actions behind a confirmation
page, and the audit of policy and token changes. Driven with Django's test client as a
superuser (``superuser``), who is also an admin of the default tenant."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from durable import retention, tenancy
from durable.models import (
    ApiToken,
    AuditEvent,
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
    Membership,
    RetentionPolicy,
    Run,
    RunEvent,
    StoreItem,
    Tenant,
    Thread,
)
from durable.persistence.store import DjangoStore
from tests.helpers.retention import MONTH, age, history, root_ids
from tests.helpers.threads import everything
from tests.helpers.users import PASSWORD

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("retention_graphs")]

MODELS = [
    Tenant,
    Membership,
    ApiToken,
    AuditEvent,
    RetentionPolicy,
    Thread,
    Run,
    RunEvent,
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
    StoreItem,
]


@pytest.fixture
def staff(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


def changelist(model) -> str:
    return reverse(f"admin:durable_{model._meta.model_name}_changelist")


def choose(client, model, action: str, objects, **extra):
    """The changelist's action form: ``action`` on ``objects`` (the first step)."""
    return client.post(
        changelist(model),
        {
            "action": action,
            "_selected_action": [str(o.pk) for o in objects],
            "index": "0",
            "select_across": "0",
            **extra,
        },
    )


def confirm(client, model, action: str, objects, reason: str = ""):
    """The confirmation page's form: what the page posts back."""
    return client.post(
        changelist(model),
        {
            "action": action,
            "_selected_action": [str(o.pk) for o in objects],
            "confirm": "yes",
            "reason": reason,
        },
    )


def shown(html: str) -> dict[int, tuple[str, ...]]:
    """The confirmation page's table: thread pk -> (action, checkpoints, blobs, writes)."""
    rows = {}
    for pk, row in re.findall(r'<tr data-thread="(\d+)">(.*?)</tr>', html, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        rows[int(pk)] = tuple(c.strip() for c in (cells[3], *cells[4:7]))
    return rows


def expected(report: retention.Report) -> dict[int, tuple[str, ...]]:
    return {
        o.thread_pk: (o.label, *(str(v) for v in o.removed.as_dict().values()))
        if o.action != "skip"
        else (o.label, "—", "—", "—")
        for o in report.outcomes
    }


# -- every model ------------------------------------------------------------------------------


def test_every_model_has_an_admin_with_search_and_filters_and_its_pages_open(staff, superuser):
    thread = history("retention_nested", 3)
    run = Run.objects.create(thread=thread, graph=thread.graph, kind="start", status="success")
    RunEvent.objects.append(run.pk, RunEvent.LIFECYCLE, {"status": "success"})
    DjangoStore().put(("memories", "ann"), "k", {"text": "hello"}, ttl=60)
    tenancy.create_token(Tenant.default(), "ci")
    RetentionPolicy.objects.create(tenant=Tenant.default(), keep_last=3)
    AuditEvent.objects.create(tenant=Tenant.default(), actor="admin", action="login")

    for model in MODELS:
        model_admin = admin.site._registry[model]
        assert model_admin.search_fields and model_admin.list_filter, model.__name__
        url = changelist(model)
        assert staff.get(url).status_code == 200, url
        assert staff.get(url, {"q": "x"}).status_code == 200, url
        for spec in model_admin.get_list_filter(None):
            if isinstance(spec, type) and issubclass(spec, admin.SimpleListFilter):
                for value, _ in spec(None, {}, model, model_admin).lookups(None, model_admin):
                    assert staff.get(url, {spec.parameter_name: value}).status_code == 200
        obj = model.objects.order_by("pk").first()
        page = reverse(f"admin:durable_{model._meta.model_name}_change", args=[obj.pk])
        assert staff.get(page).status_code == 200, page


def test_the_admin_needs_a_staff_login(operator):
    client = Client()
    client.force_login(operator)
    response = client.get(changelist(Thread))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_audit_events_are_read_only_in_the_admin(staff):
    event = AuditEvent.objects.create(tenant=Tenant.default(), actor="ann", action="login")
    page = reverse("admin:durable_auditevent_change", args=[event.pk])

    response = staff.get(page)
    assert response.status_code == 200
    assert 'name="_save"' not in response.content.decode()
    assert staff.post(page, {"actor": "mallory"}).status_code == 403
    delete = reverse("admin:durable_auditevent_delete", args=[event.pk])
    assert staff.get(delete).status_code == 403
    assert staff.post(delete, {"post": "yes"}).status_code == 403
    assert staff.get(reverse("admin:durable_auditevent_add")).status_code == 403
    listing = staff.get(changelist(AuditEvent)).content.decode()
    assert 'name="action"' not in listing  # no actions at all, delete_selected included
    choose(staff, AuditEvent, "delete_selected", [event], post="yes")
    assert AuditEvent.objects.get(pk=event.pk).actor == "ann"


def test_retention_actions_need_their_permissions(superuser):
    viewer = get_user_model().objects.create_user("viewer", password=PASSWORD, is_staff=True)
    viewer.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_thread", "view_retentionpolicy"])
    )
    client = Client()
    client.force_login(viewer)
    thread = history("retention_nested", 3)
    assert "prune_to_latest" not in client.get(changelist(Thread)).content.decode()
    assert "apply_retention_now" not in client.get(changelist(RetentionPolicy)).content.decode()
    before = everything()
    choose(client, Thread, "prune_to_latest", [thread])
    confirm(client, Thread, "prune_to_latest", [thread])
    assert everything() == before


# -- thread actions ---------------------------------------------------------------------------


def test_prune_to_latest_confirms_with_counts_then_prunes_and_audits(staff):
    nested = history("retention_nested", 5)
    delta = history("retention_delta", 29)
    busy = history("retention_nested", 3)
    Run.objects.create(thread=busy, graph=busy.graph, kind="start", status="running")
    threads = [nested, delta, busy]
    plan = retention.prune_threads(
        Thread.objects.filter(pk__in=[t.pk for t in threads]), dry_run=True
    )
    before = everything(), AuditEvent.objects.count()

    page = choose(staff, Thread, "prune_to_latest", threads)

    assert page.status_code == 200
    html = page.content.decode()
    assert "Prune these threads?" in html and "Nothing has changed yet" in html
    assert shown(html) == expected(plan)
    assert shown(html)[busy.pk][0] == "skipped: active run"
    assert plan.removed.checkpoints > 0 and f"Would remove {plan.removed.checkpoints}" in html
    assert (everything(), AuditEvent.objects.count()) == before

    done = confirm(staff, Thread, "prune_to_latest", threads, reason="disk is full")

    assert done.status_code == 302
    assert len(root_ids(nested)) == 1 and 1 < len(root_ids(delta)) < 10
    events = AuditEvent.objects.filter(action="prune").order_by("thread_name")
    assert {e.thread_id for e in events} == {nested.thread_id, delta.thread_id}
    assert {(e.actor, e.reason) for e in events} == {("admin", "disk is full")}
    removed = {o.thread_id: o.removed.as_dict() for o in plan.outcomes if o.action == "prune"}
    assert {e.thread_id: e.detail["removed"] for e in events} == removed
    messages = [str(m) for m in staff.get(changelist(Thread)).context["messages"]]
    assert messages == [
        f"Removed {plan.removed.checkpoints} checkpoints, {plan.removed.blobs} blobs, "
        f"{plan.removed.writes} writes: 2 threads pruned, 0 deleted, 0 unchanged, "
        "1 skipped (active run)."
    ]


def test_delete_threads_confirms_then_deletes_everything_and_audits(staff):
    threads = [history("retention_nested", 3), history("retention_delta", 6)]
    plan = retention.delete_threads(Thread.objects.all(), dry_run=True)
    before = everything()

    html = choose(staff, Thread, "delete_threads", threads).content.decode()

    assert "Delete these threads?" in html
    assert shown(html) == expected(plan)
    assert everything() == before

    assert confirm(staff, Thread, "delete_threads", threads).status_code == 302
    assert not Thread.objects.exists()
    for model in (Checkpoint, CheckpointBlob, CheckpointWrite):
        assert not model.objects.exists()
    assert set(AuditEvent.objects.filter(action="delete").values_list("actor", flat=True)) == {
        "admin"
    }


def test_apply_retention_now_on_a_policy_and_on_a_tenant(staff):
    globex = Tenant.objects.create(slug="globex", name="Globex")
    ours = history("retention_nested", 4)
    theirs = history("retention_nested", 4, tenant=globex)
    age(ours, theirs)
    ours_policy = RetentionPolicy.objects.create(
        tenant=Tenant.default(), max_age=MONTH, strategy="delete"
    )
    RetentionPolicy.objects.create(tenant=globex, max_age=MONTH)
    before = everything()

    html = choose(staff, RetentionPolicy, "apply_retention_now", [ours_policy]).content.decode()
    assert list(shown(html)) == [ours.pk] and shown(html)[ours.pk][0] == "delete"
    html = choose(staff, Tenant, "apply_retention_now", [globex]).content.decode()
    assert list(shown(html)) == [theirs.pk] and shown(html)[theirs.pk][0] == "prune to latest"
    assert everything() == before

    confirm(staff, RetentionPolicy, "apply_retention_now", [ours_policy])
    assert not Thread.objects.filter(pk=ours.pk).exists()
    assert len(root_ids(theirs)) > 1
    confirm(staff, Tenant, "apply_retention_now", [globex])
    assert len(root_ids(theirs)) == 1
    events = AuditEvent.objects.filter(action__in=["prune", "delete"])
    assert sorted(events.values_list("action", "actor", "tenant__slug")) == [
        ("delete", "admin", "default"),
        ("prune", "admin", "globex"),
    ]
    assert "not updated for 30 days" in events.get(action="prune").reason


# -- policies and tokens ----------------------------------------------------------------------


def test_retention_policy_changes_are_audited(staff):
    tenant = Tenant.default()
    add = reverse("admin:durable_retentionpolicy_add")
    form = {"tenant": tenant.pk, "graph": "", "max_age": "30 00:00:00", "strategy": "keep_latest"}
    form["enabled"] = "on"

    refused = staff.post(add, {**form, "max_age": ""})
    assert refused.status_code == 200 and not RetentionPolicy.objects.exists()
    assert staff.post(add, form).status_code == 302
    created = RetentionPolicy.objects.get()
    change = reverse("admin:durable_retentionpolicy_change", args=[created.pk])
    assert staff.post(change, {**form, "keep_last": "10"}).status_code == 302
    delete = reverse("admin:durable_retentionpolicy_delete", args=[created.pk])
    assert staff.post(delete, {"post": "yes"}).status_code == 302
    other = RetentionPolicy.objects.create(tenant=tenant, graph="email_reply", keep_last=2)
    choose(staff, RetentionPolicy, "delete_selected", [other], post="yes")

    events = list(AuditEvent.objects.filter(action="retention_change").order_by("pk"))
    assert [e.detail["change"] for e in events] == ["created", "changed", "deleted", "deleted"]
    assert {(e.actor, e.tenant) for e in events} == {("admin", tenant)}
    assert events[0].detail["max_age"] == str(timedelta(days=30))
    assert events[0].detail["strategy"] == "keep_latest" and events[0].detail["enabled"]
    assert events[1].detail["changed"] == {"keep_last": [None, 10]}
    assert events[3].detail["graph"] == "email_reply"
    assert not RetentionPolicy.objects.exists()


def test_tokens_made_and_revoked_in_the_admin_are_audited_and_shown_once(staff):
    tenant = Tenant.default()
    response = staff.post(
        reverse("admin:durable_apitoken_add"),
        {"tenant": tenant.pk, "name": "ci", "role": "viewer"},
        follow=True,
    )

    messages = [str(m) for m in response.context["messages"]]
    [token] = [t for m in messages for t in re.findall(r"dur_[A-Za-z0-9_-]{43}", m)]
    row = ApiToken.objects.get()
    assert tenancy.authenticate(token) == row
    assert (row.name, row.role, row.created_by) == ("ci", "viewer", "admin")
    event = AuditEvent.objects.get(action="token_create")
    assert (event.actor, event.tenant) == ("admin", tenant)
    assert event.detail["prefix"] == row.prefix and token not in str(event.detail)
    page = staff.get(reverse("admin:durable_apitoken_change", args=[row.pk])).content.decode()
    assert row.prefix in page and token not in page

    choose(staff, ApiToken, "revoke_tokens", [row])
    choose(staff, ApiToken, "revoke_tokens", [row])  # already revoked: nothing to record

    assert tenancy.authenticate(token) is None
    [revoked] = AuditEvent.objects.filter(action="token_revoke")
    assert (revoked.actor, revoked.detail["prefix"]) == ("admin", row.prefix)
