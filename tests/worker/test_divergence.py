"""Replay divergence through the API, with a real worker: a thread run and replayed
through the official ``langgraph-sdk`` client, then compared with the branch it left
through our own routes (``GET /threads/{thread_id}/divergence``,
``GET /threads/{thread_id}/runs/{run_id}/divergence``)."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk import get_sync_client

from durable.models import Tenant
from durable.tenancy import create_token
from tests.helpers.divergence_graphs import choose
from tests.helpers.threads import EXPENSE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(web, api_key):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as sdk:
        yield sdk


@pytest.fixture
def api(web, api_key):
    with httpx.Client(base_url=f"{web.url}/api", headers={"x-api-key": api_key}) as http:
        yield http


def checkpoint_before(client, thread_id: str, node: str) -> dict:
    history = client.threads.get_history(thread_id, limit=100)
    return next(s for s in history if s["next"] == [node])["checkpoint"]


def replay(client, thread_id: str, graph: str, checkpoint: dict) -> dict:
    """Replay from ``checkpoint`` and wait for it; the replay run."""
    run = client.runs.create(thread_id, graph, input=None, checkpoint=checkpoint)
    client.runs.join(thread_id, run["run_id"])
    return client.runs.get(thread_id, run["run_id"])


def test_a_coin_replayed_that_lands_on_the_other_side_diverges(client, api, worker, tmp_path):
    choose(tmp_path, "heads")
    thread_id = client.threads.create()["thread_id"]
    first = client.runs.wait(thread_id, "coin", input={"dir": str(tmp_path)})
    assert first["side"] == "heads"
    toss = checkpoint_before(client, thread_id, "toss")
    choose(tmp_path, "tails")
    run = replay(client, thread_id, "coin", toss)
    assert run["status"] == "success"
    assert client.threads.get_state(thread_id)["values"]["side"] == "tails"

    found = api.get(f"/threads/{thread_id}/runs/{run['run_id']}/divergence").json()
    assert found["status"] == "diverged"
    assert found["fork_point"] == toss["checkpoint_id"]
    assert found["step"] == 1 and found["matched"] == 0
    assert found["old"]["nodes"] == found["new"]["nodes"] == ["toss"]
    assert found["differs"] == ["writes"]
    assert {"kind": "changed", "path": "writes.toss.side", "old": "heads", "new": "tails"} in (
        found["changes"]
    )
    # The same report from the new branch's head, by checkpoint.
    head = client.threads.get_state(thread_id)["checkpoint"]["checkpoint_id"]
    by_checkpoint = api.get(f"/threads/{thread_id}/divergence", params={"checkpoint_id": head})
    assert by_checkpoint.json() == found | {"checkpoint_id": head}


def test_a_steady_graph_replayed_shows_no_divergence(client, api, worker):
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "steady", input={"number": 3})
    run = replay(client, thread_id, "steady", checkpoint_before(client, thread_id, "prepare"))
    found = api.get(f"/threads/{thread_id}/runs/{run['run_id']}/divergence").json()
    assert found["status"] == "no_divergence"
    assert found["matched"] == 3 and found["step"] is None and found["changes"] == []
    assert [m["nodes"] for m in found["matched_steps"]] == [["prepare"], ["double"], ["finish"]]
    first = client.runs.list(thread_id)[-1]
    started = api.get(f"/threads/{thread_id}/runs/{first['run_id']}/divergence").json()
    assert started["status"] == "no_fork"


def test_an_interrupt_answered_again_otherwise_diverges_where_it_was_answered(client, api, worker):
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "expense_approval", input=EXPENSE)
    approve = {"decisions": [{"type": "approve"}]}
    client.runs.wait(thread_id, "expense_approval", command={"resume": approve})
    at = next(s for s in client.threads.get_history(thread_id, limit=100) if s["interrupts"])
    reject = {"decisions": [{"type": "reject"}]}
    client.runs.wait(
        thread_id,
        "expense_approval",
        command={"resume": reject},
        checkpoint_id=at["checkpoint"]["checkpoint_id"],
    )
    again = client.runs.list(thread_id)[0]
    found = api.get(f"/threads/{thread_id}/runs/{again['run_id']}/divergence").json()
    assert found["status"] == "diverged", found
    assert found["fork_point"] == at["checkpoint"]["checkpoint_id"]
    assert found["step"] == 1
    # The interrupt fired on the old branch; the answer given again came before it.
    assert found["old"]["interrupts"][0]["node"] == "request_approval"
    assert found["differs"] == ["writes"]
    assert found["old"]["answers"][0]["value"] == approve
    assert found["new"]["answers"][0]["value"] == reject
    assert found["new"]["writes"]["request_approval"]["decision"] == {"type": "reject"}


def test_another_tenants_thread_is_not_found_and_a_bad_checkpoint_is_named(
    client, api, worker, web
):
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, "steady", input={"number": 1})
    bad = api.get(f"/threads/{thread_id}/divergence", params={"checkpoint_id": "nope"})
    assert bad.status_code == 422 and bad.json()["field"] == "checkpoint_id"
    foreign_key = create_token(Tenant.objects.create(slug="globex", name="Globex"), "theirs")[1]
    head = client.threads.get_state(thread_id)["checkpoint"]["checkpoint_id"]
    foreign = httpx.get(
        f"{web.url}/api/threads/{thread_id}/divergence",
        params={"checkpoint_id": head},
        headers={"x-api-key": foreign_key},
    )
    assert foreign.status_code == 404
