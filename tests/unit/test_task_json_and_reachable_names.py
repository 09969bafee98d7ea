"""The API and the console shape a checkpoint's tasks with one function
(``durable.snapshots.task_json``), so the console's JSON download and the API's
``ThreadState`` say the same of a failed task; and a thread name no URL can reach is
refused with one message, whether a thread or a run would create it."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse
from langgraph.types import Command

from durable import engine
from durable.graphs import get_graph
from durable.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)

CLAIM = {"employee": "Grace Hopper", "amount": 42.5, "description": "Compiler manual"}


def failed_thread() -> Thread:
    """An expense_approval thread whose approval node failed: request_approval reads
    ``decisions[0]``, and the answer has none."""
    thread = engine.create_thread("expense_approval", name="failed")
    graph = get_graph("expense_approval")
    graph.invoke(CLAIM, engine.config_for(thread))
    with pytest.raises(IndexError):
        graph.invoke(Command(resume={"decisions": []}), engine.config_for(thread))
    return thread


def test_the_console_and_the_api_shape_a_failed_task_alike(client, api_key):
    thread = failed_thread()
    state = Client().get("/api/threads/failed/state", headers={"x-api-key": api_key}).json()
    checkpoint_id = state["checkpoint"]["checkpoint_id"]
    url = reverse("checkpoint-json", args=[thread.pk, checkpoint_id])
    download = json.loads(client.get(url).content)

    assert (download["thread_id"], download["name"]) == (thread.thread_id, "failed")
    (api_task,) = state["tasks"]
    (console_task,) = download["tasks"]
    assert api_task["name"] == "request_approval"
    assert api_task["error"] == "IndexError('list index out of range')"
    assert console_task == {k: v for k, v in api_task.items() if k not in ("checkpoint", "state")}


def test_a_name_no_url_can_reach_is_refused_alike_for_threads_and_runs(api_key):
    api = Client(headers={"x-api-key": api_key})
    run = {"assistant_id": "expense_approval", "input": CLAIM, "if_not_exists": "create"}
    by_thread = api.post("/api/threads", {"thread_id": "search"}, content_type="application/json")
    by_run = api.post("/api/threads/search/runs", run, content_type="application/json")
    assert by_thread.status_code == by_run.status_code == 422
    assert by_thread.json() == by_run.json()
    assert by_run.json()["field"] == "thread_id"
    assert not Thread.objects.filter(name="search").exists()
