"""The console's run page through Django's test client, and what every action page
asks of a request: a thread or run that exists, and the CSRF token.

No worker: threads are run to their interrupt in this process (``at_interrupt``), runs
written as a worker leaves them (``made_run``).
"""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from durable.models import Run, RunEvent
from tests.helpers.threads import at_interrupt, everything, head, made_run

pytestmark = pytest.mark.django_db(transaction=True)

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


def test_the_run_page_words_the_modes_api_clients_asked_for(client):
    run = made_run()
    token = {"type": "AIMessageChunk", "content": "Hello", "id": "m1"}
    for event, data in (
        ("values", {"messages": []}),
        ("messages", [token, {"langgraph_node": "respond"}]),
        ("events", {"event": "on_chain_start", "name": "respond", "data": {}}),
        ("debug", {"type": "checkpoint", "step": 0, "payload": {}}),
        ("checkpoints", {"values": {}, "next": []}),
        ("messages", "not a pair"),
    ):
        RunEvent.objects.append(run.pk, event, data)
    page = client.get(reverse("run", args=[run.pk])).content.decode()
    assert "the whole state after a step" in page
    assert "respond streamed &quot;Hello&quot;" in page
    assert "on_chain_start respond" in page
    assert "debug checkpoint" in page and "checkpoint saved" in page
    assert '<tr data-kind="messages">' in page  # what it cannot word, by its name


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
        (reverse("fork", args=[thread.pk, checkpoint]), {"as_node": "validate", "reason": "x"}),
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
