"""A LangGraph ``StateSnapshot`` as JSON, for both surfaces: the API's ``ThreadState``
(with its tasks, interrupts and checkpoints, as the Agent Server answers them) and the
console's download of one checkpoint. Values pass through ``durable.values.jsonable``:
whatever the graph's state holds comes out JSON-safe, the checkpoint itself untouched."""

from __future__ import annotations

from typing import Any

from langgraph.types import StateSnapshot

from durable.models import Thread
from durable.redaction import redact_under
from durable.values import jsonable


def checkpoint_json(config: dict | None, thread: Thread) -> dict | None:
    """A checkpoint's config as the Agent Server's ``Checkpoint``, naming the thread by
    its ``name``; ``None`` for no config."""
    if not config:
        return None
    c = config["configurable"]
    return {
        "thread_id": thread.name,
        "checkpoint_ns": c.get("checkpoint_ns", ""),
        "checkpoint_id": c.get("checkpoint_id"),
        "checkpoint_map": c.get("checkpoint_map"),
    }


def interrupt_json(item) -> dict:
    """A LangGraph ``Interrupt``: ``{"value", "id"}``."""
    return {"value": jsonable(item.value), "id": item.id}


def task_json(task, thread: Thread, *, subgraph: bool = True) -> dict:
    """A ``PregelTask`` as the Agent Server's ``ThreadTask``: ``id``, ``name``, ``error``
    (an exception as ``Type(message)``; the saver gives back stored errors as text),
    ``interrupts``, ``checkpoint`` (a subgraph's, when the task runs one), ``state`` (the
    subgraph's state, when read with ``subgraphs``) and ``result``. ``subgraph=False``
    leaves out ``checkpoint`` and ``state``."""
    error = task.error
    if isinstance(error, BaseException):
        error = f"{type(error).__name__}({error})"
    found = {
        "id": task.id,
        "name": task.name,
        "error": jsonable(error) if error is not None else None,
        "interrupts": [interrupt_json(i) for i in task.interrupts],
    }
    if subgraph:
        nested = task.state
        found["checkpoint"] = checkpoint_json(nested, thread) if isinstance(nested, dict) else None
        found["state"] = state_json(nested, thread) if isinstance(nested, StateSnapshot) else None
    found["result"] = jsonable(task.result) if task.result is not None else None
    return found


def _contents(snapshot: StateSnapshot, thread: Thread, *, subgraph: bool) -> dict:
    """What both shapes hold of a snapshot: ``values``, ``next``, ``metadata``, ``tasks``."""
    return {
        "values": jsonable(snapshot.values),
        "next": list(snapshot.next),
        "metadata": jsonable(snapshot.metadata),
        "tasks": [task_json(t, thread, subgraph=subgraph) for t in snapshot.tasks],
    }


def state_json(snapshot: StateSnapshot, thread: Thread) -> dict:
    """A ``StateSnapshot`` of ``thread`` as the Agent Server's ``ThreadState``."""
    contents = _contents(snapshot, thread, subgraph=True)
    return {
        "values": contents["values"],
        "next": contents["next"],
        "checkpoint": checkpoint_json(snapshot.config, thread),
        "metadata": contents["metadata"],
        "created_at": snapshot.created_at,
        "parent_checkpoint": checkpoint_json(snapshot.parent_config, thread),
        "tasks": contents["tasks"],
        "interrupts": [interrupt_json(i) for i in snapshot.interrupts],
    }


def checkpoint_download(
    snapshot: StateSnapshot,
    thread: Thread,
    checkpoint_id: str,
    checkpoint_ns: str,
    writes: list[tuple[str, str, Any]],
) -> dict:
    """One checkpoint of ``thread`` whole, as the console's JSON download: the thread's
    ``thread_id`` (LangGraph's) and ``name``, ``checkpoint_ns``, ``checkpoint_id``,
    ``values``, ``next``, ``tasks`` (without subgraphs), ``pending_writes`` (``writes``:
    ``(task_id, channel, value)``), ``metadata``, and LangGraph's ``config`` and
    ``parent_config`` as they are."""
    contents = _contents(snapshot, thread, subgraph=False)
    return jsonable(
        {
            "thread_id": thread.thread_id,
            "name": thread.name,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
            "values": contents["values"],
            "next": contents["next"],
            "tasks": contents["tasks"],
            "pending_writes": [
                {"task_id": task_id, "channel": channel, "value": redact_under(channel, value)}
                for task_id, channel, value in writes
            ],
            "metadata": contents["metadata"],
            "config": snapshot.config,
            "parent_config": snapshot.parent_config,
        }
    )
