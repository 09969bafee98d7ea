"""The console's Assistants page (Django's test client): create, edit as a new version
with the config checked against the graph's config schema (the error on the field,
nothing stored), versions with a diff, set latest, delete, the audit trail, viewers
reading only, another tenant's assistant a 404, and the run and thread pages naming
the assistant and version a run used."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.views.assistants import ASSISTANTS_PER_PAGE
from durable import engine
from durable.models import Assistant, AssistantVersion, AuditEvent, Role, Run, Tenant
from tests.helpers.users import member

pytestmark = pytest.mark.django_db

FIELDS = {
    "graph_id": "options",
    "name": "Ann",
    "description": "",
    "config": json.dumps({"configurable": {"user": "ann", "x": 1}}),
    "context": json.dumps({"user": "ann"}),
    "metadata": "{}",
}


def stored() -> tuple:
    return (
        list(Assistant.objects.values_list("version", "config", "context")),
        AssistantVersion.objects.count(),
    )


def test_create_an_assistant(client):
    response = client.post(reverse("assistants"), FIELDS)
    assert response.status_code == 303
    made = Assistant.objects.get()
    assert response["Location"] == reverse("assistant", args=[made.assistant_id])
    assert made.config == {"configurable": {"user": "ann", "x": 1}}
    assert made.context == {"user": "ann"} and made.version == 1
    page = client.get(reverse("assistants")).content.decode()
    assert "Ann" in page and str(made.assistant_id) in page and "expense_approval" in page
    event = AuditEvent.objects.exclude(action="login").get()
    assert event.action == "assistant_create" and event.actor == "operator"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("config", json.dumps({"configurable": {"user": 5}}), "config.configurable.user"),
        ("config", "{nope", "The config is not valid JSON"),
        ("config", "[1]", "The config must be a JSON object."),
        ("config", json.dumps({"callbacks": 1}), "Unknown config key(s): callbacks"),
        ("context", json.dumps({"nobody": 1}), "context does not fit"),
        ("graph_id", "nope", "nope"),
    ],
)
def test_a_refused_assistant_shows_the_error_on_its_field(client, field, value, message):
    response = client.post(reverse("assistants"), FIELDS | {field: value})
    assert response.status_code == 400
    html = response.content.decode()
    errors = html.split(f'id="{field}-errors"', 1)
    assert len(errors) == 2, html
    assert message in errors[1].split("</div>", 1)[0]
    assert f'id="{field}" name="{field}"' in html and 'aria-invalid="true"' in html
    assert stored() == ([], 0) and not AuditEvent.objects.exclude(action="login").exists()


def test_edit_makes_a_new_version_and_a_refused_edit_makes_none(client, operator):
    made = engine.create_assistant(Tenant.default(), "options", name="Ann", context={"user": "a"})
    url = reverse("assistant", args=[made.assistant_id])
    page = client.get(url).content.decode()
    assert "&quot;user&quot;: &quot;a&quot;" in page  # the form holds the latest version
    changed = FIELDS | {"context": json.dumps({"user": "bob"})}
    assert client.post(url, changed).status_code == 303
    made.refresh_from_db()
    assert made.version == 2 and made.context == {"user": "bob"}
    before = stored()
    refused = client.post(url, FIELDS | {"config": json.dumps({"configurable": {"user": []}})})
    assert refused.status_code == 400
    assert 'id="config-errors"' in refused.content.decode()
    assert stored() == before


def test_versions_diff_and_set_latest(client):
    made = engine.create_assistant(
        Tenant.default(), "options", config={"configurable": {"x": 1}}, name="Ann"
    )
    engine.update_assistant(made, config={"configurable": {"x": 2}}, metadata={"team": "ops"})
    url = reverse("assistant", args=[made.assistant_id])
    page = client.get(url).content.decode()
    assert "Make version 1 the latest" in page and "Compare A and B" in page
    diff = client.get(reverse("assistant-diff", args=[made.assistant_id]) + "?a=1&b=2")
    assert diff.status_code == 200
    html = diff.content.decode()
    rows = html.split('data-testid="changes"', 1)[1].split("</table>", 1)[0]
    assert rows.count("<tr class=") == 2
    assert '<th scope="col">In version 1</th><th scope="col">In version 2</th>' in rows
    assert '~ changed</td>\n      <th scope="row"><code>config.configurable.x</code>' in rows
    assert '+ added</td>\n      <th scope="row"><code>metadata.team</code>' in rows
    missing = client.get(reverse("assistant-diff", args=[made.assistant_id]) + "?a=1&b=9")
    assert missing.status_code == 400 and "There is no version 9." in missing.content.decode()

    latest = reverse("assistant-latest", args=[made.assistant_id])
    assert client.post(latest, {"version": "1"}).status_code == 303
    made.refresh_from_db()
    assert made.version == 1 and made.config == {"configurable": {"x": 1}}
    refused = client.post(latest, {"version": "7"})
    assert refused.status_code == 400 and "has no version 7" in refused.content.decode()
    assert [e.action for e in AuditEvent.objects.order_by("pk")][-1] == "assistant_set_latest"


def test_delete_an_assistant(client):
    made = engine.create_assistant(Tenant.default(), "options")
    response = client.post(reverse("assistant-delete", args=[made.assistant_id]))
    assert response.status_code == 303 and response["Location"] == reverse("assistants")
    assert not Assistant.objects.exists()
    assert AuditEvent.objects.filter(action="assistant_delete").exists()


def test_a_viewer_reads_and_is_offered_no_form():
    made = engine.create_assistant(Tenant.default(), "options", name="Ann")
    viewer = Client()
    viewer.force_login(member("vera", role=Role.VIEWER))
    page = viewer.get(reverse("assistant", args=[made.assistant_id])).content.decode()
    assert "Ann" in page and "Save as a new version" not in page and "Delete" not in page
    assert "Create an assistant" not in viewer.get(reverse("assistants")).content.decode()
    before = stored()
    assert viewer.post(reverse("assistants"), FIELDS).status_code == 403
    url = reverse("assistant", args=[made.assistant_id])
    assert viewer.post(url, FIELDS).status_code == 403
    assert stored() == before


def test_another_tenants_assistant_is_a_404(client):
    globex = Tenant.objects.create(slug="globex", name="Globex")
    theirs = engine.create_assistant(globex, "options", name="Theirs")
    assert client.get(reverse("assistant", args=[theirs.assistant_id])).status_code == 404
    assert client.post(reverse("assistant-delete", args=[theirs.assistant_id])).status_code == 404
    assert "Theirs" not in client.get(reverse("assistants")).content.decode()
    assert Assistant.objects.filter(pk=theirs.pk).exists()


def test_the_run_and_thread_pages_name_the_assistant_and_version(client):
    made = engine.create_assistant(Tenant.default(), "options", name="Ann's options")
    engine.update_assistant(made, context={"user": "ann"})
    chosen = engine.resolve_assistant(Tenant.default(), str(made.assistant_id))
    run = engine.start(chosen.graph, {}, **chosen.asked())
    plain = engine.start("options", {})
    assert Run.objects.get(pk=run.pk).context == {"user": "ann"}
    run_page = client.get(reverse("run", args=[run.pk])).content.decode()
    assert "Ann&#x27;s options</a> (version 2)" in run_page
    thread_page = client.get(reverse("thread", args=[run.thread.pk])).content.decode()
    assert "Ann&#x27;s options</a> (version 2)" in thread_page
    plain_page = client.get(reverse("run", args=[plain.pk])).content.decode()
    assert "Assistant: <code>options</code> (the graph's own)" in plain_page


def test_the_audit_page_names_the_assistant_and_version(client):
    made = engine.create_assistant(Tenant.default(), "options", name="Ann", requested_by="ann")
    engine.update_assistant(made, name="Ann two", requested_by="ann")
    page = client.get(reverse("audit") + "?action=assistant_update").content.decode()
    assert f"Ann two ({made.assistant_id}, graph options): version 2" in page
    assert f"Ann ({made.assistant_id}, graph options): version 1" not in page


def test_start_a_run_on_an_assistant(client):
    made = engine.create_assistant(
        Tenant.default(), "options", config={"configurable": {"x": 4}}, context={"user": "ann"}
    )
    url = reverse("assistant-run", args=[made.assistant_id])
    response = client.post(url, {"input": "{}"})
    assert response.status_code == 303
    run = Run.objects.get()
    assert response["Location"] == reverse("thread", args=[run.thread.pk])
    assert run.config == {"configurable": {"x": 4}} and run.context == {"user": "ann"}
    assert (run.assistant, run.assistant_version, run.requested_by) == (made, 1, "operator")
    refused = client.post(url, {"input": "{nope"})
    assert refused.status_code == 400
    assert 'id="input-errors"' in refused.content.decode()
    assert Run.objects.count() == 1


def test_the_list_shows_a_page_of_assistants_newest_first_and_links_the_next(client):
    made = [
        engine.create_assistant(Tenant.default(), "options", name=f"Assistant {n}")
        for n in range(ASSISTANTS_PER_PAGE + 3)
    ]
    first = client.get(reverse("assistants")).content.decode()
    assert [a for a in made if str(a.assistant_id) in first] == made[3:]
    assert 'href="?page=2"' in first and "Page 1 of 2" in first
    second = client.get(reverse("assistants") + "?page=2").content.decode()
    assert [a for a in made if str(a.assistant_id) in second] == made[:3]
    assert 'href="?page=1"' in second and "?page=3" not in second


def test_a_long_description_is_shortened_on_the_list(client):
    long = "word " * 400_000  # 2 MB
    made = engine.create_assistant(Tenant.default(), "options", name="Ann", description=long)
    response = client.get(reverse("assistants"))
    page = response.content.decode()
    assert len(response.content) < 100_000
    assert ("word " * 39).strip() in page and "word " * 41 not in page and "…" in page
    detail = client.get(reverse("assistant", args=[made.assistant_id])).content.decode()
    assert long.strip() in detail  # the assistant's own page keeps it whole, to edit
