"""The console's pages through Django's test client; runs go to a real worker."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from durable import engine
from durable.models import Checkpoint, Run, RunEvent, Tenant, Thread
from tests.helpers.runs import finished
from tests.helpers.threads import EXPENSE

pytestmark = pytest.mark.django_db(transaction=True)


def start_form(graph: str, input_text: str) -> dict:
    return {"graph": graph, "input": input_text}


INPUTS = {"expense_approval": EXPENSE, "parallel_review": {"document": "Lease"}}


def interrupted(graph: str = "expense_approval"):
    """Start ``graph`` and wait for the worker to stop it at its interrupt(s): the
    thread and the interrupt ids."""
    run = finished(engine.start(graph, INPUTS[graph]))
    assert run.status == Run.Status.INTERRUPTED
    return Thread.objects.get(pk=run.thread_pk), [i["id"] for i in run.interrupts]


def counts() -> tuple[int, int, int]:
    return Thread.objects.count(), Run.objects.count(), Checkpoint.objects.count()


def test_threads_page_offers_a_start_form_per_registered_graph(client):
    page = client.get(reverse("threads")).content.decode()
    assert "Start expense_approval" in page
    assert "Start parallel_review" in page
    # The form comes filled with the graph's example input.
    assert "Ada Lovelace" in page


def test_starting_a_run_redirects_to_its_thread(client, worker):
    response = client.post(
        reverse("start-run"), start_form("expense_approval", json.dumps(EXPENSE))
    )
    assert response.status_code == 303
    run = Run.objects.get()
    assert response["Location"] == reverse("thread", args=[run.thread_pk])
    assert run.input == EXPENSE
    assert finished(run).status == Run.Status.INTERRUPTED


@pytest.mark.parametrize(
    ("graph", "input_text", "message"),
    [
        ("no_such_graph", "{}", "Unknown graph &#x27;no_such_graph&#x27;"),
        ("expense_approval", '{"employee": "Ada",', "The input is not valid JSON"),
        ("expense_approval", '["not", "an", "object"]', "input must be a JSON object"),
        ("expense_approval", '{"salary": 1}', "Unknown input key(s): salary"),
        # State keys the graph writes itself are not input: no forged payment.
        (
            "expense_approval",
            '{"employee": "Ada", "amount": 1, "description": "d", "payment": {"reference": "X"}}',
            "Unknown input key(s): payment. The graph takes: amount, description, employee",
        ),
        ("expense_approval", '{"amount": NaN}', "input holds NaN or Infinity"),
        ("expense_approval", '{"amount": 1e400}', "input holds NaN or Infinity"),
        ("expense_approval", '{"employee": "A\\u0000B"}', "input.employee: holds a NUL character"),
        ("expense_approval", '{"employee": ' + "[" * 150 + "]" * 150 + "}", "nested more than 100"),
        ("expense_approval", "[" * 100_000 + "]" * 100_000, "The input is nested too deeply"),
    ],
)
def test_bad_start_requests_explain_and_change_nothing(client, graph, input_text, message):
    response = client.post(reverse("start-run"), start_form(graph, input_text))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert counts() == (0, 0, 0)


def test_resume_with_nothing_pending_explains_and_changes_nothing(client, worker):
    thread, _ = interrupted()
    finished(engine.resume(thread, {"decisions": [{"type": "approve"}]}))
    before = counts()

    response = client.post(reverse("resume", args=[thread.pk]), {"decision-whatever-0": "approve"})

    assert response.status_code == 400
    assert "has no pending interrupt to resume" in response.content.decode()
    assert counts() == before


def test_an_answer_that_is_not_json_explains_and_changes_nothing(client, worker):
    thread, ids = interrupted("parallel_review")
    before = counts()

    response = client.post(
        reverse("resume", args=[thread.pk]),
        {f"answer-{ids[0]}": '{"approved": true}', f"answer-{ids[1]}": "{approved: yes}"},
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert "The answer is not valid JSON" in page
    # The box with the bad answer is marked invalid and points at its message.
    assert f'aria-describedby="answer-{ids[1]}-errors"' in page
    # What the operator typed is kept for correction.
    assert "{approved: yes}" in page
    assert counts() == before


def test_both_parallel_interrupts_are_answered_in_one_submit(client, worker):
    thread, ids = interrupted("parallel_review")
    page = client.get(reverse("thread", args=[thread.pk])).content.decode()
    assert all(f'name="answer-{i}"' in page for i in ids)

    response = client.post(
        reverse("resume", args=[thread.pk]),
        {f"answer-{i}": '{"approved": true}' for i in ids},
    )

    assert response.status_code == 303
    resumed = thread.runs.get(kind=Run.Kind.RESUME)
    assert resumed.command == {"resume": {i: {"approved": True} for i in ids}}
    assert finished(resumed).status == Run.Status.SUCCESS
    assert engine.thread_state(thread).values["verdict"] == "approved"


def test_a_hitl_rejection_sends_the_reason(client, worker):
    thread, [pending_id] = interrupted()
    client.post(
        reverse("resume", args=[thread.pk]),
        {f"decision-{pending_id}-0": "reject", f"message-{pending_id}-0": "Duplicate"},
    )
    resumed = thread.runs.get(kind=Run.Kind.RESUME)
    assert resumed.command == {
        "resume": {"decisions": [{"type": "reject", "message": "Duplicate"}]}
    }
    finished(resumed)
    assert engine.thread_state(thread).values["status"] == "rejected"


def test_a_decision_the_request_does_not_allow_is_refused(client, worker):
    thread, [pending_id] = interrupted()
    before = counts()
    response = client.post(
        reverse("resume", args=[thread.pk]), {f"decision-{pending_id}-0": "pay-twice"}
    )
    assert response.status_code == 400
    assert "pay-twice is not allowed for pay_expense" in response.content.decode()
    assert counts() == before


def test_the_live_section_follows_the_run_only_while_it_is_active(client):
    # A run as the page sees it while a worker has it (no worker here: a worker would
    # end it before the page is read).
    thread = engine.create_thread("expense_approval")
    run = Run.objects.create(thread=thread, graph=thread.graph, kind="start", status="running")
    RunEvent.objects.append(run.pk, RunEvent.LIFECYCLE, {"status": "running"})
    headers = {"HX-Request": "true", "HX-Target": "live"}
    url = reverse("thread", args=[thread.pk])
    # The page connects to the run's events after the last one it has seen; the
    # fragment re-renders on each event, or polls while no event stream is open.
    page = client.get(url).content.decode()
    assert f'sse-connect="{reverse("run-events", args=[run.pk])}?after=1"' in page
    fragment = client.get(url, headers=headers).content.decode()
    assert fragment.lstrip().startswith('<section id="live"')
    assert "<html" not in fragment
    assert "sse:updates" in fragment
    assert 'poll, every 5s" data-poll-ms="1000"' in fragment  # static/dashboard/live.js polls
    Run.objects.filter(pk=run.pk).update(status="success")
    assert "hx-trigger" not in client.get(url, headers=headers).content.decode()
    assert "sse-connect" not in client.get(url).content.decode()


def test_forms_need_a_csrf_token(worker, operator):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(operator)
    response = strict.post(reverse("start-run"), start_form("expense_approval", "{}"))
    assert response.status_code == 403
    assert Run.objects.count() == 0


def test_unknown_thread_is_a_404(client):
    assert client.get(reverse("thread", args=[999999])).status_code == 404
    assert client.post(reverse("resume", args=[999999])).status_code == 404


def test_admin_lists_threads_and_runs_but_offers_no_delete(admin_client):
    thread = Thread.objects.create(
        tenant=Tenant.default(),
        thread_id="admin-visible",
        name="admin-visible",
        graph="expense_approval",
    )
    Run.objects.create(thread=thread, graph=thread.graph, kind=Run.Kind.START, input={})
    listing = admin_client.get(reverse("admin:durable_thread_changelist"))
    assert listing.status_code == 200
    assert "admin-visible" in listing.content.decode()
    assert admin_client.get(reverse("admin:durable_run_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:durable_runevent_changelist")).status_code == 200
    # Deleting a thread here would leave its checkpoints behind.
    assert (
        admin_client.get(reverse("admin:durable_thread_delete", args=[thread.pk])).status_code
        == 403
    )


def test_an_answer_outside_the_response_schema_is_refused(client, worker):
    thread, ids = interrupted("parallel_review")
    before = counts()
    response = client.post(
        reverse("resume", args=[thread.pk]),
        {f"answer-{ids[0]}": '{"approved": "false"}', f"answer-{ids[1]}": '{"approved": true}'},
    )
    assert response.status_code == 400
    assert (
        "does not match its response_schema at approved: "
        "&#x27;false&#x27; is not of type &#x27;boolean&#x27;" in response.content.decode()
    )
    assert counts() == before


def test_an_edited_claim_is_validated_and_paid_as_edited(client, worker):
    thread, [pending_id] = interrupted()
    edited = {**EXPENSE, "amount": 40.0, "payment": "ignored: not an argument"}
    response = client.post(
        reverse("resume", args=[thread.pk]),
        {f"decision-{pending_id}-0": "edit", f"args-{pending_id}-0": json.dumps(edited)},
    )
    assert response.status_code == 303
    resumed = finished(thread.runs.get(kind=Run.Kind.RESUME))
    assert resumed.command["resume"]["decisions"][0]["edited_action"] == {
        "name": "pay_expense",
        "args": edited,
    }
    values = engine.thread_state(thread).values
    assert values["status"] == "paid"
    assert values["payment"]["amount"] == 40.0
    assert values["amount"] == 40.0


def test_an_edit_that_changes_nothing_is_an_approval(client, worker):
    thread, [pending_id] = interrupted()
    client.post(
        reverse("resume", args=[thread.pk]),
        {f"decision-{pending_id}-0": "edit", f"args-{pending_id}-0": json.dumps(EXPENSE)},
    )
    resumed = thread.runs.get(kind=Run.Kind.RESUME)
    assert resumed.command == {"resume": {"decisions": [{"type": "approve"}]}}


def test_edited_arguments_must_be_a_json_object(client, worker):
    thread, [pending_id] = interrupted()
    before = counts()
    for args, message in (
        ("[1, 2]", "must be a JSON object"),
        ("{amount: 4", "The arguments are not valid JSON"),
    ):
        response = client.post(
            reverse("resume", args=[thread.pk]),
            {f"decision-{pending_id}-0": "edit", f"args-{pending_id}-0": args},
        )
        assert response.status_code == 400
        assert message in response.content.decode()
    assert counts() == before


def test_a_run_no_worker_has_taken_says_so(client):
    thread = Thread.objects.create(
        tenant=Tenant.default(), thread_id="waiting", name="waiting", graph="expense_approval"
    )
    Run.objects.create(thread=thread, graph=thread.graph, kind=Run.Kind.START, input=EXPENSE)
    page = client.get(reverse("thread", args=[thread.pk])).content.decode()
    assert "No checkpoint yet." in page
    assert "check that a worker" in page
    assert "the graph has ended" not in page


def test_the_runs_table_says_who_asked_and_why_a_run_stopped(client):
    thread = Thread.objects.create(
        tenant=Tenant.default(), thread_id="stopped", name="stopped", graph="expense_approval"
    )
    Run.objects.create(
        thread=thread,
        graph=thread.graph,
        kind=Run.Kind.START,
        input=EXPENSE,
        status=Run.Status.CANCELLED,
        requested_by="ops",
        stop_detail="cancelled by ops",
    )
    page = client.get(reverse("thread", args=[thread.pk])).content.decode()
    assert '<span aria-hidden="true">⊘</span> cancelled</span>' in page
    assert "<td>ops</td>" in page
    assert "cancelled by ops" in page
