"""A thread's status after ``POST /threads/{id}/state`` (and a console fork without a
run), as LangGraph's Agent Server sets it: ``error`` if the thread's last run failed,
else ``interrupted`` if the new checkpoint has next tasks, else ``idle``."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from durable import engine
from durable.models import Run, Thread
from tests.helpers.threads import at_interrupt, head

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(api_key):
    def call(path: str, body: dict):
        return Client().post(
            f"/api{path}", body, content_type="application/json", headers={"x-api-key": api_key}
        )

    return call


def status(thread: Thread) -> str:
    return Thread.objects.get(pk=thread.pk).status


def searched(api, wanted: str) -> set[str]:
    response = api("/threads/search", {"status": wanted, "limit": 100})
    assert response.status_code == 200
    return {t["thread_id"] for t in response.json()}


def test_an_update_that_leaves_next_tasks_keeps_the_thread_interrupted(api):
    thread = at_interrupt()

    # As validate: its router sends the corrected claim to request_approval again.
    response = api(
        f"/threads/{thread.name}/state", {"values": {"amount": 50.0}, "as_node": "validate"}
    )

    assert response.status_code == 200
    assert engine.thread_state(thread).next == ("request_approval",)
    assert status(thread) == Thread.Status.INTERRUPTED
    assert thread.name in searched(api, "interrupted")
    assert thread.name not in searched(api, "idle")


def test_an_update_that_leaves_nothing_next_makes_the_thread_idle(api):
    thread = at_interrupt()

    # As request_approval, without its Command's goto: nothing follows.
    response = api(
        f"/threads/{thread.name}/state",
        {"values": {"amount": 50.0}, "as_node": "request_approval"},
    )

    assert response.status_code == 200
    assert engine.thread_state(thread).next == ()
    assert status(thread) == Thread.Status.IDLE
    assert thread.name in searched(api, "idle")


@pytest.mark.parametrize("as_node", ["validate", "request_approval"])
def test_after_a_failed_run_an_update_leaves_the_thread_in_error(api, as_node):
    thread = at_interrupt()
    Run.objects.create(thread=thread, graph=thread.graph, kind="start", status=Run.Status.ERROR)

    response = api(
        f"/threads/{thread.name}/state", {"values": {"amount": 50.0}, "as_node": as_node}
    )

    assert response.status_code == 200
    assert status(thread) == Thread.Status.ERROR
    assert thread.name in searched(api, "error")


def test_a_console_fork_without_a_run_follows_the_same_rule(client):
    thread = at_interrupt()

    response = client.post(
        reverse("fork", args=[thread.pk, head(thread)]),
        {"as_node": "validate", "state-amount": "50", "reason": "corrected"},
    )

    assert response.status_code == 303
    assert engine.thread_state(thread).next == ("request_approval",)
    assert status(thread) == Thread.Status.INTERRUPTED
