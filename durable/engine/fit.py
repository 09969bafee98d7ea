"""Whether a thread's checkpoint still fits the graph deployed now, and the refusal of a
run that would go on from one that does not.

LangGraph resumes an old thread with the graph code deployed now, not the code that wrote
it (its docs on backwards compatibility leave this contract to the application). A
checkpoint no longer fits (``thread_drift``) when it holds a state key the deployed
state schema no longer has, lacks a key the schema requires that its own version did
not have, has next tasks or pending interrupts in a node the deployed graph no longer
has, or holds a value the schema refuses. Runs that go on from such a checkpoint are
refused (``check_fits``: resume, replay, answer again) until an operator migrates the
thread (``durable.reports.drift.migration`` proposes the fork).

The checkpoint is read as it was saved (the saver's ``get_tuple``), not through the
deployed graph, which drops the channels it does not know.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.constants import END
from langgraph.types import Send

from durable.engine import versions
from durable.engine.checks import InvalidRequest, schema_error
from durable.engine.state import config_for
from durable.graphs import UnknownGraph, get_graph
from durable.history import root_checkpoints
from durable.models import GraphVersion, Thread
from durable.values import jsonable

# LangGraph's own channels (``langgraph/graph/state.py``, ``langgraph/_internal/
# _constants.py``): a node's trigger ``branch:to:<node>``, a join ``join:<a+b>:<node>``,
# and ``__``-prefixed ones (``__start__``, ``__pregel_tasks``...).
BRANCH_TO = "branch:to:"
TASKS = "__pregel_tasks"
INTERRUPT = "__interrupt__"


@dataclass(frozen=True)
class Finding:
    """One way a checkpoint does not fit a version: ``kind`` is ``removed_key`` (a state
    key the schema no longer has), ``missing_key`` (a required key it lacks),
    ``missing_node`` (a next task in a node that no longer exists), ``interrupt_node``
    (a pending interrupt in such a node) or ``refused_value`` (a value the schema
    refuses); ``subject`` the key or node; ``message`` says it in words."""

    kind: str
    subject: str
    message: str


@dataclass(frozen=True)
class Drift:
    """How a thread's checkpoint ``checkpoint_id`` does not fit graph ``graph`` as
    ``deployed``: ``findings`` (at least one), ``written_by`` the version that wrote the
    checkpoint (``None`` when it was written before versions were recorded), and
    ``since`` the first recorded version after it that the checkpoint does not fit."""

    graph: str
    checkpoint_id: str
    findings: tuple[Finding, ...]
    deployed: GraphVersion
    since: GraphVersion
    written_by: GraphVersion | None = None

    def explain(self) -> str:
        """The drift in one paragraph, for a refusal and the thread page."""
        written = f"written by {self.written_by.name}, " if self.written_by else ""
        problems = "; ".join(f.message for f in self.findings)
        return (
            f"The thread's checkpoint {self.checkpoint_id} ({written}does not fit since "
            f"{self.since.name}) no longer fits graph {self.graph!r} as deployed "
            f"({self.deployed.name}): {problems}. Migrate the thread first: fork it with "
            "its state mapped to the deployed schema."
        )


@dataclass(frozen=True)
class Saved:
    """A checkpoint as saved: its id, its state keys and values (LangGraph's own
    channels left out), the nodes of its next tasks, whether interrupts are pending, and
    the digest of the version that wrote it (from its metadata)."""

    checkpoint_id: str
    values: dict
    next: tuple[str, ...]
    interrupted: bool
    digest: str | None
    writers: tuple[str, ...]


def _internal(channel: str) -> bool:
    return channel.startswith(("__", BRANCH_TO, "join:"))


def saved_checkpoint(thread: Thread, checkpoint_id: str | None) -> Saved | None:
    """The thread's checkpoint ``checkpoint_id`` (its newest root one when ``None``) as the
    saver stored it, or ``None`` when there is none."""
    found = get_graph(thread.graph).checkpointer.get_tuple(config_for(thread, checkpoint_id))
    if found is None:
        return None
    channel_values = found.checkpoint.get("channel_values") or {}
    values = {k: v for k, v in channel_values.items() if not _internal(k)}
    nodes = [k.removeprefix(BRANCH_TO) for k in channel_values if k.startswith(BRANCH_TO)]
    for item in channel_values.get(TASKS) or ():
        if isinstance(item, Send):
            nodes.append(item.node)
    interrupted = any(w[1] == INTERRUPT for w in found.pending_writes or ())
    metadata = found.metadata or {}
    writes = metadata.get("writes") or {}
    writers = tuple(writes) if isinstance(writes, dict) else ()
    if isinstance(metadata.get("as_node"), str):
        writers = (*writers, metadata["as_node"])
    return Saved(
        checkpoint_id=found.config["configurable"]["checkpoint_id"],
        values=values,
        next=tuple(dict.fromkeys(n for n in nodes if n != END)),
        interrupted=interrupted,
        digest=metadata.get(versions.METADATA_KEY),
        writers=writers,
    )


def value_error(value: Any, schema: dict | None) -> str | None:
    """Why ``value`` (made JSON-safe) breaks JSON Schema ``schema``, or ``None``."""
    if not schema:
        return None
    error = schema_error(jsonable(value), schema)
    return None if error is None else error.message[:200]


def findings(saved: Saved, version: GraphVersion, own: GraphVersion | None) -> list[Finding]:
    """How ``saved`` does not fit ``version``; ``own`` is the version that wrote it (a
    required key counts as lacking only when ``own`` did not have it: a key of its own
    schema that a thread never set is no drift)."""
    keys = set(version.state_keys)
    found = []
    for key in sorted(set(saved.values) - keys):
        found.append(Finding("removed_key", key, f"state key {key!r} is not in the state schema"))
    own_keys = set(own.state_keys) if own else None
    for key in version.required_keys:
        if key not in saved.values and own_keys is not None and key not in own_keys:
            found.append(
                Finding("missing_key", key, f"the state schema requires {key!r}, which it lacks")
            )
    nodes = set(version.nodes)
    missing = [n for n in saved.next if n not in nodes]
    for node in missing:
        found.append(
            Finding("missing_node", node, f"its next task is in node {node!r}, which is gone")
        )
    if saved.interrupted and missing:
        where = ", ".join(repr(n) for n in missing)
        found.append(
            Finding(
                "interrupt_node",
                missing[0],
                f"its pending interrupt waits in node {where}, which is gone",
            )
        )
    combined = set(version.combined_keys)
    properties = version.state_schema.get("properties", {})
    for key in sorted(set(saved.values) & keys - combined):
        if problem := value_error(saved.values[key], properties.get(key) or {}):
            found.append(
                Finding("refused_value", key, f"the schema refuses the value of {key!r}: {problem}")
            )
    return found


def _deployed(thread: Thread) -> GraphVersion | None:
    if not thread.graph:
        return None
    try:
        return versions.deployed_version(thread.graph)
    except UnknownGraph:
        return None


def thread_drift(thread: Thread, checkpoint_id: str | None = None) -> Drift | None:
    """How the thread's newest checkpoint (or its checkpoint ``checkpoint_id``, in the
    root namespace) does not fit its graph as this process deploys it: a ``Drift``
    (``findings``, ``since``, ``explain()``), or ``None`` when it fits, or when the
    thread has no graph, no checkpoint, or a graph no longer registered. One checkpoint
    read, and nothing more when the checkpoint was written by the deployed version."""
    deployed = _deployed(thread)
    return None if deployed is None else drift_from(thread, checkpoint_id, deployed)


def _written_by_deployed(thread: Thread, checkpoint_id: str | None, deployed) -> bool:
    """Whether the checkpoint's metadata names ``deployed``: one index lookup of one row,
    no blob read (the thread page asks at every refresh)."""
    rows = root_checkpoints(thread.thread_id)
    if checkpoint_id is not None:
        rows = rows.filter(checkpoint_id=checkpoint_id)
    metadata = rows.values_list("metadata", flat=True).first() or {}
    return metadata.get(versions.METADATA_KEY) == deployed.digest


def drift_from(thread: Thread, checkpoint_id: str | None, deployed: GraphVersion) -> Drift | None:
    """``thread_drift`` against ``deployed``, already read (the drifted-threads filter
    reads each graph's deployed version once for many threads)."""
    if _written_by_deployed(thread, checkpoint_id, deployed):
        return None
    saved = saved_checkpoint(thread, checkpoint_id)
    if saved is None:
        return None
    own = versions.find(thread.graph, saved.digest)
    if own is None and saved.digest is None and checkpoint_id is None:
        own = thread.graph_version  # a checkpoint written without a version: its run's
    if own is not None and own.pk == deployed.pk:
        return None
    problems = findings(saved, deployed, own)
    if not problems:
        return None
    return Drift(
        graph=thread.graph,
        checkpoint_id=saved.checkpoint_id,
        findings=tuple(problems),
        deployed=deployed,
        since=_since(saved, own, deployed),
        written_by=own,
    )


def _since(saved: Saved, own: GraphVersion | None, deployed: GraphVersion) -> GraphVersion:
    """The first recorded version after ``own`` that ``saved`` does not fit (the
    deployed one when a rollback deployed an older one)."""
    later = GraphVersion.objects.filter(graph=deployed.graph).order_by("number")
    if own is not None:
        later = later.filter(number__gt=own.number)
    for version in later.filter(number__lte=deployed.number):
        if findings(saved, version, own):
            return version
    return deployed


def check_fits(thread: Thread, checkpoint_id: str | None = None) -> None:
    """Refuse a run that would go on from a checkpoint that no longer fits the deployed
    graph (``thread_drift``): raises ``InvalidRequest("graph_version")`` with the
    drift's explanation."""
    if drift := thread_drift(thread, checkpoint_id):
        raise InvalidRequest("graph_version", drift.explain())
