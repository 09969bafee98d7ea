"""The answers to a JS graph's checkpointer calls, given by the project's saver: the one
writer of checkpoints, blobs and writes, for JS graphs as for Python ones. Values arrive
and leave as JSON; the saver's serde stores them as it stores any value."""

from __future__ import annotations

from typing import Any

from durable.persistence.checkpoint import DjangoSaver


def _tuple(found) -> dict | None:
    if found is None:
        return None
    return {
        "config": found.config,
        "checkpoint": found.checkpoint,
        "metadata": found.metadata,
        "parent_config": found.parent_config,
        "pending_writes": [list(write) for write in found.pending_writes or ()],
    }


def saver_calls(saver: DjangoSaver):
    """``calls(op, fields)`` for ``Runtime.request``, answered by ``saver``."""

    def calls(op: str, fields: dict) -> Any:
        if op == "checkpoint.get_tuple":
            return _tuple(saver.get_tuple(fields["config"]))
        if op == "checkpoint.list":
            found = saver.list(
                fields["config"],
                filter=fields.get("filter"),
                before=fields.get("before"),
                limit=fields.get("limit"),
            )
            return [_tuple(item) for item in found]
        if op == "checkpoint.put":
            return saver.put(
                fields["config"], fields["checkpoint"], fields["metadata"], fields["new_versions"]
            )
        if op == "checkpoint.put_writes":
            saver.put_writes(
                fields["config"], [tuple(w) for w in fields["writes"]], fields["task_id"]
            )
            return None
        if op == "checkpoint.delete_thread":
            saver.delete_thread(fields["thread_id"])
            return None
        raise ValueError(f"unknown call {op}")

    return calls
