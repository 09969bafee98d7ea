"""Bad input on a console form gets the console's own message, naming the field, and
changes nothing: a form over the upload limit (413, with DEBUG on too), a NUL character
in a reason, an edit that empties the arguments of a request, a start input of the
wrong types (refused by the API the same way), a retention policy for no graph or with
no limit.

Found by hand: a 3 MB start input showed Django's ``RequestDataTooBig`` page; a NUL in a
rejection's reason re-showed the form without a word; an email edit with every field
empty was sent "to "; ``{"employee": 5, "amount": "lots"}`` started a thread."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.forms.fields import REASON_MAX_LENGTH
from durable import engine
from durable.graphs import example_input, get_graph, graph_names
from durable.models import AuditEvent, RetentionPolicy, Tenant
from tests.helpers.threads import EXPENSE, arrived, at_interrupt, everything, head

pytestmark = pytest.mark.django_db(transaction=True)

# Over Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB).
THREE_MB = "x" * (3 * 1024 * 1024)
WRONG_TYPES = {"employee": 5, "amount": "lots", "description": "Train"}


@pytest.fixture
def browser(operator) -> Client:
    """The test client as a browser is: CSRF checked (the token comes with the form)."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    return client


def _token(client: Client) -> str:
    client.get(reverse("threads"))
    return client.cookies["csrftoken"].value


def _text(response) -> str:
    return response.content.decode()


# -- a form over the upload limit ---------------------------------------------------------


@pytest.mark.parametrize("debug", [True, False])
def test_a_start_input_over_the_upload_limit_is_a_413_in_the_console(browser, settings, debug):
    settings.DEBUG = debug
    token = _token(browser)
    before = everything()

    response = browser.post(
        reverse("start-run"),
        {"csrfmiddlewaretoken": token, "graph": "expense_approval", "input": THREE_MB},
        headers={"referer": "http://testserver/"},
    )

    page = _text(response)
    assert response.status_code == 413
    assert "The form is too large" in page
    assert "the console takes at most 2.5 MB in one form" in page
    assert "nothing was changed" in page
    assert 'href="http://testserver/">Back to the form' in page
    assert "RequestDataTooBig" not in page and "Traceback" not in page
    assert 'class="brand"' in page  # the console's layout
    assert everything() == before


def test_a_fork_value_over_the_upload_limit_is_a_413_in_the_console(browser):
    thread = at_interrupt()
    checkpoint_id = head(thread)
    fork = reverse("fork", args=[thread.pk, checkpoint_id])
    token = _token(browser)
    before = everything()

    response = browser.post(
        fork,
        {
            "csrfmiddlewaretoken": token,
            "as_node": "validate",
            "reason": "bigger",
            "state-description": THREE_MB,
        },
        headers={"referer": f"http://testserver{fork}"},
    )

    assert response.status_code == 413
    assert f'href="http://testserver{fork}">Back to the form' in _text(response)
    assert everything() == before


def test_a_referer_of_another_site_is_not_linked_back(browser):
    response = browser.post(
        reverse("start-run"),
        {"graph": "expense_approval", "input": THREE_MB},
        headers={"referer": "https://elsewhere.example/"},
    )
    assert response.status_code == 413
    assert "elsewhere.example" not in _text(response)
    assert 'href="/">Back to the threads' in _text(response)


# -- NUL characters --------------------------------------------------------------------------


def test_a_rejection_reason_with_a_nul_character_is_named_on_the_form(client):
    thread = at_interrupt()
    iid = engine.pending_interrupts(thread)[0].id
    before = everything()

    response = client.post(
        reverse("resume", args=[thread.pk]),
        {f"decision-{iid}-0": "reject", f"message-{iid}-0": "too\x00much"},
    )

    page = _text(response)
    assert response.status_code == 400
    assert f'id="message-{iid}-0-errors"' in page
    assert "reason: contains a NUL character (\\u0000), which cannot be stored" in page
    assert everything() == before


def test_a_fork_reason_with_a_nul_character_is_named_on_the_form(client):
    thread = at_interrupt()
    before = everything()

    response = client.post(
        reverse("fork", args=[thread.pk, head(thread)]),
        {"as_node": "validate", "reason": "why\x00", "state-amount": "99"},
    )

    assert response.status_code == 400
    assert "reason: contains a NUL character" in _text(response)
    assert everything() == before


# -- a reason too long ---------------------------------------------------------------------


def test_a_close_reason_too_long_is_named(client):
    thread = at_interrupt()
    before = everything()

    response = client.post(
        reverse("inbox-close", args=[thread.pk]),
        {"checkpoint_id": head(thread), "reason": "x" * (REASON_MAX_LENGTH + 1)},
    )

    assert response.status_code == 400
    assert "reason: at most 500 characters (it has 501)." in _text(response)
    assert everything() == before


def test_a_bulk_rejection_reason_too_long_is_named(client):
    threads = [arrived(), arrived()]
    before = everything()

    response = client.post(
        reverse("inbox-bulk"),
        {"threads": [t.pk for t in threads], "decision": "reject", "message": "x" * 501},
    )

    assert response.status_code == 400
    assert "reason: at most 500 characters (it has 501)." in _text(response)
    assert everything() == before


# -- edits keep required arguments ---------------------------------------------------------


def test_an_email_edit_with_every_field_empty_is_refused_on_each_field(client):
    thread = at_interrupt("email_reply")
    iid = engine.pending_interrupts(thread)[0].id
    before = everything()

    response = client.post(
        reverse("resume", args=[thread.pk]),
        {
            f"response-{iid}": "edit",
            f"arg-{iid}-0-to": "",
            f"arg-{iid}-0-subject": "  ",
            f"arg-{iid}-0-body": "",
        },
    )

    page = _text(response)
    assert response.status_code == 400
    for arg in ("to", "subject", "body"):
        assert f'id="arg-{iid}-0-{arg}-errors"' in page
        assert f"{arg} is required: an edit cannot leave it empty." in page
    assert everything() == before


def test_an_email_edit_that_changes_one_field_is_still_sent(client):
    thread = at_interrupt("email_reply")
    iid = engine.pending_interrupts(thread)[0].id

    response = client.post(
        reverse("resume", args=[thread.pk]),
        {f"response-{iid}": "edit", f"arg-{iid}-0-to": "grace@example.com"},
    )

    assert response.status_code == 303
    run = thread.runs.get(kind="resume")
    [answer] = run.command["resume"]
    assert answer["type"] == "edit" and answer["args"]["args"]["to"] == "grace@example.com"


def test_a_required_argument_of_the_args_schema_stays_required(client):
    thread = at_interrupt()  # expense_approval: its args_schema requires employee
    iid = engine.pending_interrupts(thread)[0].id
    before = everything()

    response = client.post(
        reverse("resume", args=[thread.pk]),
        {
            f"decision-{iid}-0": "edit",
            f"arg-{iid}-0-employee": "",
            f"arg-{iid}-0-amount": "10",
            f"arg-{iid}-0-description": "Lunch",
        },
    )

    page = _text(response)
    assert response.status_code == 400
    assert f'id="arg-{iid}-0-employee-errors"' in page
    assert "employee is required: an edit cannot leave it empty." in page
    assert everything() == before


# -- the start input and the graph's input schema ---------------------------------------------


def test_a_start_input_of_the_wrong_types_is_refused_on_the_input_field(client):
    before = everything()

    response = client.post(
        reverse("start-run"), {"graph": "expense_approval", "input": json.dumps(WRONG_TYPES)}
    )

    page = _text(response)
    assert response.status_code == 400
    # On the JSON box it was typed in, which opens to show it.
    assert 'id="input-expense_approval-errors"' in page
    assert (
        "Does not match the graph&#x27;s input schema: "
        "input.amount: &#x27;lots&#x27; is not of type &#x27;number&#x27;; "
        "input.employee: 5 is not of type &#x27;string&#x27;."
    ) in page
    assert everything() == before


@pytest.mark.parametrize("route", ["", "/wait", "/stream"])
def test_the_api_refuses_the_same_input_with_a_422_naming_it(api_key, route):
    api = Client(headers={"x-api-key": api_key})
    before = everything()

    response = api.post(
        f"/api/threads/claim-1/runs{route}",
        {"assistant_id": "expense_approval", "input": WRONG_TYPES, "if_not_exists": "create"},
        content_type="application/json",
    )

    assert response.status_code == 422
    body = response.json()
    assert body["field"] == "input"
    assert "input.employee: 5 is not of type 'string'" in body["detail"]
    assert "input.amount: 'lots' is not of type 'number'" in body["detail"]
    assert everything() == before


def test_partial_inputs_and_reducer_keys_are_not_refused():
    # LangGraph takes any subset of the input keys; a key with a reducer takes what
    # its reducer takes (here operator.add over a list, given one more list).
    for graph, values in [
        ("expense_approval", {"amount": 12}),
        ("parallel_review", {}),
        ("probe", {"dir": "/tmp/x", "log": ["one"]}),
    ]:
        engine.checks.check_input(get_graph(graph), values)
    with pytest.raises(engine.InvalidRequest) as refused:
        engine.checks.check_input(get_graph("expense_approval"), {"amount": [1]})
    assert refused.value.field == "input" and "input.amount" in refused.value.message


def test_every_example_input_starts(client):
    for graph in graph_names():
        response = client.post(
            reverse("start-run"), {"graph": graph, "input": json.dumps(example_input(graph))}
        )
        assert response.status_code == 303, (graph, _text(response)[:2000])


def test_a_fork_as_input_is_checked_against_the_input_schema_too():
    thread = engine.create_thread("expense_approval")
    get_graph("expense_approval").invoke(EXPENSE, engine.config_for(thread))
    with pytest.raises(engine.InvalidRequest) as refused:
        engine.fork(thread, head(thread), {"employee": 5}, as_node="__input__")
    assert refused.value.field == "values"
    assert "values.employee: 5 is not of type 'string'" in refused.value.message


# -- retention policies -------------------------------------------------------------------------


@pytest.fixture
def staff(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


POLICY = {"graph": "", "max_age": "30 00:00:00", "strategy": "keep_latest", "enabled": "on"}


def test_a_retention_policy_for_a_graph_not_registered_is_refused(staff):
    add = reverse("admin:durable_retentionpolicy_add")

    response = staff.post(add, {**POLICY, "tenant": Tenant.default().pk, "graph": "expense"})

    assert response.status_code == 200  # the admin's form again, with its errors
    assert "Unknown graph &#x27;expense&#x27;. Registered graphs: " in _text(response)
    assert not RetentionPolicy.objects.exists()
    assert not AuditEvent.objects.filter(action="retention_change").exists()


def test_an_empty_retention_policy_says_what_it_needs(staff):
    add = reverse("admin:durable_retentionpolicy_add")

    response = staff.post(add, {**POLICY, "tenant": Tenant.default().pk, "max_age": ""})

    page = _text(response)
    assert response.status_code == 200
    assert (
        "A policy needs a maximum age (max_age) or a number of checkpoints to keep "
        "(keep_last): set one of them, or both."
    ) in page
    assert "retention_has_a_limit" not in page
    assert not RetentionPolicy.objects.exists()


def test_a_policy_whose_graph_is_gone_can_still_be_disabled(staff):
    policy = RetentionPolicy.objects.create(
        tenant=Tenant.default(), graph="retired_graph", keep_last=3
    )
    change = reverse("admin:durable_retentionpolicy_change", args=[policy.pk])

    response = staff.post(
        change,
        {"tenant": policy.tenant.pk, "graph": "retired_graph", "keep_last": "3"}
        | {"strategy": "keep_latest"},
    )

    assert response.status_code == 302
    policy.refresh_from_db()
    assert not policy.enabled
