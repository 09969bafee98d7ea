"""Schema drift over the API, through the official ``langgraph-sdk`` client: a thread of
``drifting`` stops at its interrupt on v1 (the session's web server and worker), then v2
is deployed in a web server and a worker of their own (``tests.helpers.drift.deployed``),
which rename state key ``topic`` to ``subject`` and node ``review`` to ``approve``."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import UnprocessableEntityError

from durable.models import Run
from tests.helpers.drift import deployed

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_drifted_thread_is_refused_then_migrated_by_a_fork_that_resumes(worker, web, api_key):
    with get_sync_client(url=f"{web.url}/api", api_key=api_key) as v1:
        thread_id = v1.threads.create()["thread_id"]
        out = v1.runs.wait(thread_id, "drifting", input={"topic": "budget"})
        assert out["__interrupt__"][0]["value"] == {"question": "Approve budget?"}
        fits = httpx.get(
            f"{web.url}/api/threads/{thread_id}/drift", headers={"x-api-key": api_key}
        ).json()
        assert fits["fits"] is True and fits["deployed"]["number"] == 1

    with (
        deployed(2, worker) as (web2, _),
        get_sync_client(url=f"{web2.url}/api", api_key=api_key) as v2,
    ):
        with pytest.raises(UnprocessableEntityError) as refused:
            v2.runs.create(thread_id, "drifting", command={"resume": "approved"})
        body = refused.value.response.json()
        assert body["field"] == "graph_version"
        assert "'review'" in body["detail"] and "'topic'" in body["detail"]
        with pytest.raises(UnprocessableEntityError, match="graph_version|no longer fits"):
            v2.runs.create(thread_id, "drifting", input=None)
        assert Run.objects.filter(thread__name=thread_id).count() == 1

        drift = httpx.get(
            f"{web2.url}/api/threads/{thread_id}/drift", headers={"x-api-key": api_key}
        ).json()
        assert drift["fits"] is False
        assert drift["since"]["number"] == 2 and drift["written_by"]["number"] == 1
        assert {f["kind"] for f in drift["findings"]} >= {"removed_key", "missing_node"}
        migration = drift["migration"]
        assert migration["values"] == {"subject": "budget"}
        assert migration["as_node"] == "prepare" and migration["next"] == ["approve"]

        v2.threads.update_state(
            thread_id,
            migration["values"],
            as_node=migration["as_node"],
            checkpoint_id=migration["checkpoint_id"],
        )
        out = v2.runs.wait(thread_id, "drifting", input=None)
        assert out["__interrupt__"][0]["value"] == {"question": "Approve budget?"}
        out = v2.runs.wait(thread_id, "drifting", command={"resume": "approved"})
        assert out == {"subject": "budget", "verdict": "approved: budget"}
        newest = Run.objects.filter(thread__name=thread_id).first()
        assert newest.status == Run.Status.SUCCESS and newest.graph_version.number == 2
