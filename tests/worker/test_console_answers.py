"""The console's answers to interrupts through Django's test client: the answer
forms of the three interrupt schemas, the inbox, and answers a worker resumes with.

Threads that only need to sit at an interrupt are run to it in this process
(``at_interrupt``): the same graph, saver and checkpoints a worker would write, without
waiting for one. Requests that start runs go to the session's real worker.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from langgraph.types import Interrupt

from dashboard.forms import ResumeForm
from dashboard.present import interrupts
from dashboard.templatetags.console import markdown
from dashboard.views import inbox as inbox_views
from durable import engine
from durable.models import Run, Thread
from tests.helpers.runs import posted_run
from tests.helpers.threads import at_interrupt, everything, head

pytestmark = pytest.mark.django_db(transaction=True)

# -- answer forms: the three interrupt schemas (no database) ----------------------------

HITL_WITH_SCHEMA = {
    "action_requests": [{"name": "book", "args": {"city": "Oslo", "nights": 2, "late": False}}],
    "review_configs": [
        {
            "action_name": "book",
            "allowed_decisions": ["approve", "edit", "reject"],
            "args_schema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "enum": ["Oslo", "Bergen"]},
                    "nights": {"type": "integer", "minimum": 1},
                    "late": {"type": "boolean"},
                    "notes": {"type": "array"},
                },
                "required": ["city", "nights"],
            },
        }
    ],
}
HUMAN = [
    {
        "action_request": {"action": "send_email", "args": {"to": "a@b.c", "body": "Hi"}},
        "config": {
            "allow_accept": True,
            "allow_edit": True,
            "allow_respond": True,
            "allow_ignore": False,
        },
        "description": "**Send** it?",
    }
]


def form(value, data=None, iid="i1"):
    return ResumeForm([Interrupt(value=value, id=iid)], data)


def test_an_args_schema_gives_each_simple_argument_its_own_input():
    card = form(HITL_WITH_SCHEMA).cards[0].actions[0]
    kinds = {arg.spec.key: arg.spec.kind for arg in card.inputs}
    assert kinds == {"city": "choice", "nights": "integer", "late": "boolean", "notes": "json"}
    assert [a.spec.required for a in card.inputs] == [True, True, False, False]


@pytest.mark.parametrize(
    ("data", "decision"),
    [
        # Inputs not sent keep their value; a changed one makes an edit.
        (
            {"arg-i1-0-nights": "3", "arg-i1-0-late": "true"},
            {
                "type": "edit",
                "edited_action": {
                    "name": "book",
                    "args": {"city": "Oslo", "nights": 3, "late": True},
                },
            },
        ),
        ({"arg-i1-0-notes": '["quiet"]', "arg-i1-0-city": "Bergen"}, None),
        # An edit that changes nothing approves.
        ({"arg-i1-0-nights": "2", "arg-i1-0-city": "Oslo"}, {"type": "approve"}),
    ],
)
def test_per_argument_edits_become_the_edited_action(data, decision):
    bound = form(HITL_WITH_SCHEMA, {"decision-i1-0": "edit", **data})
    assert bound.is_valid(), bound.errors
    [made] = bound.resume_args["value"]["decisions"]
    if decision is None:
        assert made["edited_action"]["args"] == {
            "city": "Bergen",
            "nights": 2,
            "late": False,
            "notes": ["quiet"],
        }
    else:
        assert made == decision


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"arg-i1-0-nights": "2.5"}, "arg-i1-0-nights", "nights must be a whole number"),
        ({"arg-i1-0-nights": "0"}, "arg-i1-0-nights", "args_schema at nights: 0 is less than"),
        (
            {"arg-i1-0-nights": ""},
            "arg-i1-0-nights",
            "nights is required: an edit cannot leave it empty.",
        ),
        ({"arg-i1-0-city": "Paris"}, "arg-i1-0-city", "Choose one of: Oslo, Bergen"),
        ({"arg-i1-0-notes": "[1,"}, "arg-i1-0-notes", "notes is not valid JSON"),
        ({"args-i1-0": '{"city": "Oslo"}'}, "args-i1-0", "&#x27;nights&#x27; is a required"),
    ],
)
def test_a_bad_argument_is_an_error_on_its_own_input(data, field, message):
    bound = form(HITL_WITH_SCHEMA, {"decision-i1-0": "edit", **data})
    assert not bound.is_valid()
    assert list(bound.errors) == [field]
    assert message in str(bound.errors[field])


@pytest.mark.parametrize(
    ("data", "response"),
    [
        ({"response-i1": "accept"}, {"type": "accept", "args": HUMAN[0]["action_request"]}),
        (
            {"response-i1": "edit", "arg-i1-0-body": "Hello"},
            {
                "type": "edit",
                "args": {"action": "send_email", "args": {"to": "a@b.c", "body": "Hello"}},
            },
        ),
        # An edit that changes nothing accepts, as agent-inbox does.
        (
            {"response-i1": "edit", "arg-i1-0-body": "Hi"},
            {"type": "accept", "args": HUMAN[0]["action_request"]},
        ),
        (
            {"response-i1": "response", "text-i1": " Shorter. "},
            {"type": "response", "args": "Shorter."},
        ),
    ],
)
def test_a_human_interrupt_is_answered_with_a_list_of_one_response(data, response):
    bound = form(HUMAN, data)
    assert bound.is_valid(), bound.errors
    assert bound.resume_args == {"value": [response]}


def test_a_human_interrupt_refuses_what_its_config_does_not_allow():
    assert form(HUMAN).cards[0].human.allowed == ["accept", "edit", "response"]
    ignored = form(HUMAN, {"response-i1": "ignore"})
    assert not ignored.is_valid()
    assert "ignore is not allowed" in str(ignored.errors["response-i1"])
    silent = form(HUMAN, {"response-i1": "response", "text-i1": "  "})
    assert not silent.is_valid()
    assert list(silent.errors) == ["text-i1"]


def test_a_dict_human_interrupt_is_recognised_and_anything_else_is_json():
    assert interrupts.kind_of(HUMAN[0]) == interrupts.HUMAN
    assert interrupts.kind_of(HUMAN * 2) == interrupts.GENERIC
    assert interrupts.kind_of({"question": "?"}) == interrupts.GENERIC


def test_descriptions_render_as_markdown_without_scripts_or_handlers():
    html = markdown(
        "## Title\n\n**bold** <script>alert(1)</script>"
        '<img src="x" onerror="alert(2)"> [link](javascript:alert(3))'
    )
    assert "<h2>Title</h2>" in html
    assert "<strong>bold</strong>" in html
    assert "<script" not in html
    assert "onerror" not in html
    assert "javascript:" not in html


# -- the inbox -------------------------------------------------------------------------


def test_the_inbox_lists_interrupted_threads_by_graph_oldest_first(client):
    newer = at_interrupt()
    older = at_interrupt()
    email = at_interrupt("email_reply")
    idle = at_interrupt()
    Thread.objects.filter(pk=idle.pk).update(status=Thread.Status.IDLE)
    now = timezone.now()
    for thread, minutes in ((newer, 5), (older, 30), (email, 1)):
        Thread.objects.filter(pk=thread.pk).update(updated_at=now - timedelta(minutes=minutes))

    page = client.get(reverse("inbox")).content.decode()

    assert "3 threads wait" in page
    order = [page.index(t.thread_id) for t in (email, older, newer)]
    assert order == sorted(order)  # email_reply's group, then expense_approval's, oldest first
    assert idle.thread_id not in page
    # Each schema has its renderer: HITL buttons, agent-inbox's markdown and choices.
    assert 'value="approve"' in page and 'value="reject"' in page
    assert "<h2>Reply to ada@example.com</h2>" in page
    assert 'value="accept"' in page and 'value="ignore"' in page
    assert "Respond in words" in page
    # One graph only, by its deep link.
    only = client.get(reverse("inbox"), {"graph": "email_reply"}).content.decode()
    assert email.thread_id in only and older.thread_id not in only


def test_the_inbox_is_paged(client, monkeypatch):
    monkeypatch.setattr(inbox_views, "THREADS_PER_PAGE", 2)
    threads = [at_interrupt() for _ in range(3)]
    first = client.get(reverse("inbox")).content.decode()
    second = client.get(reverse("inbox"), {"page": 2}).content.decode()
    assert [t.thread_id in first for t in threads] == [True, True, False]
    assert [t.thread_id in second for t in threads] == [False, False, True]
    assert "Page 1 of 2" in first


def test_an_answer_that_is_not_json_is_shown_on_its_box_and_changes_nothing(client):
    thread = at_interrupt("parallel_review")
    ids = [i.id for i in engine.pending_interrupts(thread)]
    before = everything()

    response = client.post(
        reverse("inbox-answer", args=[thread.pk]),
        {f"answer-{ids[0]}": '{"approved": true}', f"answer-{ids[1]}": "{approved: yes"},
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert f'id="answer-{ids[1]}-errors"' in page
    assert "The answer is not valid JSON" in page
    assert "{approved: yes" in page  # kept for correction
    assert everything() == before


def test_answering_a_thread_with_nothing_pending_is_refused(client):
    thread = at_interrupt()
    engine.fork(thread, head(thread), None, as_node="__end__")
    before = everything()
    response = client.post(reverse("inbox-answer", args=[thread.pk]), {})
    assert response.status_code == 400
    assert "has no pending interrupt to resume" in response.content.decode()
    assert everything() == before


def test_closing_without_resuming_needs_a_reason_and_the_checkpoint_the_operator_saw(client):
    thread = at_interrupt()
    url = reverse("inbox-close", args=[thread.pk])
    before = everything()
    for data, message in (
        ({"checkpoint_id": head(thread), "reason": ""}, "Say why the thread is closed"),
        ({"checkpoint_id": "0" * 30, "reason": "dup"}, "has no checkpoint"),
    ):
        response = client.post(url, data)
        assert response.status_code == 400
        assert message in response.content.decode()
        assert everything() == before

    response = client.post(url, {"checkpoint_id": head(thread), "reason": "Duplicate claim"})

    assert response.status_code == 303
    assert response["Location"] == reverse("thread", args=[thread.pk])
    assert engine.pending_interrupts(thread) == []
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.IDLE
    assert engine.thread_state(thread).metadata["reason"] == "Duplicate claim"
    assert Run.objects.count() == 0  # nothing ran


def test_one_thread_of_the_inbox_has_its_own_page(client):
    thread = at_interrupt("email_reply")
    page = client.get(reverse("inbox-thread", args=[thread.pk])).content.decode()
    assert thread.thread_id in page
    assert f'action="{reverse("inbox-answer", args=[thread.pk])}"' in page


# -- answers that run, executed by the session's worker ---------------------------------


def test_an_approval_from_the_inbox_resumes_and_leads_to_the_run(client, worker):
    thread = at_interrupt()
    [pending] = engine.pending_interrupts(thread)
    run = posted_run(
        client.post(
            reverse("inbox-answer", args=[thread.pk]), {f"decision-{pending.id}-0": "approve"}
        )
    )
    assert run.kind == Run.Kind.RESUME and run.status == Run.Status.SUCCESS
    assert run.command == {"resume": {"decisions": [{"type": "approve"}]}}
    assert engine.thread_state(thread).values["status"] == "paid"


def test_a_per_argument_edit_from_the_inbox_pays_the_edited_claim(client, worker):
    thread = at_interrupt()
    [pending] = engine.pending_interrupts(thread)
    prefix = f"arg-{pending.id}-0"
    run = posted_run(
        client.post(
            reverse("inbox-answer", args=[thread.pk]),
            {
                f"decision-{pending.id}-0": "edit",
                f"{prefix}-employee": "Grace Hopper",
                f"{prefix}-amount": "40",
                f"{prefix}-description": "Compiler manual",
            },
        )
    )
    assert run.status == Run.Status.SUCCESS
    assert engine.thread_state(thread).values["payment"]["amount"] == 40


def test_parallel_interrupts_are_answered_by_id_in_one_submit(client, worker):
    thread = at_interrupt("parallel_review")
    ids = [i.id for i in engine.pending_interrupts(thread)]
    run = posted_run(
        client.post(
            reverse("inbox-answer", args=[thread.pk]),
            {f"answer-{i}": '{"approved": true}' for i in ids},
        )
    )
    assert run.command == {"resume": {i: {"approved": True} for i in ids}}
    assert engine.thread_state(thread).values["verdict"] == "approved"


def test_an_agent_inbox_edit_sends_the_edited_email(client, worker):
    thread = at_interrupt("email_reply")
    [pending] = engine.pending_interrupts(thread)
    run = posted_run(
        client.post(
            reverse("inbox-answer", args=[thread.pk]),
            {f"response-{pending.id}": "edit", f"arg-{pending.id}-0-subject": "Your address"},
        )
    )
    [response] = run.command["resume"]
    assert response["type"] == "edit"
    values = engine.thread_state(thread).values
    assert values["sent"]["subject"] == "Your address"
    assert values["outcome"] == "sent to ada@example.com"
