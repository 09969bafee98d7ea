"""The HTTP API through the official ``langgraph-sdk`` client, against the console served
by uvicorn (``web``) with a real Celery worker (its refusals, which need no worker:
``tests/server/test_api_refusals.py``)."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from durable.graphs import graph_names
from durable.models import Run, Thread
from tests.helpers.graphs import release, runs_of
from tests.helpers.runs import draining
from tests.helpers.threads import EXPENSE, counts
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

APPROVE = {"decisions": [{"type": "approve"}]}


@pytest.fixture
def client(web, api_key):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk:
        yield sdk


def interrupted_thread(client) -> dict:
    """A thread of expense_approval stopped at its approval interrupt."""
    thread = client.threads.create()
    out = client.runs.wait(thread["thread_id"], "expense_approval", input=EXPENSE)
    assert out["__interrupt__"][0]["value"]["action_requests"][0]["name"] == "pay_expense"
    return thread


def test_assistants_are_the_registered_graphs(client):
    found = client.assistants.search(limit=100)
    assert [a["assistant_id"] for a in found] == graph_names()
    assert {"expense_approval", "parallel_review"} <= set(graph_names())
    assert client.assistants.search(metadata={"team": "x"}) == []
    assert client.assistants.search(graph_id="parallel_review")[0]["name"] == "parallel_review"
    assert client.assistants.get("parallel_review")["graph_id"] == "parallel_review"
    with pytest.raises(NotFoundError, match="Assistant 'nope' not found"):
        client.assistants.get("nope")


def test_openapi_docs_list_the_routes(web):
    schema = httpx.get(f"{web.url}/api/openapi.json").json()
    assert schema["paths"]["/api/threads/{thread_id}/runs/stream"]["post"]
    assert schema["paths"]["/api/threads/{thread_id}/runs/{run_id}/stream"]["get"]
    assert schema["paths"]["/api/threads/{thread_id}"]["patch"]
    assert schema["paths"]["/api/threads/count"]["post"]
    docs = httpx.get(f"{web.url}/api/docs")
    assert docs.status_code == 200
    assert "/static/ninja/swagger-ui-bundle.js" in docs.text  # served here, no CDN


def test_create_and_get_a_thread(client):
    made = client.threads.create(metadata={"customer": "acme"}, graph_id="expense_approval")
    got = client.threads.get(made["thread_id"])
    assert got["status"] == "idle"
    assert got["metadata"] == {
        "customer": "acme",
        "graph_id": "expense_approval",
        "assistant_id": "expense_approval",
    }
    assert got["values"] == {} and got["interrupts"] == {}
    assert client.threads.get_state(made["thread_id"])["values"] == {}
    assert client.threads.get_history(made["thread_id"]) == []


def test_create_a_thread_with_its_own_id(client):
    client.threads.create(thread_id="order-42")
    again = client.threads.create(thread_id="order-42", if_exists="do_nothing")
    assert again["thread_id"] == "order-42"
    with pytest.raises(ConflictError, match="'order-42' already exists"):
        client.threads.create(thread_id="order-42")
    assert Thread.objects.count() == 1


def test_update_a_threads_metadata_and_count_threads(client):
    made = client.threads.create(
        metadata={"customer": "acme", "tier": 1}, graph_id="parallel_review"
    )
    client.threads.create(metadata={"customer": "globex"})
    graph = {"graph_id": "parallel_review", "assistant_id": "parallel_review"}

    # Merged, as the Agent Server merges: given keys replace, the others stay.
    updated = client.threads.update(made["thread_id"], metadata={"tier": 2, "region": "eu"})
    assert updated["metadata"] == {"customer": "acme", "tier": 2, "region": "eu", **graph}
    assert client.threads.get(made["thread_id"])["metadata"] == updated["metadata"]
    minimal = client.threads.update(
        made["thread_id"], metadata={"region": "us", **graph}, return_minimal=True
    )
    assert minimal is None
    assert client.threads.get(made["thread_id"])["metadata"]["region"] == "us"
    with pytest.raises(NotFoundError, match="Thread 'nope' not found"):
        client.threads.update("nope", metadata={"region": "us"})

    assert client.threads.count() == 2
    assert client.threads.count(metadata={"customer": "acme"}) == 1
    assert client.threads.count(metadata={"tier": 2, "region": "us"}) == 1
    assert client.threads.count(metadata={"tier": 1}) == 0
    assert client.threads.count(metadata={"graph_id": "parallel_review"}) == 1
    assert client.threads.count(status="idle") == 2
    assert client.threads.count(status="interrupted") == 0


def test_search_threads_by_status_graph_and_metadata(client, worker):
    waiting = interrupted_thread(client)
    review = client.threads.create(metadata={"team": "legal", "tier": {"level": 2}})
    client.threads.create(metadata={"team": "finance"}, graph_id="parallel_review")

    def ids(**kwargs) -> list[str]:
        return [t["thread_id"] for t in client.threads.search(**kwargs)]

    assert ids(status="interrupted") == [waiting["thread_id"]]
    assert len(ids(metadata={"graph_id": "parallel_review"})) == 1
    assert ids(metadata={"team": "legal"}) == [review["thread_id"]]
    assert ids(metadata={"tier": {"level": 2}}) == [review["thread_id"]]
    assert ids(metadata={"team": "nobody"}) == []
    newest_first = ids(limit=10)
    assert len(newest_first) == 3
    assert ids(limit=2, offset=1) == newest_first[1:]
    assert ids(sort_by="created_at", sort_order="asc") == newest_first[::-1]
    [found] = client.threads.search(status="interrupted")
    assert found["values"]["employee"] == "Grace Hopper"
    [(task_id, [pending])] = found["interrupts"].items()
    assert pending["value"]["review_configs"][0]["action_name"] == "pay_expense"


def test_run_to_an_interrupt_then_resume_with_a_command(client, worker):
    thread_id = interrupted_thread(client)["thread_id"]
    state = client.threads.get_state(thread_id)
    assert state["next"] == ["request_approval"]
    [pending] = state["interrupts"]
    assert client.threads.get(thread_id)["status"] == "interrupted"

    out = client.runs.wait(thread_id, "expense_approval", command={"resume": APPROVE})

    assert out["status"] == "paid"
    assert out["payment"]["payee"] == "Grace Hopper"
    assert "__interrupt__" not in out
    assert client.threads.get(thread_id)["status"] == "idle"
    assert client.threads.get_state(thread_id)["next"] == []
    with pytest.raises(UnprocessableEntityError, match="no pending interrupt"):
        client.runs.create(thread_id, "expense_approval", command={"resume": APPROVE})


def test_parallel_interrupts_resume_with_a_map_of_ids(client, worker):
    thread = client.threads.create()
    out = client.runs.wait(thread["thread_id"], "parallel_review", input={"document": "NDA"})
    by_reviewer = {i["value"]["reviewer"]: i["id"] for i in out["__interrupt__"]}
    answers = {
        by_reviewer["legal"]: {"approved": True},
        by_reviewer["finance"]: {"approved": True},
    }
    done = client.runs.wait(thread["thread_id"], "parallel_review", command={"resume": answers})
    assert done["verdict"] == "approved"


def test_background_run_get_list_and_join(client, worker):
    thread = client.threads.create()
    created = []
    run = client.runs.create(
        thread["thread_id"],
        "expense_approval",
        input=EXPENSE,
        on_run_created=created.append,
    )
    assert run["status"] in ("pending", "running", "interrupted")
    assert run["assistant_id"] == "expense_approval"
    assert created == [{"run_id": run["run_id"], "thread_id": thread["thread_id"]}]

    joined = client.runs.join(thread["thread_id"], run["run_id"])
    assert joined["__interrupt__"][0]["value"]["action_requests"][0]["name"] == "pay_expense"
    got = client.runs.get(thread["thread_id"], run["run_id"])
    assert got["status"] == "interrupted"
    assert got["kind"] == "start"

    resumed = client.runs.create(
        thread["thread_id"], "expense_approval", command={"resume": APPROVE}
    )
    assert client.runs.join(thread["thread_id"], resumed["run_id"])["status"] == "paid"
    listed = client.runs.list(thread["thread_id"])
    assert [r["run_id"] for r in listed] == [resumed["run_id"], run["run_id"]]
    assert [r["status"] for r in listed] == ["success", "interrupted"]
    assert client.runs.list(thread["thread_id"], status="interrupted")[0]["run_id"] == run["run_id"]
    assert client.runs.list(thread["thread_id"], limit=1, offset=1)[0]["run_id"] == run["run_id"]


def test_a_failed_run_reports_its_error(client, worker):
    thread_id = interrupted_thread(client)["thread_id"]
    # request_approval reads decisions[0]: an empty list fails the node.
    with pytest.raises(Exception, match="IndexError: list index out of range"):
        client.runs.wait(thread_id, "expense_approval", command={"resume": {"decisions": []}})
    out = client.runs.wait(
        thread_id, "expense_approval", command={"resume": {"decisions": []}}, raise_error=False
    )
    assert out["__error__"]["error"] == "IndexError"
    [failed, *_] = client.runs.list(thread_id)
    assert failed["status"] == "error"
    assert failed["error"] == {
        "error": "IndexError",
        "message": "list index out of range",
        "node": "request_approval",
    }


def test_state_at_a_checkpoint_and_history(client, worker):
    thread_id = interrupted_thread(client)["thread_id"]
    client.runs.wait(thread_id, "expense_approval", command={"resume": APPROVE})

    history = client.threads.get_history(thread_id, limit=100)
    assert [s["metadata"]["step"] for s in history] == [3, 2, 1, 0, -1]
    assert [s["next"] for s in history] == [
        [],
        ["pay"],
        ["request_approval"],
        ["validate"],
        ["__start__"],
    ]
    assert history[0]["parent_checkpoint"] == history[1]["checkpoint"]

    at_approval = history[2]["checkpoint"]
    by_id = client.threads.get_state(thread_id, checkpoint_id=at_approval["checkpoint_id"])
    by_ref = client.threads.get_state(thread_id, checkpoint=at_approval)
    assert by_id == by_ref
    assert by_id["values"]["status"] == "validated"
    assert by_id["next"] == ["request_approval"]
    assert "payment" not in by_id["values"]
    with_subgraphs = client.threads.get_state(thread_id, subgraphs=True)
    assert with_subgraphs["values"]["status"] == "paid"

    assert client.threads.get_history(thread_id, limit=2) == history[:2]
    before = client.threads.get_history(thread_id, before=at_approval["checkpoint_id"])
    assert before == history[3:]
    assert client.threads.get_history(thread_id, before=at_approval) == history[3:]
    loop_steps = client.threads.get_history(thread_id, metadata={"source": "input"})
    assert [s["metadata"]["step"] for s in loop_steps] == [-1]


def test_stream_a_run_in_the_sdks_format(client, worker):
    thread = client.threads.create()
    created = []
    parts = list(
        client.runs.stream(
            thread["thread_id"],
            "expense_approval",
            input=EXPENSE,
            stream_mode=["updates", "values", "tasks"],
            on_run_created=created.append,
        )
    )
    assert parts[0].event == "metadata"
    assert parts[0].data == {"run_id": created[0]["run_id"], "attempt": 1}
    updates = [p.data for p in parts if p.event == "updates"]
    assert updates[0] == {"validate": {"problems": [], "status": "validated"}}
    [pending] = updates[-1]["__interrupt__"]
    assert pending["value"]["action_requests"][0]["name"] == "pay_expense"
    tasks = [p.data["name"] for p in parts if p.event == "tasks"]
    assert tasks[:2] == ["validate", "validate"]  # its start, then its result
    # The state after each super-step, the last with the interrupt it stopped at.
    values = [p.data for p in parts if p.event == "values"]
    assert values[0] == EXPENSE and values[-1]["status"] == "validated"
    assert values[-1]["__interrupt__"] == [pending]
    ids = [int(p.id) for p in parts if p.id]
    assert ids == sorted(ids)

    # The SDK's v2 parts: values carry their interrupts apart; resume by command.
    v2 = list(
        client.runs.stream(
            thread["thread_id"],
            "expense_approval",
            command={"resume": APPROVE},
            stream_mode="values",
            version="v2",
        )
    )
    assert [p["type"] for p in v2] == ["metadata"] + ["values"] * (len(v2) - 1)
    assert v2[-1]["data"]["status"] == "paid"
    assert v2[-1]["interrupts"] == []


def test_join_a_runs_stream_and_resume_it_after_an_event(client, worker):
    thread_id = interrupted_thread(client)["thread_id"]
    [run] = client.runs.list(thread_id)
    everything = list(client.runs.join_stream(thread_id, run["run_id"], stream_mode="updates"))
    assert [p.event for p in everything] == ["metadata", "updates", "updates"]
    after_first = list(
        client.runs.join_stream(
            thread_id, run["run_id"], stream_mode="updates", last_event_id=everything[1].id
        )
    )
    assert [(p.event, p.data) for p in after_first] == [(p.event, p.data) for p in everything[2:]]


def test_update_state_forks_and_a_run_continues_from_it(client, worker):
    thread_id = interrupted_thread(client)["thread_id"]
    history = client.threads.get_history(thread_id)
    at_interrupt = history[0]["checkpoint"]

    # Answer as if request_approval had decided to reject: the graph goes on to reject.
    forked = client.threads.update_state(
        thread_id,
        {"decision": {"type": "reject", "message": "over budget"}},
        as_node="request_approval",
    )
    state = client.threads.get_state(thread_id)
    assert state["checkpoint"] == forked["checkpoint"]
    assert state["parent_checkpoint"]["checkpoint_id"] == at_interrupt["checkpoint_id"]
    assert state["values"]["decision"]["message"] == "over budget"
    # The old checkpoint is still there, unchanged.
    again = client.threads.get_state(thread_id, checkpoint=at_interrupt)
    assert "decision" not in again["values"]

    # A fork from a past checkpoint branches there: as if validate had passed 7.50.
    before_validate = history[1]["checkpoint"]
    branch = client.threads.update_state(
        thread_id,
        {"amount": 7.5, "problems": [], "status": "validated"},
        as_node="validate",
        checkpoint=before_validate,
    )
    branched = client.threads.get_state(thread_id, checkpoint=branch["checkpoint"])
    assert branched["parent_checkpoint"]["checkpoint_id"] == before_validate["checkpoint_id"]
    assert branched["values"]["amount"] == 7.5
    assert branched["next"] == ["request_approval"]


def test_replay_and_answer_again_from_a_past_checkpoint(client, worker):
    thread_id = interrupted_thread(client)["thread_id"]
    paid = client.runs.wait(thread_id, "expense_approval", command={"resume": APPROVE})
    assert paid["status"] == "paid"
    history = client.threads.get_history(thread_id, limit=100)
    at_interrupt = next(s for s in history if s["interrupts"])

    # Answer the approval again, differently: the old branch stays paid.
    rejected = client.runs.wait(
        thread_id,
        "expense_approval",
        command={"resume": {"decisions": [{"type": "reject"}]}},
        checkpoint_id=at_interrupt["checkpoint"]["checkpoint_id"],
    )
    assert rejected["status"] == "rejected"
    old = client.threads.get_state(thread_id, checkpoint=history[0]["checkpoint"])
    assert old["values"]["status"] == "paid"

    # Replay from the validated checkpoint: the interrupt fires again.
    validated = next(s for s in history if s["next"] == ["request_approval"])
    replayed = client.runs.wait(thread_id, "expense_approval", checkpoint=validated["checkpoint"])
    assert (
        replayed["__interrupt__"][0]["value"]["review_configs"][0]["action_name"] == "pay_expense"
    )
    kinds = [r["kind"] for r in client.runs.list(thread_id)]
    assert kinds == ["replay", "resume", "resume", "start"]


def test_an_enqueued_run_runs_after_the_active_one(client, worker):
    thread_id = interrupted_thread(client)["thread_id"]
    first = client.runs.create(thread_id, "expense_approval", command={"resume": APPROVE})
    # Accepted whether or not the worker has ended the first run yet.
    queued = client.runs.create(
        thread_id, "expense_approval", input=EXPENSE, multitask_strategy="enqueue"
    )
    client.runs.join(thread_id, first["run_id"])
    out = client.runs.join(thread_id, queued["run_id"])
    assert "__interrupt__" in out
    assert client.runs.get(thread_id, queued["run_id"])["multitask_strategy"] == "enqueue"


def test_cancel_and_delete(client, worker):
    thread_id = interrupted_thread(client)["thread_id"]
    [run] = client.runs.list(thread_id)
    with pytest.raises(ConflictError, match="already ended"):
        client.runs.cancel(thread_id, run["run_id"])
    client.threads.delete(thread_id)
    with pytest.raises(NotFoundError):
        client.threads.get(thread_id)
    assert counts() == (0, 0, 0)


def probe_input(directory) -> dict:
    """Input of the probe graph (tests/helpers/graphs.py): its slow node holds the run open
    until ``release(directory)``."""
    return {"dir": str(directory), "log": []}


def test_a_busy_thread_refuses_a_second_run_and_a_running_run_can_be_cancelled(
    client, worker, tmp_path
):
    thread = client.threads.create()
    thread_id = thread["thread_id"]
    run = client.runs.create(thread_id, "probe", input=probe_input(tmp_path))
    wait_for(lambda: runs_of(tmp_path, "slow") == 1, message="the probe's slow node")
    assert client.threads.get(thread_id)["status"] == "busy"
    assert client.runs.get(thread_id, run["run_id"])["status"] == "running"

    with pytest.raises(ConflictError, match="already has an active run") as refused:
        client.runs.create(thread_id, "probe", input=probe_input(tmp_path))
    assert refused.value.body["field"] == "thread_id"
    with pytest.raises(ConflictError, match="has a running run"):
        client.threads.delete(thread_id)
    # A run queued behind it is cancelled at once, and never runs.
    queued = client.runs.create(
        thread_id, "probe", input=probe_input(tmp_path), multitask_strategy="enqueue"
    )
    assert client.runs.cancel(thread_id, queued["run_id"], wait=True)["status"] == "interrupted"

    # Streaming while it runs: what the run has done so far, then it waits.
    live = client.runs.join_stream(thread_id, run["run_id"], stream_mode=["custom"])
    assert next(live).event == "metadata"
    assert next(live).data == {"node": "fast", "progress": 1.0}

    assert client.runs.cancel(thread_id, run["run_id"])["status"] == "running"
    draining(Run.objects.get(pk=run["run_id"]), "cancel")
    release(tmp_path)  # the super-step ends; the run stops at its boundary
    assert list(live) == []  # the stream ends with the run
    assert client.runs.join(thread_id, run["run_id"])["log"] == ["fast", "slow"]
    cancelled = client.runs.get(thread_id, run["run_id"])
    assert cancelled["status"] == "interrupted"
    assert cancelled["stop_detail"] == "cancelled by token:tests"
    assert runs_of(tmp_path, "after") == 0
