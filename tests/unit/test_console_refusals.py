"""The console shows what ``durable.engine`` refuses in the engine's own words: closing a
thread that moved on, or one with nothing pending, and answering nothing; and the
download of a checkpoint names the thread both ways. Threads are run to their interrupt
in this process (``at_interrupt``)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from durable import engine
from durable.graphs import get_graph
from tests.helpers.threads import EXPENSE, at_interrupt, everything, head

pytestmark = pytest.mark.django_db(transaction=True)


def test_closing_from_a_checkpoint_the_thread_has_moved_on_from_is_refused(client):
    thread = at_interrupt()
    seen = head(thread)
    engine.fork(thread, seen, None, as_node="__end__")  # someone else closed it meanwhile
    before = everything()

    response = client.post(
        reverse("inbox-close", args=[thread.pk]), {"checkpoint_id": seen, "reason": "dup"}
    )

    assert response.status_code == 400
    assert f"has moved on since checkpoint {seen!r}" in response.content.decode()
    assert everything() == before


def test_closing_a_thread_with_nothing_pending_is_refused_by_the_engine(client):
    thread = at_interrupt()
    engine.fork(thread, head(thread), None, as_node="__end__")
    newest = head(thread)
    before = everything()

    response = client.post(
        reverse("inbox-close", args=[thread.pk]), {"checkpoint_id": newest, "reason": "dup"}
    )

    assert response.status_code == 400
    assert "has no pending interrupt to close" in response.content.decode()
    assert everything() == before
    with pytest.raises(engine.InvalidRequest) as refused:
        engine.close(thread, newest, reason="dup")
    assert refused.value.field == "checkpoint_id"
    assert everything() == before


def test_the_checkpoint_download_names_the_thread_by_its_id_and_its_name(client):
    thread = engine.create_thread("expense_approval", name="claim-7")
    get_graph("expense_approval").invoke(EXPENSE, engine.config_for(thread))
    checkpoint_id = head(thread)

    download = json.loads(
        client.get(reverse("checkpoint-json", args=[thread.pk, checkpoint_id])).content
    )

    assert (download["thread_id"], download["name"]) == (thread.thread_id, "claim-7")
    assert download["checkpoint_id"] == checkpoint_id
    assert list(download) == [
        "thread_id",
        "name",
        "checkpoint_ns",
        "checkpoint_id",
        "values",
        "next",
        "tasks",
        "pending_writes",
        "metadata",
        "config",
        "parent_config",
    ]
