"""Pure row shaping for ``DjangoSaver``: checkpoints split into a payload row and blobs,
configs and ``CheckpointTuple`` built from rows, the ``list`` paging cursor, and the
checks on ids a caller hands in. Nothing here reads or writes the database."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from langgraph.checkpoint.base import Checkpoint, CheckpointTuple
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from durable import models

LIST_PAGE_SIZE = 100
INLINE_TYPES = (str, int, float, bool)


def check_thread_id(thread_id: Any) -> str:
    """Return ``thread_id`` as a string, or raise ``ValueError`` if it is longer than the
    255 characters a thread id may have (``models.THREAD_ID_MAX_LENGTH``)."""
    thread_id = str(thread_id)
    if len(thread_id) > models.THREAD_ID_MAX_LENGTH:
        raise ValueError(
            f"thread_id is {len(thread_id)} characters long; the limit is "
            f"{models.THREAD_ID_MAX_LENGTH}"
        )
    return thread_id


def id_list(ids: Sequence[str], field: str) -> list[str]:
    """``ids`` as a list of strings; ``TypeError`` naming ``field`` for a single string
    (which would otherwise be read as a sequence of one-character ids)."""
    if isinstance(ids, str):
        raise TypeError(f"{field} must be a sequence of ids, not a str")
    return [str(i) for i in ids]


def chunks(items: Iterable, size: int) -> Iterator[list]:
    """``items`` in lists of at most ``size``: what one ``IN (...)`` may hold."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def split_channel_values(checkpoint: Checkpoint) -> tuple[dict, dict]:
    """Split a checkpoint into the payload row (primitive values inline, no
    ``channel_versions``) and the values that go to blobs. A ``_DeltaSnapshot`` goes to a
    blob and leaves ``True`` inline, the marker PostgresSaver uses so ``DeltaChannel``
    history can find its seed."""
    payload = dict(checkpoint)
    payload.pop("channel_versions", None)
    inline = dict(checkpoint["channel_values"])
    payload["channel_values"] = inline
    blob_values = {}
    for channel, value in checkpoint["channel_values"].items():
        if isinstance(value, _DeltaSnapshot):
            blob_values[channel] = value
            inline[channel] = True
        elif value is None or isinstance(value, INLINE_TYPES):
            continue
        else:
            blob_values[channel] = inline.pop(channel)
    return payload, blob_values


def typed(dumped: tuple[str, bytes | None], field: str) -> dict:
    """``serde.dumps_typed``'s (type, bytes) as the row's ``type`` and ``field`` columns."""
    type_, data = dumped
    return {"type": type_, field: data}


def version_keys(versions: dict) -> set[tuple[str, str]]:
    """A checkpoint's ``channel_versions`` as the (channel, version) keys of its blobs."""
    return {(channel, str(version)) for channel, version in (versions or {}).items()}


def checkpoint_config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict:
    """The ``RunnableConfig`` naming one checkpoint."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def checkpoint_tuple(
    serde: SerializerProtocol,
    row: models.Checkpoint,
    checkpoint: Checkpoint,
    blobs: dict,
    pending_writes: list,
) -> CheckpointTuple:
    """``row`` as a ``CheckpointTuple``: ``checkpoint`` (its decoded payload) gets back the
    values its ``blobs`` hold (``{(thread, ns, channel, version): (type, bytes)}``; an
    ``"empty"`` blob leaves the channel out), and the parent's config when it has one."""
    values = checkpoint["channel_values"]
    for channel, version in checkpoint["channel_versions"].items():
        stored = blobs.get((row.thread_id, row.checkpoint_ns, channel, str(version)))
        if stored is not None and stored[0] != "empty":
            values[channel] = serde.loads_typed(stored)
    config = checkpoint_config(row.thread_id, row.checkpoint_ns, row.checkpoint_id)
    parent_config = None
    if row.parent_checkpoint_id:
        parent_config = checkpoint_config(
            row.thread_id, row.checkpoint_ns, row.parent_checkpoint_id
        )
    return CheckpointTuple(config, checkpoint, row.metadata, parent_config, pending_writes)


class Write(NamedTuple):
    """One ``CheckpointWrite`` row as read back for a checkpoint's pending writes."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str
    blob: bytes


class Pages:
    """Where ``list`` stands: how many checkpoints it may still return (``limit``) and
    the keyset cursor, (checkpoint_id, pk) of the last row read. ``ValueError`` for a
    negative ``limit``."""

    def __init__(self, limit: int | None):
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be 0 or more, got {limit}")
        self.remaining = limit
        self.cursor: tuple[str, int] | None = None
        self.done = limit == 0

    def next_size(self) -> int:
        """Rows to read next; 0 once the listing is over."""
        if self.done:
            return 0
        return LIST_PAGE_SIZE if self.remaining is None else min(self.remaining, LIST_PAGE_SIZE)

    def advance(self, page: list, size: int) -> None:
        if self.remaining is not None:
            self.remaining -= len(page)
        self.done = len(page) < size or self.remaining == 0
        if page:
            self.cursor = (page[-1].checkpoint_id, page[-1].pk)
