"""The admin's checkpoint, blob and write pages show the tenant's name for each row's
thread beside LangGraph's id, read for the whole page in one query."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from durable import engine
from durable.graphs import get_graph
from durable.models import Checkpoint, CheckpointBlob, CheckpointWrite, Thread
from tests.helpers.threads import INPUTS

pytestmark = pytest.mark.django_db(transaction=True)

TABLES = [Checkpoint, CheckpointBlob, CheckpointWrite]


@pytest.fixture
def staff(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


def named(name: str) -> Thread:
    """An expense_approval thread the tenant calls ``name``, run here up to its
    interrupt (its checkpoints, blobs and writes filed under its UUID)."""
    thread = engine.create_thread("expense_approval", name=name)
    get_graph("expense_approval").invoke(INPUTS["expense_approval"], engine.config_for(thread))
    assert thread.thread_id != name
    return thread


def changelist(model) -> str:
    return reverse(f"admin:durable_{model._meta.model_name}_changelist")


def page_queries(client: Client, model) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(changelist(model))
    assert response.status_code == 200
    return response.content.decode(), len(queries)


@pytest.mark.parametrize("model", TABLES, ids=lambda m: m.__name__)
def test_each_row_shows_its_threads_name_with_one_query_a_page(staff, model):
    first = named("order-1")
    page, alone = page_queries(staff, model)
    assert first.thread_id in page and "order-1" in page

    others = [named("order-2"), named("order-3")]
    page, together = page_queries(staff, model)
    assert all(t.thread_id in page and t.name in page for t in [first, *others])
    assert together == alone


@pytest.mark.parametrize("model", TABLES, ids=lambda m: m.__name__)
def test_a_rows_own_page_shows_its_threads_name(staff, model):
    thread = named("order-9")
    row = model.objects.filter(thread_id=thread.thread_id).first()
    url = reverse(f"admin:durable_{model._meta.model_name}_change", args=[row.pk])
    page = staff.get(url).content.decode()
    assert thread.thread_id in page and "order-9" in page


def test_a_row_whose_thread_is_gone_is_listed_without_a_name(staff):
    thread = named("order-5")
    Thread.objects.filter(pk=thread.pk).delete()  # the saver's rows stay behind
    page, _ = page_queries(staff, Checkpoint)
    assert thread.thread_id in page and "order-5" not in page
