"""Sensitive values reach no viewer: every console page of a thread, its downloads, its
run's page and events, the audit trail and its CSV, and every API answer show masks;
the fork form sends a mask back without writing it; an admin reveals one value, audited.
"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from django.test import Client, override_settings
from django.urls import reverse
from langgraph.types import Interrupt

from dashboard.forms import ResumeForm
from dashboard.forms.assistants import AssistantForm
from durable import audit, engine, history
from durable.engine import webhooks
from durable.graphs import get_graph
from durable.models import (
    AuditEvent,
    CheckpointBlob,
    CheckpointWrite,
    Role,
    Run,
    RunEvent,
    Tenant,
)
from durable.redaction import MASK
from durable.tenancy import create_token
from durable.values import jsonable
from tests.helpers.redaction_graphs import CARD, MARKER, SECRETS
from tests.helpers.threads import head
from tests.helpers.users import member

pytestmark = pytest.mark.django_db(transaction=True)


def _thread():
    """A ``redaction`` thread at its interrupt, with a finished run whose events carry
    the state, as a worker records them."""
    thread = engine.create_thread("redaction")
    get_graph("redaction").invoke({"customer": "ada"}, engine.config_for(thread))
    values = jsonable(engine.thread_state(thread).values)
    run = Run.objects.create(
        thread=thread,
        graph="redaction",
        kind="start",
        status="interrupted",
        input={"customer": "ada", "api_key": SECRETS[1]},
    )
    for event, data in (
        (RunEvent.LIFECYCLE, {"status": "running"}),
        ("updates", {"collect": {k: values[k] for k in ("payment", "api_key", "messages")}}),
        ("values", values),
        ("messages", [values["messages"][0], {"langgraph_node": "collect"}]),
        ("custom", {"token": SECRETS[3]}),
    ):
        RunEvent.objects.append(run.pk, event, data)
    audit.record(
        audit.Action.RESUME,
        actor="ann",
        thread=thread,
        detail={"answers": [{"decision": "answer", "value": {"password": SECRETS[1]}}]},
    )
    return thread, run


def _as(role: str) -> Client:
    client = Client()
    client.force_login(member(f"a-{role}", role=role))
    return client


def _clean(text: str, where: str) -> None:
    assert MARKER not in text, f"{where} shows a secret: {text[text.find(MARKER) - 200 :][:400]}"


def _console_urls(thread, run) -> dict[str, str]:
    checkpoints = [n.checkpoint_id for n in history.tree_page(thread.thread_id).nodes]
    latest, first = head(thread), checkpoints[-1]
    urls = {
        "threads": reverse("threads"),
        "thread": reverse("thread", args=[thread.pk]),
        "history": reverse("thread-history", args=[thread.pk]),
        "graph": reverse("thread-graph", args=[thread.pk]),
        "inbox": reverse("inbox"),
        "inbox entry": reverse("inbox-thread", args=[thread.pk]),
        "diff": reverse("diff", args=[thread.pk]) + f"?a={first}&b={latest}",
        "run": reverse("run", args=[run.pk]),
        "audit": reverse("audit"),
        "audit csv": reverse("audit") + "?format=csv",
        "store": reverse("store"),
        "fork": reverse("fork", args=[thread.pk, latest]),
        "replay": reverse("replay", args=[thread.pk, latest]),
    }
    for checkpoint in checkpoints:
        urls[f"inspector {checkpoint}"] = reverse("checkpoint", args=[thread.pk, checkpoint])
        whole = reverse("checkpoint-json", args=[thread.pk, checkpoint])
        urls[f"download {checkpoint}"] = whole
        for key in ("payment", "api_key", "messages"):
            urls[f"download {checkpoint} {key}"] = f"{whole}?key={key}"
    for seq in range(1, run.events.count() + 1):
        urls[f"event {seq}"] = reverse("run-event", args=[run.pk, seq])
    return urls


async def _drain(chunks) -> bytes:
    return b"".join([chunk async for chunk in chunks])


def _body(response) -> str:
    """The whole body; a stream (of an ended run, so it ends) read to its end."""
    if not response.streaming:
        return response.content.decode()
    if response.is_async:
        return async_to_sync(_drain)(response.streaming_content).decode()
    return b"".join(response.streaming_content).decode()


def test_no_console_page_or_download_shows_a_secret_to_a_viewer():
    thread, run = _thread()
    viewer = _as(Role.VIEWER)
    for name, url in _console_urls(thread, run).items():
        response = viewer.get(url)
        assert response.status_code in (200, 404), (name, response.status_code)
        if name.startswith("download") and response.status_code == 404:
            continue  # the first checkpoints have no such key yet
        assert response.status_code == 200, name
        _clean(_body(response), name)
    inspector = viewer.get(reverse("checkpoint", args=[thread.pk, head(thread)])).content.decode()
    assert MASK in inspector
    assert "payment.card_number" in inspector and "Reveal" not in inspector
    csv = _body(viewer.get(reverse("audit") + "?format=csv"))
    assert MASK in csv


def test_the_run_events_stream_shows_no_secret():
    thread, run = _thread()
    response = _as(Role.VIEWER).get(reverse("run-events", args=[run.pk]))
    assert response.status_code == 200
    body = _body(response)
    assert "event: values" in body and "event: messages" in body
    _clean(body, "the run's events")


def test_no_api_answer_shows_a_secret_to_a_viewers_token():
    thread, run = _thread()
    key = create_token(Tenant.default(), "viewer", role=Role.VIEWER)[1]
    api = Client(HTTP_X_API_KEY=key)
    name, latest = thread.name, head(thread)

    def post(path, body):
        return api.post(path, json.dumps(body), content_type="application/json")

    answers = {
        "thread": api.get(f"/api/threads/{name}"),
        "state": api.get(f"/api/threads/{name}/state"),
        "state at": api.get(f"/api/threads/{name}/state/{latest}"),
        "state at (post)": post(
            f"/api/threads/{name}/state/checkpoint", {"checkpoint": {"checkpoint_id": latest}}
        ),
        "history": post(f"/api/threads/{name}/history", {"limit": 10}),
        "search": post("/api/threads/search", {}),
        "runs": api.get(f"/api/threads/{name}/runs"),
        "run": api.get(f"/api/threads/{name}/runs/{run.pk}"),
        "join": api.get(f"/api/threads/{name}/runs/{run.pk}/join"),
        "stream": api.get(
            f"/api/threads/{name}/runs/{run.pk}/stream",
            {"stream_mode": ["values", "updates", "messages-tuple", "messages", "custom"]},
        ),
    }
    for what, response in answers.items():
        assert response.status_code == 200, (what, response.status_code, _body(response)[:500])
        _clean(_body(response), what)
    state = json.loads(answers["state"].content)
    assert state["values"]["payment"] == {"card_number": MASK, "amount": 42}
    assert state["values"]["api_key"] == MASK
    assert state["values"]["messages"][0]["additional_kwargs"]["api_key"] == MASK
    assert state["interrupts"][0]["value"]["token"] == MASK
    # The stored state is the real one.
    assert engine.thread_state(thread).values["payment"]["card_number"] == CARD


def test_the_fork_form_shows_masks_and_keeps_the_stored_values():
    thread, _ = _thread()
    latest = head(thread)
    operator = _as(Role.OPERATOR)
    url = reverse("fork", args=[thread.pk, latest])
    page = operator.get(url).content.decode()
    _clean(page, "the fork form")
    shown = engine.thread_state(thread).values
    payment = {"card_number": MASK, "amount": 43}  # the mask sent back, the amount changed
    response = operator.post(
        url,
        {
            "as_node": "collect",
            "reason": "fix the amount",
            "state-payment": json.dumps(payment),
            "state-api_key": json.dumps(MASK),
            "state-customer": json.dumps(shown["customer"]),
        },
    )
    assert response.status_code == 303, response.content.decode()[:3000]
    forked = engine.thread_state(thread).values
    assert forked["payment"] == {"card_number": CARD, "amount": 43}
    assert forked["api_key"] == shown["api_key"]
    assert MARKER in forked["api_key"]


def test_a_message_edited_in_the_transcript_keeps_its_stored_secret_and_previews_masked():
    thread, _ = _thread()
    latest = head(thread)
    operator = _as(Role.OPERATOR)
    stored = engine.thread_state(thread).values["messages"][0]
    edit = {"as_node": "collect", "msg-messages-0": "Charged twice."}

    preview = operator.post(reverse("fork-preview", args=[thread.pk, latest]), edit)

    assert preview.status_code == 200
    _clean(preview.content.decode(), "the fork preview")
    assert "<code>messages[id=m1].content</code>" in preview.content.decode()
    url = reverse("fork", args=[thread.pk, latest])
    response = operator.post(url, {**edit, "reason": "say it was twice"})
    assert response.status_code == 303, response.content.decode()[:3000]
    [forked] = engine.thread_state(thread).values["messages"]
    assert (forked.id, forked.content) == ("m1", "Charged twice.")
    assert forked.additional_kwargs == stored.additional_kwargs  # the secret, not its mask


def test_an_admin_reveals_one_value_once_and_it_is_audited_a_viewer_cannot():
    thread, _ = _thread()
    latest = head(thread)
    url = reverse("reveal", args=[thread.pk, latest])
    viewer, operator, admin = _as(Role.VIEWER), _as(Role.OPERATOR), _as(Role.ADMIN)
    for refused in (viewer, operator):
        response = refused.post(url, {"path": "payment.card_number"})
        assert response.status_code == 403
        _clean(response.content.decode(), "a refused reveal")
    assert not AuditEvent.objects.filter(action="reveal").exists()

    inspector = admin.get(reverse("checkpoint", args=[thread.pk, latest])).content.decode()
    assert "Reveal payment.card_number" in inspector
    _clean(inspector, "the admin's inspector")

    response = admin.post(url, {"path": "payment.card_number"})
    assert response.status_code == 200
    assert CARD in response.content.decode()
    assert response["Cache-Control"] == "no-store"
    (event,) = AuditEvent.objects.filter(action="reveal")
    assert (event.actor, event.checkpoint_id, event.detail["path"]) == (
        "a-admin",
        latest,
        "payment.card_number",
    )
    # Only masked values, of this checkpoint: anything else is a 404, and not audited.
    assert admin.post(url, {"path": "customer"}).status_code == 404
    assert admin.post(url, {"path": "payment.nope"}).status_code == 404
    assert AuditEvent.objects.filter(action="reveal").count() == 1
    # The audit trail shows the reveal, not the value.
    trail = admin.get(reverse("audit")).content.decode()
    assert "revealed payment.card_number" in trail
    _clean(trail, "the audit trail")


@pytest.fixture
def encrypted():
    """``DURABLE_ENCRYPTION_KEY`` set; graphs (compiled once per process, with their
    saver's serializer) compiled anew under it, and again after."""
    get_graph.cache_clear()
    with override_settings(DURABLE_ENCRYPTION_KEY="0123456789abcdef"):
        yield
    get_graph.cache_clear()


@pytest.mark.usefixtures("encrypted")
def test_masking_composes_with_encryption_at_rest():
    thread, _ = _thread()
    stored = b"".join(
        bytes(blob or b"")
        for model in (CheckpointBlob, CheckpointWrite)
        for blob in model.objects.filter(thread_id=thread.thread_id).values_list("blob", flat=True)
    )
    assert stored and MARKER.encode() not in stored  # encrypted at rest
    latest = head(thread)
    inspector = _as(Role.VIEWER).get(reverse("checkpoint", args=[thread.pk, latest]))
    _clean(inspector.content.decode(), "the inspector of an encrypted thread")
    revealed = _as(Role.ADMIN).post(
        reverse("reveal", args=[thread.pk, latest]), {"path": "payment.card_number"}
    )
    assert CARD in revealed.content.decode()  # decrypted for the one who may see it


@pytest.mark.parametrize("per_argument", [False, True])
def test_an_edit_in_the_answer_form_keeps_a_masked_argument(per_argument):
    secret = f"sk-{MARKER}-EDIT"
    review = {"action_name": "call_api", "allowed_decisions": ["approve", "edit", "reject"]}
    if per_argument:
        review["args_schema"] = {
            "type": "object",
            "properties": {"url": {"type": "string"}, "api_key": {"type": "string"}},
        }
    payload = {
        "action_requests": [{"name": "call_api", "args": {"url": "a", "api_key": secret}}],
        "review_configs": [review],
    }
    pending = [Interrupt(value=payload, id="i1")]
    shown = ResumeForm(pending)
    if per_argument:
        assert shown["arg-i1-0-api_key"].value() == MASK
        data = {"arg-i1-0-url": "b", "arg-i1-0-api_key": MASK}
    else:
        text = shown["args-i1-0"].value()
        assert secret not in text and MASK in text
        data = {"args-i1-0": json.dumps({**json.loads(text), "url": "b"})}
    sent = ResumeForm(pending, {"decision-i1-0": "edit", **data})
    assert sent.is_valid(), sent.errors
    (decision,) = sent.resume_args["value"]["decisions"]
    assert decision["edited_action"]["args"] == {"url": "b", "api_key": secret}


def test_a_webhook_posts_the_values_masked():
    thread, run = _thread()
    body = webhooks.payload(Run.objects.select_related("thread").get(pk=run.pk))
    assert body["values"]["payment"] == {"card_number": MASK, "amount": 42}
    _clean(json.dumps(body), "the webhook's payload")


def test_the_django_admin_shows_a_runs_and_an_events_json_masked(superuser):
    thread, run = _thread()
    staff = Client()
    staff.force_login(superuser)
    pages = [f"/admin/durable/run/{run.pk}/change/"]
    pages += [f"/admin/durable/runevent/{e.pk}/change/" for e in run.events.all()]
    for url in pages:
        response = staff.get(url)
        assert response.status_code == 200, url
        _clean(response.content.decode(), url)
    assert MASK in staff.get(pages[0]).content.decode()


def test_the_diff_names_a_changed_secret_without_showing_either_value():
    thread, _ = _thread()
    before = head(thread)
    new_card = f"5555-{MARKER}-NEW"
    engine.fork(
        thread,
        before,
        {"payment": {"card_number": new_card, "amount": 42}},
        as_node="collect",
        requested_by="ann",
    )
    after = head(thread)
    url = reverse("diff", args=[thread.pk]) + f"?a={before}&b={after}"
    page = _as(Role.VIEWER).get(url).content.decode()
    _clean(page, "the diff")
    assert "payment.card_number" in page and MASK in page


def test_the_thread_list_shows_thread_metadata_masked():
    engine.create_thread("redaction", metadata={"api_key": SECRETS[1], "team": "ops"})
    page = _as(Role.VIEWER).get(reverse("threads")).content.decode()
    _clean(page, "the thread list")
    assert "team=ops" in page and f"api_key={MASK}" in page


def test_an_assistants_pages_show_its_secrets_masked():
    first, second = f"sk-{MARKER}-V1", f"sk-{MARKER}-V2"
    found = engine.create_assistant(
        Tenant.default(), "redaction", metadata={"api_key": first, "team": "ops"}
    )
    engine.update_assistant(found, metadata={"api_key": second, "team": "ops"})
    viewer = _as(Role.VIEWER)
    urls = [
        reverse("assistants"),
        reverse("assistant", args=[found.assistant_id]),
        reverse("assistant-diff", args=[found.assistant_id]) + "?a=1&b=2",
    ]
    for url in urls:
        response = viewer.get(url)
        assert response.status_code == 200, url
        _clean(response.content.decode(), url)


def test_the_assistant_form_keeps_a_masked_secret_it_sends_back():
    secret = f"sk-{MARKER}-FORM"
    found = engine.create_assistant(
        Tenant.default(), "redaction", name="Ann", metadata={"api_key": secret, "team": "ops"}
    )
    operator = _as(Role.OPERATOR)
    url = reverse("assistant", args=[found.assistant_id])
    _clean(operator.get(url).content.decode(), "the assistant's edit form")
    shown = AssistantForm(assistant=found).initial
    metadata = {**json.loads(shown["metadata"]), "team": "sales"}
    response = operator.post(url, {**shown, "metadata": json.dumps(metadata)})
    assert response.status_code == 303, response.content.decode()[:2000]
    found.refresh_from_db()
    assert found.metadata == {"api_key": secret, "team": "sales"}


def test_an_api_update_that_sends_the_masked_state_back_keeps_the_secrets(api_key):
    thread, _ = _thread()
    api = Client(HTTP_X_API_KEY=api_key)
    path = f"/api/threads/{thread.name}/state"
    shown = json.loads(api.get(path).content)["values"]
    values = {"payment": {**shown["payment"], "amount": 7}, "api_key": shown["api_key"]}
    response = api.post(
        path, json.dumps({"values": values, "as_node": "collect"}), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    stored = engine.thread_state(thread).values
    assert stored["payment"] == {"card_number": CARD, "amount": 7}
    assert MARKER in stored["api_key"]


def test_a_graphs_schemas_keep_their_sensitive_property_names(api_key):
    api = Client(HTTP_X_API_KEY=api_key)
    response = api.get("/api/assistants/redaction/schemas")
    assert response.status_code == 200, response.content
    state = json.loads(response.content)["state_schema"]
    assert {"payment", "api_key", "messages"} <= set(state["properties"])
    assert state["properties"]["api_key"] != MASK


def test_a_reveal_without_javascript_is_a_page_of_the_console():
    thread, _ = _thread()
    latest = head(thread)
    admin = _as(Role.ADMIN)
    page = admin.post(reverse("reveal", args=[thread.pk, latest]), {"path": "api_key"})
    assert page.status_code == 200
    text = page.content.decode()
    assert SECRETS[1] in text and "<title>" in text and "Back to the checkpoint" in text
    partial = admin.post(
        reverse("reveal", args=[thread.pk, latest]), {"path": "api_key"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert SECRETS[1] in partial and "<title>" not in partial
    assert AuditEvent.objects.filter(action="reveal").count() == 2


def test_an_auditor_of_no_tenant_reveals_a_value_audited_in_the_threads_tenant():
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    thread, _ = _thread()
    auditor = get_user_model().objects.create_user("audrey", is_staff=True)
    auditor.user_permissions.add(Permission.objects.get(codename="audit_all_tenants"))
    client = Client()
    client.force_login(auditor)
    latest = head(thread)
    inspector = client.get(reverse("checkpoint", args=[thread.pk, latest])).content.decode()
    assert "Reveal payment.card_number" in inspector
    response = client.post(
        reverse("reveal", args=[thread.pk, latest]), {"path": "payment.card_number"}
    )
    assert CARD in response.content.decode()
    (event,) = AuditEvent.objects.filter(action="reveal")
    assert (event.actor, event.tenant) == ("audrey", thread.tenant)
