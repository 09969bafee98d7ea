"""A resume's audit event keeps what was decided (approve, edit with its arguments,
reject with its reason, an agent-inbox response, a JSON answer), whether the answer
came from the console or the API; the audit page and its CSV show it in words."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client
from django.urls import reverse

from durable import engine
from durable.models import AuditEvent
from tests.helpers.threads import at_interrupt

pytestmark = pytest.mark.django_db(transaction=True)


def answer_in_console(client, thread, data: dict) -> None:
    response = client.post(reverse("inbox-answer", args=[thread.pk]), data)
    assert response.status_code == 303, response.content.decode()


def answer_over_api(api_key, thread, resume) -> None:
    response = Client().post(
        f"/api/threads/{thread.name}/runs",
        {"assistant_id": thread.graph, "command": {"resume": resume}},
        content_type="application/json",
        headers={"x-api-key": api_key},
    )
    assert response.status_code == 200, response.content.decode()


def resume_event(thread) -> AuditEvent:
    return AuditEvent.objects.get(action=AuditEvent.Action.RESUME, thread_id=thread.thread_id)


def shown(client, thread) -> tuple[str, dict]:
    """The resume's row on the audit page (its HTML) and in the CSV (a dict)."""
    page = client.get(reverse("audit") + "?action=resume").content.decode()
    exported = client.get(reverse("audit") + "?action=resume&format=csv")
    rows = csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode()))
    [row] = [r for r in rows if r["thread_id"] == thread.thread_id]
    start = page.index(f"<td>{thread.name}</td>")
    return page[start : page.index("</tr>", start)], row


def test_an_approval_from_the_console_is_recorded_as_an_approval(client):
    thread = at_interrupt()
    [pending] = engine.pending_interrupts(thread)

    answer_in_console(client, thread, {f"decision-{pending.id}-0": "approve"})

    event = resume_event(thread)
    assert event.detail["answers"] == [
        {"interrupt_id": pending.id, "decision": "approve", "action": "pay_expense"}
    ]
    html, row = shown(client, thread)
    assert "<td>approve pay_expense</td>" in html
    assert row["decision"] == "approve pay_expense"


def test_a_rejection_from_the_console_keeps_its_reason(client):
    thread = at_interrupt()
    [pending] = engine.pending_interrupts(thread)

    answer_in_console(
        client,
        thread,
        {f"decision-{pending.id}-0": "reject", f"message-{pending.id}-0": "No receipt attached"},
    )

    event = resume_event(thread)
    [decided] = event.detail["answers"]
    assert (decided["decision"], decided["message"]) == ("reject", "No receipt attached")
    assert event.reason == "No receipt attached"
    html, row = shown(client, thread)
    assert "<td>reject pay_expense: No receipt attached</td>" in html
    assert (row["decision"], row["reason"]) == (
        "reject pay_expense: No receipt attached",
        "No receipt attached",
    )


def test_an_edit_from_the_console_keeps_the_edited_arguments(client):
    thread = at_interrupt()
    [pending] = engine.pending_interrupts(thread)
    edited = {"employee": "Grace Hopper", "amount": 30, "description": "Compiler manual"}

    answer_in_console(
        client,
        thread,
        {f"decision-{pending.id}-0": "edit", f"args-{pending.id}-0": json.dumps(edited)},
    )

    [decided] = resume_event(thread).detail["answers"]
    assert (decided["decision"], decided["args"]) == ("edit", edited)
    _, row = shown(client, thread)
    assert row["decision"] == "edit pay_expense: " + json.dumps(edited, sort_keys=True)


@pytest.mark.parametrize(
    ("decision", "words", "reason"),
    [
        ({"type": "approve"}, "approve pay_expense", ""),
        (
            {"type": "reject", "message": "Over budget"},
            "reject pay_expense: Over budget",
            "Over budget",
        ),
    ],
)
def test_an_api_resume_records_the_decision(client, api_key, decision, words, reason):
    thread = at_interrupt()

    answer_over_api(api_key, thread, {"decisions": [decision]})

    event = resume_event(thread)
    assert event.detail["answers"][0]["decision"] == decision["type"]
    assert event.reason == reason
    html, row = shown(client, thread)
    assert f"<td>{words}</td>" in html
    assert (row["decision"], row["reason"]) == (words, reason)


def test_an_agent_inbox_response_and_a_json_answer_are_recorded(client, api_key):
    email = at_interrupt("email_reply")
    [asked] = engine.pending_interrupts(email)
    answer_in_console(
        client, email, {f"response-{asked.id}": "response", f"text-{asked.id}": "Say sorry"}
    )
    _, row = shown(client, email)
    assert row["decision"] == "response to send_email: Say sorry"

    review = at_interrupt("parallel_review")
    first, second = engine.pending_interrupts(review)
    answers = {first.id: {"approved": True}, second.id: {"approved": False, "comment": "no"}}
    answer_over_api(api_key, review, answers)
    event = resume_event(review)
    assert {a["interrupt_id"]: a["value"] for a in event.detail["answers"]} == answers
    _, row = shown(client, review)
    assert 'answer: {"approved": true}' in row["decision"]
    assert 'answer: {"approved": false, "comment": "no"}' in row["decision"]
