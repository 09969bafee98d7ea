"""Stream modes through the official ``langgraph-sdk`` client, against the live server
with a real worker: the whole state after every super-step (``values``), a chat model's
tokens (``messages-tuple``, ``messages``), ``events``, ``debug`` and ``checkpoints``,
joins and reconnects that replay what the run recorded, and runs that pay nothing for
the modes they were not asked for. The graph is ``examples/chat.py`` (a fake chat model
that streams its reply word by word, with no network)."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk import get_sync_client

from durable.models import Run, RunEvent
from examples.chat import reply_to
from tests.helpers.threads import EXPENSE

pytestmark = pytest.mark.django_db(transaction=True)

HI = {"messages": [{"type": "human", "content": "hi"}]}


@pytest.fixture
def client(web, api_key):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk:
        yield sdk


def recorded(run_id: str) -> set[str]:
    return set(RunEvent.objects.filter(run_id=run_id).values_list("event", flat=True))


def test_a_chat_turn_as_agent_chat_ui_streams_it(client, worker):
    thread_id = client.threads.create()["thread_id"]
    created = []
    # What Agent Chat UI's submit sends (on_disconnect aside).
    parts = list(
        client.runs.stream(
            thread_id,
            "chat",
            input=HI,
            stream_mode=["values", "messages-tuple", "custom"],
            stream_subgraphs=True,
            stream_resumable=True,
            on_run_created=created.append,
        )
    )
    run_id = created[0]["run_id"]
    assert parts[0].event == "metadata" and parts[0].data["run_id"] == run_id
    assert {p.event for p in parts} == {"metadata", "values", "messages"}

    # The whole state after each super-step: the input, then with the reply.
    values = [p.data for p in parts if p.event == "values"]
    assert len(values) == 2
    [human] = values[0]["messages"]
    assert (human["type"], human["content"]) == ("human", "hi") and human["id"]
    [again, ai] = values[1]["messages"]
    assert again == human
    assert (ai["type"], ai["content"]) == ("ai", reply_to("hi"))

    # The model's tokens, as they came, with where they came from.
    tokens = [p.data for p in parts if p.event == "messages"]
    assert len(tokens) > 5
    assert "".join(chunk["content"] for chunk, _ in tokens) == reply_to("hi")
    assert {chunk["type"] for chunk, _ in tokens} == {"AIMessageChunk"}
    assert {chunk["id"] for chunk, _ in tokens} == {ai["id"]}
    assert {meta["langgraph_node"] for _, meta in tokens} == {"respond"}
    assert Run.objects.get(pk=run_id).stream_modes == ["values", "messages-tuple", "custom"]

    # A join replays the modes the run was created with; a reconnect goes on after the
    # event it names; "-1" (the JS SDK's, after a reload) replays from the start.
    joined = list(client.runs.join_stream(thread_id, run_id))
    assert [(p.event, p.data) for p in joined] == [(p.event, p.data) for p in parts]
    middle = next(i for i, p in enumerate(parts) if p.event == "messages") + 3
    rest = list(client.runs.join_stream(thread_id, run_id, last_event_id=parts[middle].id))
    assert [(p.event, p.data) for p in rest] == [(p.event, p.data) for p in parts[middle + 1 :]]
    replayed = list(client.runs.join_stream(thread_id, run_id, last_event_id="-1"))
    assert [p.event for p in replayed] == [p.event for p in parts]

    # The same tokens in the Agent Server's ``messages`` mode: the message so far.
    gathered = list(client.runs.join_stream(thread_id, run_id, stream_mode="messages"))
    kinds = [p.event for p in gathered]
    assert kinds[:3] == ["metadata", "messages/metadata", "messages/partial"]
    assert set(kinds[3:]) == {"messages/partial"}
    assert gathered[1].data[ai["id"]]["metadata"]["langgraph_node"] == "respond"
    [first], [last] = gathered[2].data, gathered[-1].data
    assert first["content"] == tokens[0][0]["content"]
    assert (last["id"], last["type"], last["content"]) == (ai["id"], "ai", reply_to("hi"))
    # A reconnect gets the message so far, its chunks before the cut added up.
    cut = gathered[4]
    resumed = client.runs.join_stream(
        thread_id, run_id, stream_mode="messages", last_event_id=cut.id
    )
    assert [(p.event, p.data) for p in resumed] == [(p.event, p.data) for p in gathered[5:]]

    # A mode the run did not record gives nothing, as the Agent Server's join.
    assert [p.event for p in client.runs.join_stream(thread_id, run_id, stream_mode="events")] == [
        "metadata"
    ]
    assert not recorded(run_id) & {"events", "debug", "checkpoints"}


def test_a_background_run_pays_nothing_for_tokens_or_events(client, worker, web, api_key):
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "chat", input=HI)
    out = client.runs.join(thread_id, run["run_id"])
    assert out["messages"][-1]["content"] == reply_to("hi")
    assert Run.objects.get(pk=run["run_id"]).stream_modes == ["values"]  # the default
    assert recorded(run["run_id"]) == {"lifecycle", "updates", "tasks", "values"}
    joined = list(client.runs.join_stream(thread_id, run["run_id"]))
    assert [p.event for p in joined] == ["metadata", "values", "values"]
    tokens = client.runs.join_stream(thread_id, run["run_id"], stream_mode="messages-tuple")
    assert [p.event for p in tokens] == ["metadata"]

    # Where a cut stream reconnects: a path under the API's root, which the JS SDK
    # appends to its base URL (and the Python SDK resolves against its own).
    api = f"{web.url}/api"
    headers = {"x-api-key": api_key, "Last-Event-ID": joined[1].id}
    stream = httpx.get(f"{api}/threads/{thread_id}/runs/{run['run_id']}/stream", headers=headers)
    location = stream.headers["location"]
    assert location.startswith(f"/threads/{thread_id}/runs/{run['run_id']}/stream?")
    again = httpx.get(f"{api}{location}", headers=headers)
    assert again.status_code == 200 and again.text == stream.text
    assert again.text.count("event: values") == 1  # the one after the first


def test_events_debug_and_checkpoints(client, worker):
    thread_id = client.threads.create()["thread_id"]
    parts = list(
        client.runs.stream(
            thread_id,
            "chat",
            input=HI,
            stream_mode=["events", "debug", "checkpoints", "updates"],
        )
    )
    # astream_events v2 records, as agent-inbox follows them to show the running node.
    events = [p.data for p in parts if p.event == "events"]
    started = [e["name"] for e in events if e["event"] == "on_chain_start"]
    assert "respond" in started
    streamed = [e for e in events if e["event"] == "on_chat_model_stream"]
    assert "".join(e["data"]["chunk"]["content"] for e in streamed) == reply_to("hi")
    assert {e["metadata"]["langgraph_node"] for e in streamed} == {"respond"}
    # The graph's own chunks are not records but stream chunks, as the Agent Server's.
    assert not [e for e in events if e["event"] == "on_chain_stream" and e["name"] == "LangGraph"]
    [update] = [p.data for p in parts if p.event == "updates"]
    assert update["respond"]["messages"][0]["content"] == reply_to("hi")

    # LangGraph's own modes: a checkpoint per super-step; debug wraps checkpoints and tasks.
    checkpoints = [p.data for p in parts if p.event == "checkpoints"]
    assert [c["next"] for c in checkpoints] == [["__start__"], ["respond"], []]
    assert checkpoints[-1]["values"]["messages"][-1]["content"] == reply_to("hi")
    debug = [p.data for p in parts if p.event == "debug"]
    assert {d["type"] for d in debug} == {"checkpoint", "task", "task_result"}
    assert [d["payload"]["name"] for d in debug if d["type"] == "task"] == ["respond"]
    assert "values" not in {p.event for p in parts}  # not asked: not sent


def test_a_resume_streamed_with_events_as_agent_inbox_sends_it(client, worker):
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "expense_approval", input=EXPENSE)
    approve = {"resume": {"decisions": [{"type": "approve"}]}}
    parts = list(
        client.runs.stream(thread_id, "expense_approval", command=approve, stream_mode="events")
    )
    assert {p.event for p in parts} == {"metadata", "events"}
    started = [p.data["name"] for p in parts if p.data.get("event") == "on_chain_start"]
    assert started[0] == "expense_approval"  # the graph, then each node as it starts
    assert "pay" in started
    assert client.threads.get(thread_id)["values"]["status"] == "paid"
