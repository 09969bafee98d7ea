"""The diagnosis through the console: the line at the top of the thread page with its
next action, and the threads list filtered by diagnosis (``?diagnosis=<kind>``). Runs are
executed in this process, as a worker executes them."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from durable import engine
from durable.engine import execution
from durable.models import Run, Thread
from tests.helpers.threads import INPUTS, head
from tests.helpers.users import member

pytestmark = pytest.mark.django_db(transaction=True)


def executed(run: Run) -> Thread:
    execution.execute(run.pk, worker="here@test")
    return Thread.objects.get(pk=run.thread_pk)


def failed_thread(tmp_path) -> Thread:
    return executed(engine.start("counted", {"dir": str(tmp_path), "fail": "left", "log": []}))


def line(response) -> str:
    """The diagnosis line of a thread page, as text."""
    html = response.content.decode()
    found = re.search(r'<p class="diagnosis[^"]*"[^>]*>(.*?)</p>', html, re.S)
    assert found, html[:3000]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1))).strip()


def action_href(response) -> str | None:
    html = response.content.decode()
    found = re.search(r'data-testid="diagnosis-action"', html)
    if not found:
        return None
    return re.search(r'<a class="diagnosis-action" href="([^"]+)"', html).group(1)


def listed(client, query: str) -> list[str]:
    response = client.get(reverse("threads") + query)
    assert response.status_code == 200, response.content.decode()[:2000]
    return re.findall(r'<tr data-thread-id="([^"]+)">', response.content.decode())


def test_a_failed_thread_says_where_and_links_its_retry_to_a_replay(client, tmp_path):
    thread = failed_thread(tmp_path)
    run = thread.runs.get()
    response = client.get(reverse("thread", args=[thread.pk]))
    assert response.status_code == 200
    assert line(response) == (
        f"Failed run {run.pk} in node left (ValueError: left was told to fail), "
        "attempt 1. Retry from the failed step"
    )
    assert action_href(response) == reverse("replay", args=[thread.pk, head(thread)])
    # The link is the console's replay page, which warns and asks for a reason.
    replay = client.get(action_href(response))
    assert replay.status_code == 200
    assert "reason" in replay.content.decode()


def test_a_waiting_thread_links_to_its_answer_but_not_for_a_viewer(client, tmp_path):
    thread = executed(engine.start("expense_approval", INPUTS["expense_approval"]))
    response = client.get(reverse("thread", args=[thread.pk]))
    assert line(response).endswith(", 1 interrupt in request_approval. Answer")
    assert action_href(response) == reverse("inbox-thread", args=[thread.pk])

    viewer = Client()
    viewer.force_login(member("viewer", role="viewer"))
    seen = viewer.get(reverse("thread", args=[thread.pk]))
    assert line(seen).startswith("Waiting for a person since ")
    assert action_href(seen) is None


def test_a_thread_forked_without_a_run_says_what_runs_next_not_a_breakpoint(client):
    thread = executed(engine.start("expense_approval", INPUTS["expense_approval"]))
    # "Only add the checkpoint": as validate, whose router sends the claim on to
    # request_approval; the thread stays interrupted (next tasks), with nothing pending.
    response = client.post(
        reverse("fork", args=[thread.pk, head(thread)]),
        {"as_node": "validate", "state-amount": "50", "reason": "corrected"},
    )
    assert response.status_code == 303
    forked = engine.thread_state(thread)
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.INTERRUPTED
    # The interrupt came days before the fork.
    long_ago = timezone.now() - timedelta(days=3)
    thread.runs.update(ended_at=long_ago)

    response = client.get(reverse("thread", args=[thread.pk]))

    said = line(response)
    assert "breakpoint" not in said
    assert "interrupt in" not in said
    assert said.startswith("Waiting for a person since ")
    # Since the fork's checkpoint, not the run's interrupt before it.
    fork_time = timezone.localtime(datetime.fromisoformat(forked.created_at))
    assert f"since {fork_time:%Y-%m-%d %H:%M:%S}" in said
    assert f"{timezone.localtime(long_ago):%Y-%m-%d}" not in said
    assert said.endswith(
        "to start a run from the checkpoint an update wrote; request_approval would run"
        " next, and no interrupt is pending. Go on from here"
    )
    assert action_href(response) == reverse("replay", args=[thread.pk, head(thread)])
    assert client.get(action_href(response)).status_code == 200


def test_a_thread_at_a_breakpoint_says_so_and_is_not_in_the_inbox(client):
    run = engine.start(
        "expense_approval", INPUTS["expense_approval"], interrupt_before=["request_approval"]
    )
    thread = executed(run)
    assert thread.status == Thread.Status.INTERRUPTED
    assert engine.thread_state(thread).interrupts == ()

    response = client.get(reverse("thread", args=[thread.pk]))
    assert line(response).endswith(", a breakpoint before request_approval. Go on from here")
    assert action_href(response) == reverse("replay", args=[thread.pk, head(thread)])
    # The inbox lists the interrupts to answer: a breakpoint has none.
    inbox = client.get(reverse("inbox")).content.decode()
    assert f'id="entry-{thread.pk}"' not in inbox


def test_a_finished_and_a_never_started_thread(client, tmp_path):
    done = executed(engine.start("counted", {"dir": str(tmp_path), "fail": "", "log": []}))
    response = client.get(reverse("thread", args=[done.pk]))
    assert line(response).startswith("Finished run ")
    assert action_href(response) == reverse("thread-history", args=[done.pk])

    bare = engine.create_thread("counted")
    response = client.get(reverse("thread", args=[bare.pk]))
    assert line(response) == ("Never started no run and no checkpoint yet. Start a run")
    assert action_href(response) == "/api/docs"


def test_the_threads_list_filters_by_diagnosis(client, tmp_path):
    failed = failed_thread(tmp_path)
    waiting = executed(engine.start("expense_approval", INPUTS["expense_approval"]))
    bare = engine.create_thread("counted")
    assert listed(client, "?diagnosis=failed") == [failed.name]
    assert listed(client, "?diagnosis=waiting") == [waiting.name]
    assert listed(client, "?diagnosis=never_started") == [bare.name]
    assert listed(client, "?diagnosis=stalled") == []
    assert sorted(listed(client, "")) == sorted([failed.name, waiting.name, bare.name])
    # With the other filters: the status tabs count within the diagnosis.
    assert listed(client, "?diagnosis=failed&graph=expense_approval") == []
    page = client.get(reverse("threads") + "?diagnosis=failed").content.decode()
    assert 'option value="failed" selected' in page


def test_an_unknown_diagnosis_is_an_error_naming_the_filter(client):
    engine.create_thread("counted")
    response = client.get(reverse("threads") + "?diagnosis=sleeping")
    assert response.status_code == 400
    errors = re.search(r'data-testid="filter-errors">(.*?)</div>', response.content.decode(), re.S)
    assert "Diagnosis" in errors.group(1) and "sleeping" in errors.group(1)


def test_a_thread_of_another_tenant_is_not_listed(client, globex, tmp_path):
    engine.create_thread("counted", tenant=globex)
    assert listed(client, "?diagnosis=never_started") == []


def test_the_filtered_list_costs_the_same_queries_for_more_threads(client):
    """The filter is SQL over the page's rows, not a diagnosis per thread."""

    def queries(query: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(reverse("threads") + query).status_code == 200
        return len(captured)

    engine.create_thread("counted")
    few = queries("?diagnosis=never_started"), queries("?diagnosis=finished")
    for _ in range(5):
        engine.create_thread("counted")
    assert len(listed(client, "?diagnosis=never_started")) == 6
    assert (queries("?diagnosis=never_started"), queries("?diagnosis=finished")) == few
