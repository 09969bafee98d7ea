"""Schema drift, as operators find and mend it: the threads whose newest checkpoint no
longer fits the deployed graph (``drifted_threads``, found among the candidates
``version_differs`` picks in SQL), and the fork that fits one again (``migration``): its
values map the state to the deployed schema and its ``as_node`` leads to nodes that exist.

Whether one checkpoint fits, and the refusal of runs from one that does not, are the
engine's (``durable.engine.fit``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, Q

from durable.engine import versions
from durable.engine.checks import INPUT, InvalidRequest
from durable.engine.fit import Saved, drift_from, saved_checkpoint, thread_drift, value_error
from durable.engine.update import next_after_update
from durable.graphs import UnknownGraph, get_graph
from durable.models import Checkpoint, GraphVersion, Thread
from durable.values import jsonable

# The drifted-threads filter checks at most this many candidate threads (the most
# recently updated ones whose version differs from the deployed one).
DRIFT_SCAN_LIMIT = 1000


@dataclass(frozen=True)
class Migration:
    """The fork that brings a drifted checkpoint to the deployed graph: ``values`` (state
    keys of the deployed schema; a renamed key's value under its new name), ``as_node``
    (so that what runs next exists; ``None`` when nothing would run next anyway),
    ``next`` what would then run, ``renamed`` ``{old key: new key}``, and ``notes`` for
    the operator (what is left to edit by hand); ``version`` the deployed version it
    migrates to."""

    checkpoint_id: str
    version: GraphVersion
    values: dict
    as_node: str | None
    next: tuple[str, ...] = ()
    renamed: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def version_differs(graphs) -> Q:
    """A ``Q`` on ``Thread``: the threads of ``graphs`` (names) whose recorded version is
    not the one deployed now, or that have checkpoints and no version recorded: the
    candidates for drift, in SQL. A graph no longer registered is left out (its threads
    cannot be checked)."""
    checkpoints = Checkpoint.objects.filter(thread_id=OuterRef("thread_id"), checkpoint_ns="")
    differs = Q(pk__in=[])
    for graph in graphs:
        try:
            digest = versions.structure(get_graph(graph)).digest
        except UnknownGraph:
            continue
        # ``~Q`` across the join would take the threads with no version too.
        recorded = Q(graph_version__isnull=False) & ~Q(graph_version__digest=digest)
        unrecorded = Q(Exists(checkpoints), graph_version__isnull=True)
        differs |= Q(graph=graph) & (recorded | unrecorded)
    return differs


def drifted_threads(queryset):
    """The threads of ``queryset`` whose newest checkpoint does not fit the deployed graph
    (``thread_drift``), as a queryset. Only threads whose recorded version differs from
    their graph's deployed one are candidates (``version_differs``), and of those the
    ``DRIFT_SCAN_LIMIT`` most recently updated are checked."""
    deployed = {}
    graphs = queryset.exclude(graph="").order_by().values_list("graph", flat=True).distinct()
    for graph in graphs:
        try:
            deployed[graph] = versions.deployed_version(graph)
        except UnknownGraph:
            continue
    checked = queryset.filter(version_differs(deployed)).select_related("graph_version")
    checked = checked.order_by("-updated_at", "-pk")[:DRIFT_SCAN_LIMIT]
    drifted = [t.pk for t in checked if drift_from(t, None, deployed[t.graph])]
    return queryset.filter(pk__in=drifted)


def migration(thread: Thread, checkpoint_id: str | None = None) -> Migration | None:
    """The fork that would bring the thread's newest checkpoint (or ``checkpoint_id``) to
    the deployed graph, or ``None`` when it fits (``thread_drift``).

    ``values``: each state key the schema no longer has is offered under a key the
    schema added (one the checkpoint lacks and its own version did not have) whose schema
    takes its value, the closest name first; a key nothing takes is dropped by the fork,
    and said in ``notes``. ``as_node``: the first, of the nodes that led to a next task
    that is gone (in the old version's edges), the nodes that wrote the checkpoint and
    the deployed nodes in order, after which LangGraph would run something that exists
    (``next_after_update``, nothing written); with no next task to keep, the writer."""
    drift = thread_drift(thread, checkpoint_id)
    if drift is None:
        return None
    saved = saved_checkpoint(thread, drift.checkpoint_id)
    deployed, own = drift.deployed, drift.written_by
    values, renamed, notes = _mapped_values(saved, deployed, own)
    for finding in drift.findings:
        if finding.kind == "refused_value":
            notes.append(f"Edit {finding.subject!r}: {finding.message}.")
    as_node, then = _as_node(thread, saved, deployed, own, values or None)
    if saved.next and not then:
        notes.append("No node leads on from here in the deployed graph: choose as_node.")
    return Migration(
        checkpoint_id=saved.checkpoint_id,
        version=deployed,
        values=values,
        as_node=as_node,
        next=then,
        renamed=renamed,
        notes=tuple(notes),
    )


def _mapped_values(
    saved: Saved, deployed: GraphVersion, own: GraphVersion | None
) -> tuple[dict, dict, list[str]]:
    keys = set(deployed.state_keys)
    own_keys = set(own.state_keys) if own else set()
    removed = sorted(set(saved.values) - keys)
    added = [k for k in deployed.state_keys if k not in saved.values and k not in own_keys]
    properties = deployed.state_schema.get("properties", {})
    values, renamed, notes = {}, {}, []
    for old in removed:
        takers = [k for k in added if k not in values]
        takers = [k for k in takers if value_error(saved.values[old], properties.get(k)) is None]
        takers.sort(key=lambda k: -difflib.SequenceMatcher(None, old, k).ratio())
        if takers:
            values[takers[0]] = jsonable(saved.values[old])
            renamed[old] = takers[0]
        else:
            notes.append(f"Key {old!r} has no place in the deployed schema: the fork drops it.")
    return values, renamed, notes


def _as_node(
    thread: Thread,
    saved: Saved,
    deployed: GraphVersion,
    own: GraphVersion | None,
    values: dict | None,
) -> tuple[str | None, tuple[str, ...]]:
    nodes = set(deployed.nodes)
    gone = [n for n in saved.next if n not in nodes]
    before = [s for s, t in (own.edges if own else []) if t in gone]
    candidates = [*before, *saved.writers, *deployed.nodes]
    candidates = [c for c in dict.fromkeys(candidates) if c in nodes]
    if not saved.next:
        return (candidates[0] if saved.writers and candidates else None), ()
    if not candidates:
        candidates = [INPUT] if values else []
    for candidate in candidates:
        try:
            then = next_after_update(thread, saved.checkpoint_id, values, as_node=candidate)
        except InvalidRequest:
            continue
        if then and all(n in nodes for n in then):
            return candidate, tuple(then)
    return None, ()
