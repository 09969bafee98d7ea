"""A thread's stream (``GET /threads/{id}/stream``) resumed after a given event, and the
thread's id in what every stream sends: the id the client knows, never LangGraph's
internal one, through the official ``langgraph-sdk`` against the live server and a real
worker."""

from __future__ import annotations

import uuid

import httpx
import pytest
from langgraph_sdk import get_sync_client

from durable.models import Thread
from examples.chat import reply_to

pytestmark = pytest.mark.django_db(transaction=True)

HI = {"messages": [{"type": "human", "content": "hi"}]}


@pytest.fixture
def client(web, api_key):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk:
        yield sdk


def _until_done(parts, runs: int) -> list:
    """The parts of a thread's stream up to the ``run_done`` of its ``runs``-th run."""
    seen = []
    for part in parts:
        seen.append(part)
        if sum(map(_done, seen)) == runs:
            break
    parts.close()  # the stream stays open for the next run until its client leaves
    return seen


def _done(part) -> bool:
    return part.event == "metadata" and part.data.get("status") == "run_done"


def _thread_ids(value) -> set:
    """Every ``thread_id`` value anywhere in ``value``."""
    found = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "thread_id":
                found.add(item)
            found |= _thread_ids(item)
    elif isinstance(value, list):
        for item in value:
            found |= _thread_ids(item)
    return found


def test_a_threads_stream_resumes_after_the_event_it_names(client, worker):
    thread_id = client.threads.create()["thread_id"]
    first = client.runs.wait(thread_id, "chat", input=HI)
    assert first["messages"][-1]["content"] == reply_to("hi")
    client.runs.wait(thread_id, "chat", input={"messages": [{"type": "human", "content": "yo"}]})
    for run in client.runs.list(thread_id):
        assert run["status"] == "success"
    everything = _until_done(client.threads.join_stream(thread_id, last_event_id="-"), 2)
    # Every event has an id, in the Agent Server's shape, in the order they came.
    ids = [p.id for p in everything]
    assert all(i and i.count("-") == 1 for i in ids)
    keys = [tuple(map(int, i.split("-"))) for i in ids]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert [p.event for p in everything].count("values") == 4  # each run's, as recorded

    # From any event on: exactly what came after it, the next run's events included.
    for cut in (0, 3, len(everything) // 2, len(everything) - 3):
        rest = client.threads.join_stream(thread_id, last_event_id=everything[cut].id)
        after = _until_done(rest, sum(map(_done, everything[cut + 1 :])))
        assert [(p.id, p.event, p.data) for p in after] == [
            (p.id, p.event, p.data) for p in everything[cut + 1 :]
        ]

    # After the last run's run_done, nothing until a next run: that run, whole.
    rest = client.threads.join_stream(thread_id, last_event_id=everything[-1].id)
    run = client.runs.create(thread_id, "chat", input=HI)
    third = _until_done(rest, 1)
    assert third[0].event == "metadata" and third[0].data["run_id"] == run["run_id"]
    assert third[-1].data == {"run_id": run["run_id"], "status": "run_done"}


def test_a_threads_stream_refuses_an_event_id_of_another_shape(client, web, api_key):
    thread_id = client.threads.create()["thread_id"]
    answer = httpx.get(
        f"{web.url}/api/threads/{thread_id}/stream",
        headers={"x-api-key": api_key, "Last-Event-ID": "seven"},
    )
    assert answer.status_code == 422
    assert "Last-Event-ID" in answer.text
    # A long one is said back cut, never whole.
    answer = httpx.get(
        f"{web.url}/api/threads/{thread_id}/stream",
        headers={"x-api-key": api_key, "Last-Event-ID": "x" * 4000},
    )
    assert answer.status_code == 422 and "Last-Event-ID" in answer.text
    assert "x" * 41 not in answer.text and "(4000 characters)" in answer.text


@pytest.mark.parametrize("named", ["none", "another thread's"])
def test_an_event_id_of_no_run_of_the_thread_streams_its_next_runs(client, worker, named):
    other = client.threads.create()["thread_id"]
    other_run = client.runs.wait(other, "chat", input=HI)
    thread_id = client.threads.create()["thread_id"]
    event_id = "999999-0" if named == "none" else f"{client.runs.list(other)[0]['run_id']}-0"
    assert other_run

    rest = client.threads.join_stream(thread_id, last_event_id=event_id)
    run = client.runs.create(thread_id, "chat", input=HI)

    streamed = _until_done(rest, 1)
    assert streamed[0].event == "metadata" and streamed[0].data["run_id"] == run["run_id"]
    assert streamed[-1].data == {"run_id": run["run_id"], "status": "run_done"}


def test_every_stream_names_the_thread_by_the_id_its_client_knows(client, worker):
    # A thread the client names: LangGraph's id for it is a UUID of ours.
    thread_id = client.threads.create(thread_id=f"chat-with-ada-{uuid.uuid4().hex[:8]}")[
        "thread_id"
    ]
    internal = Thread.objects.get(name=thread_id).thread_id
    assert internal != thread_id  # else this test could not fail
    modes = ["messages-tuple", "debug", "checkpoints", "events", "values"]
    parts = list(client.runs.stream(thread_id, "chat", input=HI, stream_mode=modes))
    for mode in ("messages", "debug", "checkpoints", "events"):
        named = set().union(*(_thread_ids(p.data) for p in parts if p.event == mode))
        assert named == {thread_id}, mode
    [_meta, *tokens] = [p for p in parts if p.event in ("metadata", "messages")]
    assert {meta["thread_id"] for _, meta in (t.data for t in tokens)} == {thread_id}
    # The same in a join and in the thread's own stream.
    run_id = parts[0].data["run_id"]
    joined = list(client.runs.join_stream(thread_id, run_id, stream_mode="messages"))
    gathered = [p.data for p in joined if p.event == "messages/metadata"]
    assert gathered and _thread_ids(gathered) == {thread_id}
    streamed = _until_done(client.threads.join_stream(thread_id, last_event_id="-"), 1)
    assert _thread_ids([p.data for p in streamed]) == {thread_id}
    assert internal not in str([p.data for p in parts + joined + streamed])
