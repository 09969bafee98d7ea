"""The console's action pages (inbox, fork, replay, run, store) through Django's test
client, and the parts of ``durable.engine`` they rely on.

Threads that only need to sit at an interrupt are run to it in this process
(``at_interrupt``): the same graph, saver and checkpoints a worker would write, without
waiting for one. Requests that start runs go to the session's real worker.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from langgraph.types import Interrupt

from dashboard.forms import ResumeForm, parse_filter
from dashboard.present import interrupts
from dashboard.templatetags.console import markdown
from dashboard.views import inbox as inbox_views
from durable import engine
from durable.models import (
    Checkpoint,
    Run,
    StoreItem,
    Thread,
)
from durable.persistence.store import DjangoStore, ScopedStore
from tests.helpers.runs import finished
from tests.helpers.threads import at_interrupt, everything, head, made_run

pytestmark = pytest.mark.django_db(transaction=True)

# -- durable.engine: what the pages rely on ---------------------------------------------


def test_a_fork_keeps_its_metadata_on_the_checkpoint_it_writes():
    thread = at_interrupt()

    result = engine.fork(thread, head(thread), None, as_node="__end__", metadata={"reason": "dup"})

    row = Checkpoint.objects.get(thread_id=thread.thread_id, checkpoint_id=result.checkpoint_id)
    assert row.metadata["reason"] == "dup"
    assert row.metadata["source"] == "update"
    assert row.metadata["as_node"] == "__end__"  # the history's own record, kept beside it
    # Closed without resuming: nothing pending, nothing next, the thread idle.
    assert engine.pending_interrupts(thread) == []
    assert engine.thread_state(thread).next == ()
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.IDLE


def test_graph_shape_names_nodes_reducers_and_what_follows_a_node():
    shape = engine.graph_shape(at_interrupt("parallel_review"))

    assert shape.nodes == ("__start__", "legal_review", "finance_review", "decide")
    assert shape.combined_keys == {"reviews"}
    assert set(shape.state_keys) == {"document", "reviews", "verdict"}
    assert shape.after(["legal_review", "finance_review"]) == ["decide"]
    assert shape.after(["__start__"]) == ["legal_review", "finance_review", "decide"]


def test_graph_shape_follows_command_destinations_and_loops():
    shape = engine.graph_shape(at_interrupt("email_reply"))
    # review goes back to draft_reply (a response), so it may run again itself.
    assert shape.after(["review"]) == ["draft_reply", "review", "send"]


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
        ({"arg-i1-0-nights": ""}, "arg-i1-0-nights", "&#x27;nights&#x27; is a required"),
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
    assert "has no pending interrupt to answer" in response.content.decode()
    assert everything() == before


def test_closing_without_resuming_needs_a_reason_and_the_checkpoint_the_operator_saw(client):
    thread = at_interrupt()
    url = reverse("inbox-close", args=[thread.pk])
    before = everything()
    for data, message in (
        ({"checkpoint_id": head(thread), "reason": ""}, "Say why the thread is closed"),
        ({"checkpoint_id": "0" * 30, "reason": "dup"}, "The thread has moved on"),
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


# -- fork --------------------------------------------------------------------------------


def expense_checkpoints(thread) -> dict[int, str]:
    """The thread's checkpoint ids by step."""
    return {
        s.metadata["step"]: s.config["configurable"]["checkpoint_id"]
        for s in engine.thread_history(thread)
    }


def fork_url(thread, checkpoint_id) -> str:
    return reverse("fork", args=[thread.pk, checkpoint_id])


def test_the_fork_page_defaults_to_the_writer_and_explains_as_node(client):
    thread = at_interrupt()
    page = client.get(fork_url(thread, head(thread))).content.decode()
    assert '<option value="validate" selected>validate (wrote this checkpoint)' in page
    assert "is the node this update counts as" in page
    assert "so what runs next is what follows that node" in page
    assert 'name="state-amount"' in page and "42.5" in page
    assert 'name="run_after" id="run_after" checked' in page


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"as_node": "nope"}, "as_node", "as_node: nope is not a node of this graph"),
        ({"state-amount": "{12"}, "state-amount", "amount: the value is not valid JSON"),
        ({"reason": ""}, "reason", "Say why you fork"),
        # The graph's own router cannot take this update (validate's edge reads problems).
        ({"as_node": "validate", "step": 0}, None, "The graph could not apply this update"),
    ],
)
def test_a_refused_fork_names_the_field_and_changes_nothing(client, data, field, message):
    thread = at_interrupt()
    checkpoint = expense_checkpoints(thread)[data.pop("step", 1)]
    before = everything()
    form = {"as_node": "validate", "reason": "test", "run_after": "on", **data}

    response = client.post(fork_url(thread, checkpoint), form)

    assert response.status_code == 400
    page = response.content.decode()
    assert message in page
    if field:
        assert f'id="{field}-errors"' in page
    assert everything() == before


def test_a_foreign_or_unknown_checkpoint_is_a_404_naming_checkpoint_id(client):
    thread, other = at_interrupt(), at_interrupt()
    before = everything()
    for checkpoint in (head(other), "no-such-checkpoint"):
        for url in (fork_url(thread, checkpoint), reverse("replay", args=[thread.pk, checkpoint])):
            assert client.get(url).status_code == 404
            response = client.post(url, {"as_node": "validate", "reason": "x"})
            assert response.status_code == 404
            assert "<strong>checkpoint_id</strong>" in response.content.decode()
    assert everything() == before


def test_a_fork_without_a_run_sends_only_the_changed_keys_with_its_reason(client):
    thread = at_interrupt("parallel_review")
    # The first checkpoint after the input: both reviews pending, no review yet.
    checkpoint = expense_checkpoints(thread)[0]
    review = {"reviewer": "legal", "approved": True, "comment": "seen"}

    response = client.post(
        fork_url(thread, checkpoint),
        {
            "as_node": "legal_review",
            "reason": "Legal approved by phone",
            "state-document": '"Lease"',  # unchanged: not sent
            "state-reviews": json.dumps([review]),  # a reducer: added
        },
    )

    assert response.status_code == 303
    assert response["Location"] == reverse("thread", args=[thread.pk])
    state = engine.thread_state(thread)
    assert state.values["reviews"] == [review]
    assert state.metadata["reason"] == "Legal approved by phone"
    assert state.metadata["source"] == "update"
    assert Run.objects.count() == 0


# -- replay --------------------------------------------------------------------------------


def test_the_replay_page_lists_what_runs_again_and_warns(client):
    thread = at_interrupt()
    page = client.get(reverse("replay", args=[thread.pk, head(thread)])).content.decode()
    assert "First: <code>request_approval</code>" in page
    assert "<code>validate</code>, <code>pay</code>, <code>reject</code>" in page
    assert "LLM calls, tools, payments or emails happen again" in page
    assert "1 interrupt were pending here; it fires again" in page


def test_a_replay_needs_a_reason(client):
    thread = at_interrupt()
    before = everything()
    response = client.post(reverse("replay", args=[thread.pk, head(thread)]), {"reason": " "})
    assert response.status_code == 400
    assert "Say why you replay" in response.content.decode()
    assert everything() == before


# -- the run page ------------------------------------------------------------------------


def test_the_run_page_shows_status_events_and_what_runs_now(client):
    run = made_run(metadata={"reason": "Monthly batch"})
    page = client.get(reverse("run", args=[run.pk])).content.decode()

    assert '<div id="run-status" aria-live="polite"' in page
    assert '<span data-testid="run-status">running</span>' in page
    assert "· running <code>request_approval</code>" in page
    assert "validate started" in page and "validate finished" in page
    assert "validate wrote problems, status" in page
    assert "Reason: Monthly batch" in page
    # Follows the run's events after the last one shown, and polls without a stream.
    assert f'sse-connect="{reverse("run-events", args=[run.pk])}?after=5"' in page
    assert 'poll" data-poll-ms="2000"' in page  # static/dashboard/live.js polls
    assert 'id="cancel-run"' in page

    fragment = client.get(
        reverse("run", args=[run.pk]), headers={"HX-Request": "true", "HX-Target": "run-live"}
    ).content.decode()
    assert fragment.lstrip().startswith('<section id="run-live"')
    assert '<div id="run-status" hx-swap-oob="innerHTML">' in fragment
    assert "<html" not in fragment


def test_an_ended_run_neither_follows_nor_offers_cancel(client):
    run = made_run(status=Run.Status.SUCCESS)
    page = client.get(reverse("run", args=[run.pk])).content.decode()
    assert "sse-connect" not in page and "hx-trigger" not in page
    assert 'id="cancel-run"' not in page
    assert '<span aria-hidden="true">✓</span> <span data-testid="run-status">success</span>' in page


def test_cancelling_a_pending_run_ends_it_and_an_ended_run_is_refused(client):
    run = made_run(status=Run.Status.PENDING)
    response = client.post(reverse("cancel-run", args=[run.pk]))
    assert response.status_code == 303
    assert response["Location"] == reverse("run", args=[run.pk])
    assert Run.objects.get(pk=run.pk).status == Run.Status.CANCELLED

    before = everything()
    response = client.post(reverse("cancel-run", args=[run.pk]))
    assert response.status_code == 400
    assert "already ended (cancelled)" in response.content.decode()
    assert everything() == before


def test_cancel_from_htmx_answers_with_the_live_part(client):
    run = made_run(status=Run.Status.PENDING)
    response = client.post(reverse("cancel-run", args=[run.pk]), headers={"HX-Request": "true"})
    assert response.status_code == 200
    fragment = response.content.decode()
    assert fragment.lstrip().startswith('<section id="run-live"')
    assert '<span data-testid="run-status">cancelled</span>' in fragment


# -- 404s and CSRF -----------------------------------------------------------------------


def test_unknown_threads_and_runs_are_404s(client):
    assert client.get(reverse("run", args=[999999])).status_code == 404
    assert client.post(reverse("cancel-run", args=[999999])).status_code == 404
    assert client.get(reverse("inbox-thread", args=[999999])).status_code == 404
    assert client.post(reverse("inbox-answer", args=[999999])).status_code == 404
    assert client.post(reverse("inbox-close", args=[999999])).status_code == 404
    assert client.get(reverse("fork", args=[999999, "x"])).status_code == 404
    assert client.get(reverse("replay", args=[999999, "x"])).status_code == 404


def test_every_action_needs_the_csrf_token_and_htmx_sends_it_from_the_meta_tag(operator):
    thread = at_interrupt()
    run = made_run(status=Run.Status.PENDING)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(operator)
    checkpoint = head(thread)
    before = everything()
    for url, data in (
        (reverse("inbox-answer", args=[thread.pk]), {}),
        (reverse("inbox-close", args=[thread.pk]), {"checkpoint_id": checkpoint, "reason": "x"}),
        (fork_url(thread, checkpoint), {"as_node": "validate", "reason": "x"}),
        (reverse("replay", args=[thread.pk, checkpoint]), {"reason": "x"}),
        (reverse("cancel-run", args=[run.pk]), {}),
    ):
        assert strict.post(url, data).status_code == 403
    assert everything() == before

    # What static/dashboard/csrf.js does: the page's <meta name="csrf-token"> as a header.
    page = strict.get(reverse("run", args=[run.pk])).content.decode()
    token = re.search(r'<meta name="csrf-token" content="([^"]+)">', page).group(1)
    response = strict.post(
        reverse("cancel-run", args=[run.pk]), headers={"HX-Request": "true", "X-CSRFToken": token}
    )
    assert response.status_code == 200
    assert Run.objects.get(pk=run.pk).status == Run.Status.CANCELLED


# -- the store browser ---------------------------------------------------------------------


def test_the_store_browser_shows_the_namespace_tree_and_filters_items(client):
    store = ScopedStore(DjangoStore(), ("default",))  # the operator's tenant's part
    store.put(("users", "ada"), "prefs", {"theme": "dark", "size": 3})
    store.put(("users", "bob"), "prefs", {"theme": "light", "size": 1})
    store.put(("docs",), "readme", {"title": "Hello"})

    page = client.get(reverse("store")).content.decode()
    for label in ("users", "ada", "bob", "docs"):
        assert f">{label}</a>" in page
    assert page.count("<code>prefs</code>") == 2

    under = client.get(reverse("store"), {"ns": "users"}).content.decode()
    assert "readme" not in under and under.count("<code>prefs</code>") == 2
    for text in ("theme=dark", '{"size": {"$gt": 2}}'):
        found = client.get(reverse("store"), {"ns": "users", "filter": text}).content.decode()
        assert "<code>users.ada</code>" in found and "<code>users.bob</code>" not in found


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{bad", "filter: not valid JSON"),
        ("theme", "filter: &#x27;theme&#x27; is not key=value"),
        ('{"size": {"$near": 1}}', "filter: SearchOp.filter[&#x27;size&#x27;]: unknown operator"),
    ],
)
def test_a_bad_store_filter_is_explained(client, text, message):
    response = client.get(reverse("store"), {"filter": text})
    assert response.status_code == 400
    assert message in response.content.decode()


def test_browsing_the_store_does_not_refresh_time_to_live(client):
    ScopedStore(DjangoStore(ttl={"default_ttl": 60}), ("default",)).put(("tmp",), "k", {"v": 1})
    expires = StoreItem.objects.get().expires_at
    assert "tmp" in client.get(reverse("store"), {"ns": "tmp"}).content.decode()
    assert StoreItem.objects.get().expires_at == expires


def test_store_filters_parse_pairs_and_json():
    assert parse_filter("a=1, b = x\nc=true") == {"a": 1, "b": "x", "c": True}
    assert parse_filter(' {"a": {"$ne": 2}} ') == {"a": {"$ne": 2}}
    assert parse_filter("  ") is None


# -- actions that run, executed by the session's worker -----------------------------------


def posted_run(response) -> Run:
    """The run a 303 to its page names, once the worker has ended it."""
    assert response.status_code == 303, response.content.decode()[:2000]
    match = re.fullmatch(r"/runs/(\d+)/", response["Location"])
    return finished(Run.objects.get(pk=int(match.group(1))))


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


def test_a_fork_that_runs_goes_on_from_the_changed_state(client, worker):
    thread = at_interrupt()
    step0 = expense_checkpoints(thread)[0]  # written by __start__; validate is next
    run = posted_run(
        client.post(
            fork_url(thread, step0),
            {
                "as_node": "validate",
                "reason": "Amount corrected by finance",
                "state-amount": "5",
                "state-problems": "[]",
                "run_after": "on",
            },
        )
    )
    assert run.kind == Run.Kind.FORK and run.forked_from == step0
    assert run.metadata == {"reason": "Amount corrected by finance"}
    # As if validate had passed the new amount: the approval is asked for 5.
    assert run.status == Run.Status.INTERRUPTED
    [pending] = engine.pending_interrupts(thread)
    assert pending.value["action_requests"][0]["args"]["amount"] == 5


def test_a_replay_runs_again_and_its_interrupt_fires_again(client, worker):
    thread = at_interrupt()
    checkpoint = head(thread)
    run = posted_run(
        client.post(reverse("replay", args=[thread.pk, checkpoint]), {"reason": "Flaky approval"})
    )
    assert run.kind == Run.Kind.REPLAY and run.checkpoint_id == checkpoint
    assert run.metadata == {"reason": "Flaky approval"}
    assert run.status == Run.Status.INTERRUPTED
