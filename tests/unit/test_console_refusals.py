"""The console shows what ``durable.engine`` refuses in the engine's own words: closing a
thread that moved on, or one with nothing pending. The download of a checkpoint is shaped
below both surfaces (``durable.snapshots``), so no console module but the URL conf
imports the API, and it names the thread both ways. Threads are run to their interrupt
in this process (``at_interrupt``)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from django.urls import reverse

import dashboard
from durable import engine
from durable.graphs import get_graph
from tests.helpers.threads import EXPENSE, at_interrupt, everything, head

pytestmark = pytest.mark.django_db(transaction=True)


def _close(client, thread, checkpoint_id):
    return client.post(
        reverse("inbox-close", args=[thread.pk]), {"checkpoint_id": checkpoint_id, "reason": "dup"}
    )


def test_closing_from_a_checkpoint_the_thread_has_moved_on_from_is_refused(client):
    thread = at_interrupt()
    seen = head(thread)
    engine.fork(thread, seen, None, as_node="__end__")  # someone else closed it meanwhile
    before = everything()

    response = _close(client, thread, seen)

    assert response.status_code == 400
    assert "Nothing is pending on this thread any more." in response.content.decode()
    with pytest.raises(engine.InvalidRequest) as refused:
        engine.close(thread, seen, reason="dup")
    assert refused.value.field == "checkpoint_id"
    assert f"has moved on since checkpoint {seen!r}" in refused.value.message
    assert everything() == before


def test_closing_a_thread_with_nothing_pending_is_refused_by_the_engine(client):
    thread = at_interrupt()
    engine.fork(thread, head(thread), None, as_node="__end__")
    newest = head(thread)
    before = everything()

    response = _close(client, thread, newest)

    assert response.status_code == 400
    assert "Nothing is pending on this thread any more." in response.content.decode()
    with pytest.raises(engine.InvalidRequest) as refused:
        engine.close(thread, newest, reason="dup")
    assert refused.value.field == "checkpoint_id"
    assert "has no pending interrupt to close" in refused.value.message
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


def test_no_console_module_but_the_projects_wiring_imports_the_api():
    root = Path(dashboard.__file__).parent
    importing = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if any(n == "durable.api" or n.startswith("durable.api.") for n in names):
                importing.append(str(path.relative_to(root)))
    # The project's wiring of both surfaces: the URL conf, and the middleware that answers
    # a database fault in each surface's own terms (the API's JSON 503, its read routes).
    assert sorted(set(importing)) == ["faults.py", "urls.py"]
