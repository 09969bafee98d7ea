"""A thread's checkpoint history as a tree, read from the checkpoint tables' columns.

Nothing here decodes state: a page of the tree is one query for the checkpoint rows
(id, parent id, metadata), one for the (task, channel) names of their writes and of
their parents' writes, and one for their children, whatever the thread's size.

- **Writers.** The node(s) that wrote checkpoint C are the tasks that ran on C's parent:
  each task saves its writes against the checkpoint it ran from, with its
  ``task_path`` (``"~__pregel_pull, <node>"`` for a node triggered by an edge). A task
  sent with ``Send`` has a path without its node's name (``"~__pregel_push, ..."``) and
  is shown as ``SEND``. An update (``update_state``, a fork) writes as the task
  ``"~__interrupt__, <i>"``; the node it counts as is ``metadata["as_node"]``, which
  ``durable.engine.operations.fork`` records.
- **Badges.** A checkpoint whose tasks wrote ``__interrupt__`` stopped at an interrupt
  (``__resume__`` writes mean it was answered); ``__error__`` writes are failed tasks.
- **Order.** Checkpoint ids are uuid6: they sort by creation time, and hold it.
"""

from __future__ import annotations

import datetime
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Count

from durable.models import Checkpoint, CheckpointWrite

SEND = "(Send)"
PULL_TASK = "~__pregel_pull, "
PUSH_TASK = "~__pregel_push"
INTERRUPT, ERROR, RESUME = "__interrupt__", "__error__", "__resume__"
# 100-ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000


@dataclass
class TreeNode:
    """One checkpoint of a tree page.

    ``writers``: node names (see the module docstring), ``[]`` for an input or a
    copied checkpoint. ``interrupts``/``errors``: names of the tasks that stopped at an
    interrupt / failed on *this* checkpoint; ``resumed``: its interrupts were answered.
    ``children``: ids of its children (on any page), oldest first."""

    checkpoint_id: str
    parent_id: str | None
    step: int | None
    source: str
    created_at: datetime.datetime | None
    run_id: str | None = None
    writers: list[str] = field(default_factory=list)
    interrupts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    resumed: bool = False
    children: list[str] = field(default_factory=list)


@dataclass
class TreePage:
    """Checkpoints of one (thread, namespace), newest first, at most ``limit``.

    ``newer``/``older``: whether checkpoints exist before / after this page (keyset
    cursors are the first and last node's ids). ``total``: the namespace's count."""

    nodes: list[TreeNode]
    newer: bool
    older: bool
    total: int

    @property
    def ids(self) -> set[str]:
        return {n.checkpoint_id for n in self.nodes}


def checkpoint_time(checkpoint_id: str) -> datetime.datetime | None:
    """When a uuid6 checkpoint id was made (UTC), or ``None`` for another kind of id."""
    try:
        value = uuid.UUID(checkpoint_id)
    except (ValueError, TypeError, AttributeError):
        return None
    if value.version != 6:
        return None
    ticks = ((value.int >> 80) << 12) | ((value.int >> 64) & 0x0FFF)
    micros = (ticks - _UUID_EPOCH_OFFSET) // 10
    return datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(
        microseconds=micros
    )


def tree_page(
    thread_id: str,
    checkpoint_ns: str = "",
    *,
    before: str | None = None,
    after: str | None = None,
    limit: int = 100,
) -> TreePage:
    """A page of the tree of ``thread_id`` in ``checkpoint_ns``: the newest ``limit``
    checkpoints older than checkpoint id ``before``, or the oldest ``limit`` newer than
    ``after`` (still listed newest first), or the newest of all. Ids that do not exist
    are just cursors. Five queries, whatever the thread's size."""
    rows = Checkpoint.objects.filter(thread_id=thread_id, checkpoint_ns=checkpoint_ns)
    columns = ("checkpoint_id", "parent_checkpoint_id", "metadata")
    if after is not None:
        window = rows.filter(checkpoint_id__gt=after).order_by("checkpoint_id")
        found = list(window.values_list(*columns)[: limit + 1])
        newer, found = len(found) > limit, found[:limit][::-1]
        older = rows.filter(checkpoint_id__lte=after).exists()
    else:
        window = rows.order_by("-checkpoint_id")
        if before is not None:
            window = window.filter(checkpoint_id__lt=before)
        found = list(window.values_list(*columns)[: limit + 1])
        older, found = len(found) > limit, found[:limit]
        newer = before is not None and rows.filter(checkpoint_id__gte=before).exists()
    nodes = [_node(*row) for row in found]
    if nodes:
        _add_writes(thread_id, checkpoint_ns, nodes)
        _add_children(rows, nodes)
    return TreePage(nodes=nodes, newer=newer, older=older, total=rows.count())


def root_checkpoints(thread_id: str):
    """The thread's checkpoints in the root namespace (the graph's own), newest first: a
    backward scan of the ``(thread_id, checkpoint_ns, checkpoint_id)`` index, for the
    caller to bound."""
    return Checkpoint.objects.filter(thread_id=thread_id, checkpoint_ns="").order_by(
        "-checkpoint_id"
    )


def newest_checkpoint_id(thread_id: str) -> str | None:
    """The id of the thread's newest root checkpoint, ``None`` when it has none: one index
    lookup. (The PostgreSQL claim, ``durable.engine.records._CLAIM``, selects the same in
    its own SQL, to stay one statement.)"""
    return root_checkpoints(thread_id).values_list("checkpoint_id", flat=True).first()


def children_of(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[TreeNode]:
    """The checkpoints whose parent is ``checkpoint_id``, oldest first (no writers)."""
    rows = Checkpoint.objects.filter(
        thread_id=thread_id, checkpoint_ns=checkpoint_ns, parent_checkpoint_id=checkpoint_id
    ).order_by("checkpoint_id")
    columns = ("checkpoint_id", "parent_checkpoint_id", "metadata")
    return [_node(*row) for row in rows.values_list(*columns)]


def namespaces(thread_id: str, limit: int = 50) -> list[str]:
    """The thread's checkpoint namespaces, ``""`` (the graph itself) first."""
    # Past "" in the (thread_id, checkpoint_ns, ...) index: the graph's own rows, most
    # of a long thread, are skipped rather than read.
    found = (
        Checkpoint.objects.filter(thread_id=thread_id, checkpoint_ns__gt="")
        .values_list("checkpoint_ns", flat=True)
        .order_by("checkpoint_ns")
        .distinct()[: limit - 1]
    )
    return ["", *found]


def checkpoint_counts(thread_ids: Iterable[str]) -> dict[str, int]:
    """``{thread_id: number of checkpoints of its graph (root namespace)}``."""
    counts = (
        Checkpoint.objects.filter(thread_id__in=list(thread_ids), checkpoint_ns="")
        .values("thread_id")
        .annotate(n=Count("pk"))
        .values_list("thread_id", "n")
    )
    return dict(counts)


def writer_names(task_paths: Iterable[str]) -> list[str]:
    """Node names of tasks, from their ``task_path``s, in order and without repeats;
    update tasks (``~__interrupt__``) are left out, Send tasks are ``SEND``."""
    names: list[str] = []
    for path in task_paths:
        if path.startswith(PULL_TASK):
            name = path[len(PULL_TASK) :].split(", ")[0]
        elif path.startswith(PUSH_TASK):
            name = SEND
        else:
            continue
        if name not in names:
            names.append(name)
    return names


def existing_namespaces(thread_id: str, candidates: Iterable[str]) -> set[str]:
    """Those of ``candidates`` in which the thread has checkpoints (one query)."""
    found = (
        Checkpoint.objects.filter(thread_id=thread_id, checkpoint_ns__in=list(candidates))
        .values_list("checkpoint_ns", flat=True)
        .distinct()
    )
    return set(found)


# -- helpers ------------------------------------------------------------------------


def _node(checkpoint_id: str, parent_id: str | None, metadata: dict | None) -> TreeNode:
    metadata = metadata if isinstance(metadata, dict) else {}
    step = metadata.get("step")
    return TreeNode(
        checkpoint_id=checkpoint_id,
        parent_id=parent_id or None,
        step=step if isinstance(step, int) else None,
        source=str(metadata.get("source") or "?"),
        created_at=checkpoint_time(checkpoint_id),
        run_id=str(metadata["run_id"]) if metadata.get("run_id") is not None else None,
        writers=[str(metadata["as_node"])] if metadata.get("as_node") else [],
    )


def _add_writes(thread_id: str, ns: str, nodes: list[TreeNode]) -> None:
    """Badges from each node's own writes; writers from its parent's. One query."""
    wanted = {n.checkpoint_id for n in nodes} | {n.parent_id for n in nodes if n.parent_id}
    writes = (
        CheckpointWrite.objects.filter(
            thread_id=thread_id, checkpoint_ns=ns, checkpoint_id__in=sorted(wanted)
        )
        .order_by("checkpoint_id", "task_path", "task_id", "idx")
        .values_list("checkpoint_id", "task_path", "channel")
    )
    paths: dict[str, list[str]] = defaultdict(list)
    by_channel: dict[tuple[str, str], list[str]] = defaultdict(list)
    for checkpoint_id, task_path, channel in writes:
        paths[checkpoint_id].append(task_path)
        if channel in (INTERRUPT, ERROR, RESUME):
            by_channel[(checkpoint_id, channel)].append(task_path)
    for node in nodes:
        if node.source == "loop" and node.parent_id:
            node.writers = writer_names(paths.get(node.parent_id, []))
        node.interrupts = writer_names(by_channel.get((node.checkpoint_id, INTERRUPT), []))
        node.errors = writer_names(by_channel.get((node.checkpoint_id, ERROR), []))
        node.resumed = bool(by_channel.get((node.checkpoint_id, RESUME)))


def _add_children(rows, nodes: list[TreeNode]) -> None:
    """Children of the page's nodes. A child is newer than its parent (ids are uuid6,
    made when the child is saved), so only rows from the page's oldest id on are read."""
    by_id = {n.checkpoint_id: n for n in nodes}
    children = rows.filter(
        checkpoint_id__gt=min(by_id), parent_checkpoint_id__in=sorted(by_id)
    ).order_by("checkpoint_id")
    for parent_id, child_id in children.values_list("parent_checkpoint_id", "checkpoint_id"):
        by_id[parent_id].children.append(child_id)
