"""One checkpoint as the inspector, the diff and the fork pages show it: its tasks with
their errors, interrupts and subgraphs, its pending writes, the node(s) that wrote it,
what would run next after an update of it, and the links to its parent and children.
Values come highlighted (``dashboard.present.values``)."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse

from dashboard.present import values
from dashboard.present.links import checkpoint_url, json_url, query_params
from durable import engine, history
from durable.redaction import redact_text, redact_under


def tasks(thread, snapshot, ns: str) -> list[dict]:
    """The snapshot's tasks: ``task``, its ``error`` in words, ``interrupts`` (id, HTML),
    ``result_html``, and ``subgraph_url`` when the task ran a subgraph that checkpointed
    (``subgraph_ns``: its namespace)."""
    prefix = f"{ns}|" if ns else ""
    subgraphs = history.existing_namespaces(
        thread.thread_id, [f"{prefix}{t.name}:{t.id}" for t in snapshot.tasks]
    )
    found = []
    for task in snapshot.tasks:
        child_ns = f"{prefix}{task.name}:{task.id}"
        found.append(
            {
                "task": task,
                "error": (
                    redact_text(f"{type(task.error).__name__}: {task.error}") if task.error else ""
                ),
                "interrupts": [(i.id, values.json_html(i.value)) for i in task.interrupts],
                "result_html": values.json_html(task.result) if task.result else None,
                "subgraph_url": (
                    reverse("thread-history", args=[thread.pk]) + query_params(ns=child_ns)
                    if child_ns in subgraphs
                    else ""
                ),
                "subgraph_ns": child_ns,
            }
        )
    return found


def writes(snapshot, pending_writes) -> list[dict]:
    """``pending_writes`` (``(task_id, channel, value)``) with their task's name and the
    value's HTML (masked as the state key ``channel`` is)."""
    names = {t.id: t.name for t in snapshot.tasks}
    return [
        {
            "task": names.get(task_id, ""),
            "task_id": task_id,
            "channel": channel,
            "html": values.json_html(redact_under(channel, value)),
        }
        for task_id, channel, value in pending_writes
    ]


def writers(thread, snapshot) -> list[str]:
    """The node(s) that wrote ``snapshot``'s checkpoint: the names of the tasks of its
    parent checkpoint, read through ``durable.engine`` (none for the thread's first
    checkpoint)."""
    parent = snapshot.parent_config
    if not parent:
        return []
    parent_state = engine.state_at(thread, parent["configurable"]["checkpoint_id"])
    return [task.name for task in parent_state.tasks]


@dataclass(frozen=True)
class AfterUpdate:
    """What LangGraph would run after an update of a checkpoint as ``as_node``: the
    ``next`` task names (``()``: nothing, the thread would end there), or ``refused``,
    the engine's words when it would refuse the update."""

    as_node: str
    next: tuple[str, ...] = ()
    refused: str = ""

    @property
    def ends(self) -> bool:
        return not self.next and not self.refused


def after_update(thread, checkpoint_id: str, nodes, values=None) -> dict[str, AfterUpdate]:
    """``{as_node: AfterUpdate}`` for each of ``nodes``, the update being ``values`` (state
    keys, or ``None``) as that node: LangGraph's own answer, computed on a sandbox
    (``durable.engine.next_after_update``), so nothing is written."""
    found = {}
    for node in nodes:
        try:
            found[node] = AfterUpdate(
                node, engine.next_after_update(thread, checkpoint_id, values, as_node=node)
            )
        except engine.InvalidRequest as exc:
            found[node] = AfterUpdate(node, refused=exc.message)
    return found


def parent_url(thread, snapshot, ns: str) -> str:
    """The inspector of the snapshot's parent checkpoint; ``""`` for the first one."""
    parent = (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    if not parent:
        return ""
    return checkpoint_url(thread, parent, ns)


def children(thread, checkpoint_id: str, ns: str) -> list[dict]:
    """The checkpoints written after ``checkpoint_id``: each ``node``, its inspector's
    ``url`` and the ``diff_url`` from this checkpoint to it."""
    return [
        {
            "node": child,
            "url": checkpoint_url(thread, child.checkpoint_id, ns),
            "diff_url": reverse("diff", args=[thread.pk])
            + query_params(a=checkpoint_id, b=child.checkpoint_id, ns=ns),
        }
        for child in history.children_of(thread.thread_id, ns, checkpoint_id)
    ]


def diff_side(thread, snapshot, checkpoint_id: str, ns: str) -> dict:
    """One side of a diff: the checkpoint's ``id``, ``step``, ``source``, ``next`` and
    its links."""
    metadata = snapshot.metadata or {}
    return {
        "id": checkpoint_id,
        "step": metadata.get("step"),
        "source": metadata.get("source"),
        "next": snapshot.next,
        "url": checkpoint_url(thread, checkpoint_id, ns),
        "json_url": json_url(thread, checkpoint_id, ns),
    }
