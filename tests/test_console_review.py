"""Smaller findings of a review of the console against its specification (issue 5)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from durable import runs
from durable.graphs import get_graph
from durable.models import Run, Thread
from tests.test_worker import EXPENSE

pytestmark = pytest.mark.django_db(transaction=True)


def interrupted() -> Thread:
    thread = runs.create_thread("expense_approval")
    get_graph("expense_approval").invoke(EXPENSE, runs.config_for(thread))
    Thread.objects.filter(pk=thread.pk).update(status=Thread.Status.INTERRUPTED)
    Run.objects.create(thread=thread, graph=thread.graph, kind="start", status="interrupted")
    thread.refresh_from_db()
    return thread


def test_statuses_are_said_in_text_and_icon_on_the_list_and_the_thread(client):
    thread = interrupted()
    icon = '<span aria-hidden="true">⏸</span>'

    listing = client.get(reverse("threads")).content.decode()
    row = re.search(rf'<tr data-thread-id="{thread.thread_id}">.*?</tr>', listing, re.S).group(0)
    assert f'<span class="status status-interrupted">{icon} interrupted</span>' in row

    page = client.get(reverse("thread", args=[thread.pk])).content.decode()
    assert f'{icon} <span data-testid="thread-status">interrupted</span>' in page
    runs_table = re.search(r'<h2 id="runs-h">Runs</h2>.*?</table>', page, re.S).group(0)
    assert f'<span class="status status-interrupted">{icon} interrupted</span>' in runs_table


def test_a_long_node_name_is_cut_inside_its_box_and_whole_in_its_title(client):
    thread = runs.create_thread("fault_tolerance")
    page = client.get(reverse("thread-graph", args=[thread.pk])).content.decode()
    box = re.search(
        r'<g class="box" data-node="__error_handler__quote_shipping">.*?</g>', page, re.S
    )
    assert "<title>__error_handler__quote_shipping</title>" in box.group(0)
    text = re.search(r"<text [^>]*>(.*?)</text>", box.group(0)).group(1)
    assert text == "__error_handler_…"
    assert "<li><code>__error_handler__quote_shipping</code></li>" in page
