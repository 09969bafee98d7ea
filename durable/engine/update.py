"""LangGraph's ``update_state`` as the engine applies it: for real, in the caller's
transaction (``apply``), or on a sandbox that writes nothing, to tell what the update's
checkpoint would run next (``next_after_update``) and what its state would be
(``preview_fork``).

What runs after an update is LangGraph's to say, not the drawing's: a node that routes
with ``Command(goto=...)`` has no edges to follow, and its update without a ``goto``
leaves no next task at all. So the preview runs LangGraph's own ``update_state`` and
``get_state`` against ``Sandbox``, a saver that reads the thread's checkpoints through
the real saver and keeps whatever the update writes in memory, then throws it away.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    copy_checkpoint,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.errors import InvalidUpdateError

from durable.engine.checks import (
    COPY,
    InvalidRequest,
    check_update,
    checkpoint_config,
    schema_error,
)
from durable.engine.graph_schemas import state_properties
from durable.engine.state import graph_of
from durable.models import Thread
from durable.values import jsonable

# What an operator is told of an update whose checkpoint has no next task.
NOTHING_NEXT = "nothing would run; the thread would end here"


def run_refusal(next_tasks: Sequence[str], as_node: str | None) -> InvalidRequest | None:
    """Why a run from an update's checkpoint whose next tasks are ``next_tasks`` is
    refused (``InvalidRequest("as_node")``: it would run nothing and end "success"), or
    ``None`` when it may run. The one rule of ``fork(run=True)`` and of its preview."""
    if next_tasks:
        return None
    counts_as = f"as_node {as_node!r}" if as_node else "this update"
    return InvalidRequest(
        "as_node",
        f"With {counts_as}, {NOTHING_NEXT}: the new checkpoint has no next task. "
        "Fork without running it, or choose another as_node.",
    )


def apply(compiled, base: dict, values: Any, as_node: str | None) -> dict:
    """``compiled.update_state(base, values, as_node=as_node)``, its refusals as
    ``InvalidRequest`` (``as_node`` or ``values``); returns the new checkpoint's config.
    With the graph's own saver it writes in the caller's transaction (the saver uses
    this thread's connection)."""
    if as_node is not None and as_node != COPY:
        # LangGraph records no node on an update's checkpoint (metadata "writes" is
        # gone), and the update's task path does not name it: the saver merges the
        # config's metadata, so the history can say which node the fork counts as.
        base = {**base, "metadata": {**base.get("metadata", {}), "as_node": as_node}}
    try:
        return compiled.update_state(base, values, as_node=as_node)
    except InvalidUpdateError as exc:
        message = str(exc).split("\n")[0]
        field = "as_node" if "as_node" in message or "Node " in message else "values"
        if "Ambiguous update" in message:
            message = (
                "LangGraph cannot tell which node this update comes from (several "
                "wrote last); name one with as_node."
            )
        raise InvalidRequest(field, message) from None
    except Exception as exc:
        # update_state runs the graph's own code (the routers after as_node, reducers);
        # an update that code cannot take is refused, and the transaction undone.
        raise _reducer_refusal(compiled, values, exc) or InvalidRequest(
            "values", f"The graph could not apply this update: {type(exc).__name__}: {exc}"
        ) from None


# What a reducer's channel takes, by its JSON schema's type: the words, and an example.
TAKES = {
    "array": ("a list", "[…]"),
    "object": ("an object", '{"key": …}'),
    "string": ("text", '"…"'),
    "integer": ("a whole number", "1"),
    "number": ("a number", "1.5"),
}


def _reducer_refusal(compiled, values: Any, exc: Exception) -> InvalidRequest | None:
    """The refusal, in the key's terms, of an update a reducer could not take
    (``InvalidRequest("values.<key>")``): the first key of ``values`` whose channel
    combines updates with an operator (``Annotated[list[str], operator.add]``) and whose
    value is not of the channel's type (its state schema, ``state_properties``). ``None``
    when no key is, and the graph's own error is then all there is to say."""
    if not isinstance(values, dict):
        return None
    schemas = state_properties(compiled)
    for key, value in values.items():
        channel = compiled.channels.get(key)
        schema = schemas.get(key) or {}
        if not isinstance(channel, BinaryOperatorAggregate) or schema.get("type") not in TAKES:
            continue
        if schema_error(jsonable(value), schema) is None:
            continue
        kind, example = TAKES[schema["type"]]
        if schema["type"] == "array":
            items = (schema.get("items") or {}).get("type")
            example = f"[{TAKES[items][1]}]" if items in TAKES else example
        whole = {"array": "list", "object": "object"}.get(schema["type"], "value")
        return InvalidRequest(
            f"values.{key}",
            f"{key}: this key adds what you give to its {whole} (its reducer); give "
            f"{kind}, e.g. {example} (the reducer raised {type(exc).__name__}).",
        )
    return None


def next_after_update(
    thread: Thread, checkpoint_id: str, values: Any = None, *, as_node: str | None = None
) -> tuple[str, ...]:
    """The names of the tasks LangGraph would run next (the ``next`` of the checkpoint
    that ``fork(thread, checkpoint_id, values, as_node=as_node)`` would write), or
    ``()`` when the thread would end there. Nothing is written: the update runs on a
    ``Sandbox``. Raises ``InvalidRequest`` as ``fork`` would refuse the update
    (``checkpoint_id``, ``as_node``, ``values``)."""
    return preview_fork(thread, checkpoint_id, values, as_node=as_node).next


@dataclass(frozen=True)
class ForkPreview:
    """What a fork would write, computed by LangGraph on a ``Sandbox``: ``before``, the
    checkpoint's state values; ``after``, the values of the checkpoint the fork would
    write (the update passed through the channels' reducers: ``add_messages`` appends,
    or replaces a message of the same id); ``next``, the tasks LangGraph would run from
    it (``()``: the thread would end there); ``run_refused``, why ``fork(run=True)`` would
    be refused (``run_refusal``'s message), ``""`` when it would run."""

    before: dict
    after: dict
    next: tuple[str, ...]
    run_refused: str = ""


def preview_fork(
    thread: Thread, checkpoint_id: str, values: Any = None, *, as_node: str | None = None
) -> ForkPreview:
    """``fork(thread, checkpoint_id, values, as_node=as_node)`` as it would turn out,
    writing nothing: LangGraph's own ``update_state`` and ``get_state`` on a ``Sandbox``
    over the thread's saver. Raises ``InvalidRequest`` as ``fork`` would refuse the
    update (``checkpoint_id``, ``as_node``, ``values``)."""
    base = checkpoint_config(thread, checkpoint_id)
    compiled = graph_of(thread)
    check_update(compiled, values, as_node)
    sandboxed = compiled.copy({"checkpointer": Sandbox(compiled.checkpointer)})
    before = sandboxed.get_state(base)
    after = sandboxed.get_state(apply(sandboxed, base, values, as_node))
    refused = run_refusal(after.next, as_node)
    return ForkPreview(
        before=before.values,
        after=after.values,
        next=after.next,
        run_refused=refused.message if refused else "",
    )


class Sandbox(BaseCheckpointSaver):
    """A saver over ``base`` that writes nothing there: reads go to ``base``, and what
    is put is kept in this object, which reads it back (a checkpoint by its id; writes
    put against one of ``base``'s checkpoints come after its own pending writes).
    Enough of a saver for ``update_state`` and ``get_state``: no ``list``, no async."""

    def __init__(self, base: BaseCheckpointSaver):
        super().__init__(serde=base.serde)
        self.base = base
        self.saved: dict[str, CheckpointTuple] = {}
        self.writes: defaultdict[str, list] = defaultdict(list)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is None and self.saved:
            checkpoint_id = max(self.saved)  # uuid6 ids sort by time: the latest put
        found = self.saved.get(checkpoint_id) or self.base.get_tuple(config)
        if found is None:
            return None
        extra = self.writes.get(found.checkpoint["id"], [])
        return found._replace(pending_writes=[*(found.pending_writes or []), *extra])

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        conf = config["configurable"]
        where = {"thread_id": conf["thread_id"], "checkpoint_ns": conf.get("checkpoint_ns", "")}
        saved = {"configurable": {**where, "checkpoint_id": checkpoint["id"]}}
        parent_id = conf.get("checkpoint_id")
        parent = {"configurable": {**where, "checkpoint_id": parent_id}} if parent_id else None
        self.saved[checkpoint["id"]] = CheckpointTuple(
            saved,
            copy_checkpoint(checkpoint),
            get_serializable_checkpoint_metadata(config, metadata),
            parent,
            [],
        )
        return saved

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        target = self.writes[config["configurable"]["checkpoint_id"]]
        target.extend((task_id, channel, value) for channel, value in writes)

    def get_next_version(self, current, channel=None):
        return self.base.get_next_version(current, channel)


def state_schema(thread: Thread) -> dict:
    """``{key: JSON schema}``: what each state key of the thread's graph takes, by its
    channel's type (``{}`` where the type has no JSON schema), for a form that edits
    values as what they are. Raises ``InvalidRequest("thread")`` for a bare thread."""
    return state_properties(graph_of(thread))
