"""Reading a thread's state: its latest ``StateSnapshot`` or one at a checkpoint, its
history, pending interrupts and writes, and the shape of its graph. Nothing here writes.

Each read goes through LangGraph's own ``get_state`` / ``get_state_history`` on the
thread's compiled graph (``durable.graphs``), so what the console and the API show is
what a resumed run would see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.channels.last_value import LastValue
from langgraph.constants import START
from langgraph.types import StateSnapshot

from durable.engine.checks import InvalidRequest, check_storable, checkpoint_config
from durable.graphs import thread_graph
from durable.models import Checkpoint, Thread


def config_for(thread: Thread, checkpoint_id: str | None = None) -> dict:
    """The LangGraph config of ``thread`` (its latest checkpoint), or of one of its
    checkpoints in the root namespace."""
    configurable = {"thread_id": thread.thread_id}
    if checkpoint_id:
        configurable.update(checkpoint_ns="", checkpoint_id=checkpoint_id)
    return {"configurable": configurable}


def _empty_state(thread: Thread) -> StateSnapshot:
    return StateSnapshot(
        values={},
        next=(),
        config=config_for(thread),
        metadata=None,
        created_at=None,
        parent_config=None,
        tasks=(),
        interrupts=(),
    )


def thread_state(thread: Thread, *, subgraphs: bool = False) -> StateSnapshot:
    """The thread's latest ``StateSnapshot`` (values, next, tasks, interrupts); with
    ``subgraphs``, each task's subgraph state in ``task.state``. A thread that no graph
    has run on yet (created bare through the API) has an empty snapshot."""
    if not thread.graph:
        return _empty_state(thread)
    return thread_graph(thread).get_state(config_for(thread), subgraphs=subgraphs)


def state_at(
    thread: Thread, checkpoint_id: str | None, *, checkpoint_ns: str = "", subgraphs: bool = False
) -> StateSnapshot:
    """The ``StateSnapshot`` at one of the thread's checkpoints, in the graph itself or,
    with ``checkpoint_ns`` (``"node:task_id"`` parts joined by ``|``), in one of its
    subgraphs (``subgraphs`` as for ``thread_state``). With ``checkpoint_ns`` and no
    ``checkpoint_id`` (the pointer a task's ``state`` is while its subgraph is not
    expanded), the subgraph's latest state, as LangGraph's ``get_state`` reads such a
    config. Raises ``InvalidRequest("checkpoint_id")`` when the thread has no such
    checkpoint, and ``InvalidRequest("checkpoint_ns")`` when the graph has no subgraph
    there."""
    if checkpoint_id is None and checkpoint_ns:
        config = _subgraph_pointer(thread, checkpoint_ns)
    else:
        config = checkpoint_config(thread, checkpoint_id, checkpoint_ns)
    try:
        return graph_of(thread).get_state(config, subgraphs=subgraphs)
    except ValueError as exc:
        if checkpoint_ns and "Subgraph" in str(exc):
            raise InvalidRequest(
                "checkpoint_ns", f"Graph {thread.graph!r} has no subgraph at {checkpoint_ns!r}."
            ) from None
        raise


def _subgraph_pointer(thread: Thread, checkpoint_ns: str) -> dict:
    """The config of the latest checkpoint of the thread's subgraph at ``checkpoint_ns``;
    ``InvalidRequest("checkpoint_ns")`` when it has none there."""
    check_storable(checkpoint_ns, "checkpoint_ns")
    if not Checkpoint.objects.filter(
        thread_id=thread.thread_id, checkpoint_ns=checkpoint_ns
    ).exists():
        raise InvalidRequest(
            "checkpoint_ns", f"Thread {thread.name!r} has no subgraph at {checkpoint_ns[:200]!r}."
        )
    return {"configurable": {"thread_id": thread.thread_id, "checkpoint_ns": checkpoint_ns}}


def pending_writes(
    thread: Thread, checkpoint_id: str, *, checkpoint_ns: str = ""
) -> list[tuple[str, str, Any]]:
    """The writes saved against one of the thread's checkpoints, decoded by the saver's
    serde: ``[(task_id, channel, value), ...]`` in LangGraph's order (task path, task
    id, index). They are the tasks' results that the next checkpoint applied, or, on
    the latest checkpoint, what a resumed run keeps (finished parallel tasks,
    interrupts, errors). Errors as for ``state_at``."""
    config = checkpoint_config(thread, checkpoint_id, checkpoint_ns)
    found = graph_of(thread).checkpointer.get_tuple(config)
    return list(found.pending_writes or []) if found else []


def graph_drawing(thread: Thread):
    """LangGraph's own drawing of the thread's graph (``compiled.get_graph()``): a
    ``langchain_core.runnables.graph.Graph`` with ``nodes`` ({id: Node}) and ``edges``
    (``source``, ``target``, ``conditional``). Raises ``InvalidRequest("thread")`` for a
    thread with no graph yet."""
    return graph_of(thread).get_graph()


def thread_history(
    thread: Thread,
    limit: int = 50,
    *,
    before: str | None = None,
    filter: dict[str, Any] | None = None,
) -> list[StateSnapshot]:
    """The thread's checkpoints as ``StateSnapshot``s, newest first, at most ``limit``:
    only those older than its checkpoint ``before``, and whose metadata has every
    key/value of ``filter``. Raises ``InvalidRequest("before")`` when ``before`` is not
    one of the thread's checkpoints, ``InvalidRequest("filter...")`` for a filter
    holding text no database can compare."""
    check_storable(filter, "filter")
    before_config = None
    if before is not None:
        try:
            before_config = checkpoint_config(thread, before)
        except InvalidRequest as exc:
            raise InvalidRequest("before", exc.message) from None
    if not thread.graph:
        return []
    history = thread_graph(thread).get_state_history(
        config_for(thread), limit=limit, before=before_config, filter=filter
    )
    return list(history)


def pending_interrupts(thread: Thread) -> list:
    """The ``Interrupt``s (``.id``, ``.value``) waiting on the thread's latest checkpoint,
    from every task (``StateSnapshot.interrupts``)."""
    return list(thread_state(thread).interrupts)


@dataclass(frozen=True)
class GraphShape:
    """The structure of a thread's graph, for pages that explain ``as_node`` and replay.

    ``nodes``: node names in the order the graph added them, ``__start__`` first;
    LangGraph's internal nodes (other ``__``-prefixed names, such as error handlers) are
    left out. ``edges``: ``(source, target)`` pairs from LangGraph's own drawing
    (``get_graph()``): fixed and conditional edges and declared ``Command``
    destinations, with ``"__end__"`` as a target. ``state_keys``: the keys
    ``update_state`` takes. ``combined_keys``: those whose channel combines an update
    with the value it has (a reducer such as ``Annotated[list, operator.add]``)
    instead of replacing it."""

    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    state_keys: tuple[str, ...]
    combined_keys: frozenset[str]

    def after(self, names) -> list[str]:
        """The nodes reachable from ``names`` along ``edges`` (``names`` themselves
        only when a loop leads back to them), in ``nodes`` order: what may run after
        them, depending on the branches taken."""
        seen: set[str] = set()
        todo = list(names)
        while todo:
            source = todo.pop()
            for edge_source, target in self.edges:
                if edge_source == source and target not in seen:
                    seen.add(target)
                    todo.append(target)
        return [node for node in self.nodes if node in seen]


def graph_shape(thread: Thread) -> GraphShape:
    """The ``GraphShape`` of the thread's graph. Raises ``InvalidRequest("thread")``
    for a bare thread, which has no graph yet."""
    compiled = graph_of(thread)
    nodes = tuple(n for n in compiled.nodes if n == START or not n.startswith("__"))
    edges = tuple((e.source, e.target) for e in compiled.get_graph().edges)
    channels = compiled.builder.channels
    combined = frozenset(key for key, ch in channels.items() if not isinstance(ch, LastValue))
    return GraphShape(nodes, edges, tuple(channels), combined)


def graph_of(thread: Thread):
    """The compiled graph of ``thread``, with its tenant's store (``thread_graph``).
    Raises ``InvalidRequest("thread")`` for a bare thread, which has none until its
    first run."""
    if not thread.graph:
        raise InvalidRequest(
            "thread", f"Thread {thread.name!r} has no graph yet: start a run on it first."
        )
    return thread_graph(thread)
