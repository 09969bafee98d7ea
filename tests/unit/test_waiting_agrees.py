""" "Waiting for an answer" is one rule wherever it is counted: the inbox, the Operations
page and ``/metrics``' ``durable_interrupts_waiting`` count the interrupted threads with
an interrupt pending at their latest checkpoint. A thread forked without a run is
``interrupted`` too, with nothing for a person to answer: none of the three counts it."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from durable import engine
from durable.models import Thread
from tests.helpers.threads import arrived, head

pytestmark = pytest.mark.django_db(transaction=True)


def metric(name: str, **labels) -> float:
    text = Client().get("/metrics").content.decode()
    [found] = [
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    ]
    return found


def test_the_inbox_the_operations_page_and_the_metrics_count_the_same_threads(client):
    arrived(), arrived()
    forked = arrived()
    engine.fork(forked, head(forked), {"amount": 50}, as_node="validate", run=False)
    engine.create_thread("expense_approval")
    assert Thread.objects.filter(status=Thread.Status.INTERRUPTED).count() == 3
    assert engine.thread_state(forked).interrupts == ()

    inbox = client.get(reverse("inbox")).content.decode()
    operations = client.get(reverse("operations")).content.decode()
    waiting = metric("durable_interrupts_waiting", graph="expense_approval", tenant="default")

    assert re.search(r"(\d+) threads wait for a human", inbox).group(1) == "2"
    summary = re.search(r'data-testid="waiting-summary">(\d+) threads waiting', operations)
    assert summary.group(1) == "2"
    assert waiting == 2
