"""``GET /threads/{thread_id}/drift``, a route of our own beside the Agent Server's: how
the thread's newest checkpoint no longer fits the graph deployed now, and the fork that
migrates it (``durable.engine.thread_drift``, ``durable.reports.migration``). A client
applies the migration with the protocol's own ``update_state`` (``values``, ``as_node``,
``checkpoint_id``); resume, replay and answering again are refused until then (422,
field ``graph_version``)."""

from __future__ import annotations

from typing import Any

from ninja import Router, Schema

from durable import engine, reports
from durable.api import access
from durable.api.schemas import ThreadId
from durable.graphs import UnknownGraph

drift = Router(tags=["threads"])


class VersionAnswer(Schema):
    name: str
    digest: str
    number: int


class FindingAnswer(Schema):
    kind: str
    subject: str
    message: str


class MigrationAnswer(Schema):
    checkpoint_id: str
    values: dict[str, Any]
    as_node: str | None
    next: list[str]
    renamed: dict[str, str]
    notes: list[str]


class DriftAnswer(Schema):
    """``fits`` is true when nothing is listed; ``deployed`` the graph's version now
    (``None`` for a thread with no graph yet)."""

    fits: bool
    deployed: VersionAnswer | None = None
    checkpoint_id: str | None = None
    written_by: VersionAnswer | None = None
    since: VersionAnswer | None = None
    findings: list[FindingAnswer] = []
    explanation: str = ""
    migration: MigrationAnswer | None = None


def _version(version) -> dict | None:
    if version is None:
        return None
    return {"name": version.name, "digest": version.digest, "number": version.number}


def _deployed(graph: str):
    try:
        return engine.deployed_version(graph) if graph else None
    except UnknownGraph:  # a graph no longer registered has no deployed version
        return None


@drift.get("/{thread_id}/drift", summary="Drift from the deployed graph", response=DriftAnswer)
def thread_drift(request, thread_id: ThreadId):
    thread = access.thread(request, thread_id)
    found = engine.thread_drift(thread)
    if found is None:
        return {"fits": True, "deployed": _version(_deployed(thread.graph))}
    migration = reports.migration(thread, found.checkpoint_id)
    return {
        "fits": False,
        "deployed": _version(found.deployed),
        "checkpoint_id": found.checkpoint_id,
        "written_by": _version(found.written_by),
        "since": _version(found.since),
        "findings": [vars(f) for f in found.findings],
        "explanation": found.explain(),
        "migration": migration
        and {
            "checkpoint_id": migration.checkpoint_id,
            "values": migration.values,
            "as_node": migration.as_node,
            "next": list(migration.next),
            "renamed": migration.renamed,
            "notes": list(migration.notes),
        },
    }
