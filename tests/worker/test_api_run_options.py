"""What a run request asks beyond its input, and commands beyond ``resume``, through the
official ``langgraph-sdk`` client against the live server and a real worker: config
and context reaching the graph, LangGraph's breakpoints, a run with no input, ``goto``
and ``update``, a delayed run, a webhook, and a stream whose client goes away.
(Their refusals, which need no worker: ``tests/server/test_api_refusals.py``.)"""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from django.utils import timezone
from langgraph_sdk import get_sync_client

from durable.models import AuditEvent, Run, Thread
from tests.helpers.graphs import release, runs_of
from tests.helpers.runs import draining
from tests.helpers.threads import made_run
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

TOPIC = {"topic": "invoices"}


@pytest.fixture
def client(web, api_key):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk:
        yield sdk


def _run(thread_id: str) -> Run:
    return Run.objects.filter(thread__name=thread_id).order_by("-pk").first()


@pytest.mark.filterwarnings("ignore:`checkpoint_during` is deprecated")
def test_config_and_context_reach_the_graph_and_a_breakpoint_stops_it(client, worker):
    thread_id = client.threads.create()["thread_id"]
    events = client.runs.stream(
        thread_id,
        "options",
        input=TOPIC,
        stream_mode="values",
        config={
            "configurable": {"x": 7, "thread_id": "theirs", "checkpoint_id": "bogus"},
            "tags": ["t-a"],
            "recursion_limit": 12,
        },
        context={"user": "ada"},
        interrupt_before=["ask"],
        # Accepted as the Agent Server takes them; checkpoint_during false is durability exit.
        stream_resumable=True,
        feedback_keys=["score"],
        checkpoint_during=False,
    )
    out = [e.data for e in events if e.event == "values"][-1]
    # The caller's thread_id and checkpoint_id gave way to the thread's own.
    assert out["log"] == ["x=7", "own_thread=True", "user=ada", "tags=t-a", "limit=12"]
    assert "__interrupt__" not in out
    run = client.runs.list(thread_id)[0]
    assert (run["status"], run["durability"], run["interrupts"]) == ("interrupted", "exit", [])
    thread = client.threads.get(thread_id)
    assert (thread["status"], thread["interrupts"]) == ("interrupted", {})
    state = client.threads.get_state(thread_id)
    assert state["next"] == ["ask"] and state["tasks"][0]["interrupts"] == []

    # A resume on it goes to the next interrupt() that runs (LangGraph's own semantics),
    # beside an empty input as Agent Chat UI sends it.
    out = client.runs.wait(thread_id, "options", input={}, command={"resume": "yes"})
    assert out["log"][-2:] == ["answer=yes", "finish"]
    assert client.runs.list(thread_id)[0]["status"] == "success"
    assert client.threads.get_state(thread_id)["next"] == []


def test_a_run_with_no_input_goes_on_and_a_command_goes_to_and_updates(client, worker):
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "options", input=TOPIC, interrupt_after=["read"])
    assert client.threads.get_state(thread_id)["next"] == ["ask"]

    # No input: the graph goes on from its next task, which now interrupts.
    out = client.runs.wait(thread_id, "options")
    assert out["__interrupt__"][0]["value"] == {"question": "go on?"}
    assert "user=None" in out["log"]  # no context given: none

    out = client.runs.wait(
        thread_id,
        "options",
        input={},
        command={
            "resume": "ok",
            "update": {"topic": "updated"},
            "goto": [{"node": "pick", "input": {"topic": "sent"}}, "pick"],
        },
    )
    assert out["topic"] == "updated"
    assert {"answer=ok", "pick=sent", "pick=updated", "finish"} <= set(out["log"])
    recorded = AuditEvent.objects.filter(action="resume", run_id=_run(thread_id).pk).get()
    assert recorded.detail["update"] == {"topic": "updated"}
    assert recorded.detail["goto"][0] == {"node": "pick", "input": {"topic": "sent"}}
    assert recorded.detail["answers"][0]["value"] == "ok"

    # Nothing pending and nothing next: a resume would run nothing.
    with pytest.raises(httpx.HTTPStatusError) as refused:
        client.runs.wait(thread_id, "options", command={"resume": "again"})
    error = refused.value.response.json()
    assert error["field"] == "command.resume" and "no pending interrupt" in error["detail"]


def test_a_delayed_run_starts_no_earlier_than_asked(client, worker):
    thread_id = client.threads.create()["thread_id"]
    created = client.runs.create(thread_id, "options", input=TOPIC, after_seconds=1.5)
    row = Run.objects.get(pk=created["run_id"])
    assert created["status"] == "pending" and row.not_before > row.created_at
    client.runs.join(thread_id, created["run_id"])
    row.refresh_from_db()
    assert row.status == "interrupted" and row.started_at >= row.not_before


def test_if_not_exists_creates_the_thread(client, worker):
    out = client.runs.wait("made-by-run", "options", input=TOPIC, if_not_exists="create")
    assert out["topic"] == "invoices"
    assert Thread.objects.get(name="made-by-run").graph == "options"


class _Receiver(BaseHTTPRequestHandler):
    """Records each POST; answers the first with 500, to be tried again."""

    received: list[dict] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.received.append(body)
        self.send_response(500 if len(self.received) == 1 else 204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    _Receiver.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_webhook_gets_the_runs_outcome_and_is_tried_again(client, worker, receiver):
    thread_id = client.threads.create()["thread_id"]
    url = f"http://127.0.0.1:{receiver.server_port}/hook"
    run = client.runs.create(thread_id, "options", input=TOPIC, webhook=url)
    wait_for(lambda: len(_Receiver.received) == 2, message="the webhook, twice")
    first, again = _Receiver.received
    assert first["run_id"] == again["run_id"] == run["run_id"]
    assert again["thread_id"] == thread_id and again["assistant_id"] == "options"
    assert again["status"] == "interrupted"
    assert again["values"]["topic"] == "invoices"
    assert again["run_started_at"] and again["run_ended_at"] and again["webhook_sent_at"]
    # A webhook that failed once changes nothing about the run.
    assert client.runs.get(thread_id, run["run_id"])["status"] == "interrupted"


def test_a_pending_run_cancelled_before_any_worker_took_it_posts_its_webhook(
    client, worker, receiver
):
    thread_id = client.threads.create()["thread_id"]
    url = f"http://127.0.0.1:{receiver.server_port}/hook"
    # Delayed: no worker takes it before the cancel.
    run = client.runs.create(thread_id, "options", input=TOPIC, webhook=url, after_seconds=600)
    client.runs.cancel(thread_id, run["run_id"])

    # Sent by a task of its own, tried again after the receiver's first 500.
    wait_for(lambda: len(_Receiver.received) == 2, message="the webhook, twice")
    assert [r["status"] for r in _Receiver.received] == ["cancelled", "cancelled"]
    assert _Receiver.received[1]["run_id"] == run["run_id"]
    assert _run(thread_id).started_at is None  # no worker ran it


def test_a_run_the_reaper_ends_posts_its_webhook(worker, receiver):
    url = f"http://127.0.0.1:{receiver.server_port}/hook"
    now = timezone.now()
    # A run whose worker died after it was asked to cancel: the reaper ends it.
    run = made_run(
        worker="gone@nowhere",
        started_at=now - timedelta(minutes=1),
        lease_expires_at=now - timedelta(seconds=30),
        stop_requested=Run.Stop.CANCEL,
        webhook=url,
    )

    wait_for(lambda: len(_Receiver.received) == 2, message="the webhook, twice")
    assert _Receiver.received[1]["status"] == "cancelled"
    assert _Receiver.received[1]["run_id"] == str(run.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.CANCELLED


def probe_input(directory) -> dict:
    return {"dir": str(directory), "log": []}


def test_a_client_that_goes_away_cancels_the_run_when_asked(client, worker, web, api_key, tmp_path):
    thread_id = client.threads.create()["thread_id"]
    live = client.runs.stream(
        thread_id, "probe", input=probe_input(tmp_path), on_disconnect="cancel"
    )
    assert next(live).event == "metadata"
    wait_for(lambda: runs_of(tmp_path, "slow") == 1, message="the probe's slow node")
    live.close()  # the client goes away
    run = _run(thread_id)
    draining(run, "cancel")
    release(tmp_path)
    wait_for(lambda: Run.objects.get(pk=run.pk).status == "cancelled", message="cancelled")
    assert runs_of(tmp_path, "after") == 0

    # Joined with cancel_on_disconnect, the same.
    (tmp_path / "2").mkdir()
    second = client.runs.create(thread_id, "probe", input=probe_input(tmp_path / "2"))
    joined = client.runs.join_stream(thread_id, second["run_id"], cancel_on_disconnect=True)
    assert next(joined).event == "metadata"
    wait_for(lambda: runs_of(tmp_path / "2", "slow") == 1, message="the second slow node")
    joined.close()
    draining(Run.objects.get(pk=second["run_id"]), "cancel")
    release(tmp_path / "2")
    wait_for(lambda: Run.objects.get(pk=second["run_id"]).status == "cancelled")

    # Waited for, the same: the client gives up before the run ends.
    (tmp_path / "3").mkdir()
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{web.url}/api/threads/{thread_id}/runs/wait",
            json={
                "assistant_id": "probe",
                "input": probe_input(tmp_path / "3"),
                "on_disconnect": "cancel",
            },
            headers={"x-api-key": api_key},
            timeout=httpx.Timeout(10, read=1),
        )
    third = _run(thread_id)
    draining(third, "cancel")
    release(tmp_path / "3")
    wait_for(lambda: Run.objects.get(pk=third.pk).status == "cancelled")


def test_a_run_answers_the_kwargs_it_was_asked_with(client):
    """The Agent Server's Run carries ``kwargs``: what the run was asked to do with."""
    thread_id = client.threads.create()["thread_id"]
    made = client.runs.create(
        thread_id,
        "chat",
        input={"messages": [{"type": "human", "content": "hi"}]},
        config={"tags": ["billing"]},
        interrupt_before=["respond"],
    )

    kwargs = client.runs.get(thread_id, made["run_id"])["kwargs"]

    assert kwargs["input"] == {"messages": [{"type": "human", "content": "hi"}]}
    assert kwargs["config"]["tags"] == ["billing"]
    assert kwargs["interrupt_before"] == ["respond"]
    assert kwargs["command"] is None
    assert made["kwargs"] == kwargs
    assert client.runs.list(thread_id)[0]["kwargs"] == kwargs
