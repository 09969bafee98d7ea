"""A real worker runs a graph whose state holds secrets, streamed through the official
``langgraph-sdk`` client: no event of any stream mode carries one, nor any answer a
viewer's token reads afterwards, nor the worker's log; the stored state keeps them."""

from __future__ import annotations

import json

import pytest
from langgraph_sdk import get_sync_client

from durable import engine
from durable.models import Role, Tenant, Thread
from durable.redaction import MASK
from durable.tenancy import create_token
from tests.helpers.redaction_graphs import CARD, MARKER
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

MODES = ["values", "updates", "messages-tuple", "messages", "custom", "tasks", "debug"]
MODES += ["checkpoints", "events"]


def _text(parts) -> str:
    return json.dumps([(p.event, p.data) for p in parts], default=str)


def test_no_stream_answer_or_log_line_carries_a_secret(web, worker, api_key):
    viewer_key = create_token(Tenant.default(), "viewer", role=Role.VIEWER)[1]
    with (
        get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk,
        get_sync_client(url=f"{web.url}/api", api_key=viewer_key) as viewer,
    ):
        thread_id = sdk.threads.create()["thread_id"]
        created = []
        parts = list(
            sdk.runs.stream(
                thread_id,
                "redaction",
                input={"customer": "ada"},
                stream_mode=MODES,
                on_run_created=created.append,
            )
        )
        events = {p.event for p in parts}
        assert {"values", "updates", "messages", "debug", "checkpoints", "events"} <= events
        assert MARKER not in _text(parts)
        [*_, last] = [p.data for p in parts if p.event == "values"]
        assert last["payment"] == {"card_number": MASK, "amount": 42}
        assert last["messages"][0]["additional_kwargs"]["api_key"] == MASK

        # The answer carries a secret of its own: it is masked too, once stored.
        answer = {"approved": True, "password": f"pw-{MARKER}"}
        resumed = list(
            sdk.runs.stream(thread_id, "redaction", command={"resume": answer}, stream_mode=MODES)
        )
        assert MARKER not in _text(resumed)

        run_id = created[0]["run_id"]
        read = {
            "state": viewer.threads.get_state(thread_id),
            "history": viewer.threads.get_history(thread_id, limit=20),
            "thread": viewer.threads.get(thread_id),
            "search": viewer.threads.search(limit=20),
            "runs": viewer.runs.list(thread_id),
            "join": list(viewer.runs.join_stream(thread_id, run_id, stream_mode=MODES)),
        }
        for what, answered in read.items():
            assert MARKER not in json.dumps(answered, default=str), what
        assert read["state"]["values"]["answer"]["password"] == MASK

    thread = Thread.objects.get(name=thread_id)
    stored = engine.thread_state(thread).values
    assert stored["payment"]["card_number"] == CARD
    assert stored["answer"] == answer

    # The node logged what it wrote: the line is in the log of the process that ran it (the
    # web process, for a run a request waited on, or a worker), masked.
    wait_for(lambda: "collect wrote" in worker.log() + web.log(), message="the node's log line")
    log = worker.log() + web.log()
    line = next(line for line in log.splitlines() if "collect wrote" in line)
    assert MASK in line
    assert MARKER not in log
