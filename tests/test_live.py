"""Live progress: a run's events as server-sent events from the console served by
uvicorn (``web``), while a real worker runs the graph."""

from __future__ import annotations

import json

import httpx
import pytest

from durable import runs
from durable.models import Run, RunEvent
from tests.test_worker import EXPENSE, finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def read_sse(response: httpx.Response) -> list[dict]:
    """The events of an SSE response, each ``{"id", "event", "data"}``."""
    found, current = [], {}
    for line in response.iter_lines():
        if not line:
            if current:
                found.append(current)
            current = {}
        elif line.startswith(":"):
            continue
        else:
            key, _, value = line.partition(": ")
            current[key] = json.loads(value) if key == "data" else value
    return found


def events_of(web, run: Run, **headers) -> list[dict]:
    url = f"{web.url}/runs/{run.pk}/events/"
    with httpx.stream("GET", url, headers=headers, timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        return read_sse(response)


def test_a_runs_events_stream_with_their_seq_and_end_with_its_status(web, worker):
    run = finished(runs.start("expense_approval", EXPENSE))
    sent = events_of(web, run)

    recorded = list(RunEvent.objects.filter(run=run).order_by("seq"))
    assert [e["id"] for e in sent[:-1]] == [str(e.seq) for e in recorded]
    assert [e["event"] for e in sent[:-1]] == [e.event for e in recorded]
    assert sent[0]["data"]["data"]["status"] == "pending"
    updates = [e["data"]["data"] for e in sent if e["event"] == "updates"]
    assert updates[0] == {"validate": {"problems": [], "status": "validated"}}
    assert sent[-1] == {"event": "end", "data": {"status": "interrupted"}}


def test_a_reconnecting_client_gets_only_what_it_missed(web, worker):
    run = finished(runs.start("expense_approval", EXPENSE))
    everything = events_of(web, run)
    resumed = events_of(web, run, **{"Last-Event-ID": everything[2]["id"]})
    assert resumed == everything[3:]
    assert events_of(web, run, **{"Last-Event-ID": everything[-2]["id"]}) == everything[-1:]


def test_refused_stream_requests(web):
    assert httpx.get(f"{web.url}/runs/999999/events/").status_code == 404
    bad = httpx.get(f"{web.url}/runs/1/events/", headers={"Last-Event-ID": "x"})
    assert bad.status_code == 400
    assert "Last-Event-ID must be an event id" in bad.text
