"""``DjangoSaver``: a LangGraph checkpointer over the Django ORM.

Any graph compiles with it unchanged::

    graph = builder.compile(checkpointer=DjangoSaver())
    graph.invoke(inputs, {"configurable": {"thread_id": "t-1"}})

Storage follows LangGraph's PostgresSaver (``langgraph/checkpoint/postgres``): the
checkpoint dict goes in ``Checkpoint`` with primitive channel values inline, every other
channel value goes in ``CheckpointBlob`` once per (channel, version) and only for the
channels in ``new_versions``; task writes go in ``CheckpointWrite``. Values are encoded by
``self.serde`` (LangGraph's ``JsonPlusSerializer`` by default); nothing is ever unpickled.

Connections: LangGraph calls a sync saver from its own worker threads, and Django keeps
one connection per thread. Every method leaves the calling thread's connection as it
found it: a connection the call had to open is closed when the call ends (outside an
atomic block), so a finished run leaves no connection behind.

Because those threads use their own connections, a graph run inside the caller's
``transaction.atomic()`` does not see, or roll back with, the caller's transaction; on
SQLite, whose writers take a file lock, it waits for that transaction and fails with
"database is locked". Run graphs outside atomic blocks (and without ``ATOMIC_REQUESTS``),
as the Celery worker does.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connections, transaction
from django.db.models import Q
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from durable import models
from durable.metadata import MetadataKeyEquals

LIST_PAGE_SIZE = 100
_INLINE_TYPES = (str, int, float, bool)


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


class DjangoSaver(BaseCheckpointSaver[str]):
    """A ``BaseCheckpointSaver`` storing checkpoints in this project's ORM tables.

    Args:
        serde: the serializer for checkpoints, blobs and writes; LangGraph's
            ``JsonPlusSerializer`` when omitted.
        using: the Django database alias to read and write (default ``"default"``).

    The async methods run the sync ones in a worker thread (``asyncio.to_thread``), so
    they never block the event loop.
    """

    def __init__(self, *, serde: SerializerProtocol | None = None, using: str = "default"):
        super().__init__(serde=serde)
        self.using = using

    # -- connection hygiene -------------------------------------------------------

    @contextmanager
    def _db(self) -> Iterator[None]:
        conn = connections[self.using]
        opened_here = conn.connection is None
        try:
            yield
        finally:
            if opened_here and not conn.in_atomic_block:
                conn.close()

    # -- writes -------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save ``checkpoint`` as a child of ``config``'s checkpoint (if it names one).

        Returns the config of the saved checkpoint: ``{"configurable": {"thread_id",
        "checkpoint_ns", "checkpoint_id"}}``. Raises ``ValueError`` for a thread id over
        255 characters.
        """
        conf = config["configurable"]
        thread_id = check_thread_id(conf["thread_id"])
        checkpoint_ns = conf.get("checkpoint_ns", "") or ""
        payload, blob_values = _split_channel_values(checkpoint)
        blobs = [
            models.CheckpointBlob(
                thread_id=thread_id,
                checkpoint_ns=checkpoint_ns,
                channel=channel,
                version=str(version),
                **_typed(self.serde.dumps_typed(blob_values[channel]), "blob"),
            )
            for channel, version in new_versions.items()
            if channel in blob_values
        ]
        row = models.Checkpoint(
            thread_id=thread_id,
            checkpoint_ns=checkpoint_ns,
            checkpoint_id=checkpoint["id"],
            parent_checkpoint_id=conf.get("checkpoint_id"),
            metadata=get_serializable_checkpoint_metadata(config, metadata),
            **_typed(self.serde.dumps_typed(payload), "checkpoint"),
        )
        with self._db(), transaction.atomic(using=self.using):
            if blobs:
                models.CheckpointBlob.objects.using(self.using).bulk_create(
                    blobs, ignore_conflicts=True
                )
            models.Checkpoint.objects.using(self.using).bulk_create(
                [row],
                update_conflicts=True,
                unique_fields=["thread_id", "checkpoint_ns", "checkpoint_id"],
                update_fields=["type", "checkpoint", "metadata"],
            )
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Save a task's writes against the checkpoint in ``config``.

        Special channels (``__error__``, ``__interrupt__``, ``__scheduled__``,
        ``__resume__``: ``WRITES_IDX_MAP``) replace an earlier write at the same slot;
        a regular write whose (task_id, idx) is already stored is kept as it was, as in
        LangGraph's PostgresSaver.
        """
        conf = config["configurable"]
        thread_id = check_thread_id(conf["thread_id"])
        rows = [
            models.CheckpointWrite(
                thread_id=thread_id,
                checkpoint_ns=conf.get("checkpoint_ns", "") or "",
                checkpoint_id=conf["checkpoint_id"],
                task_id=task_id,
                task_path=task_path,
                idx=WRITES_IDX_MAP.get(channel, idx),
                channel=channel,
                **_typed(self.serde.dumps_typed(value), "blob"),
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        if not rows:
            return
        manager = models.CheckpointWrite.objects.using(self.using)
        with self._db():
            if all(channel in WRITES_IDX_MAP for channel, _ in writes):
                manager.bulk_create(
                    rows,
                    update_conflicts=True,
                    unique_fields=["thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"],
                    update_fields=["channel", "type", "blob", "task_path"],
                )
            else:
                manager.bulk_create(rows, ignore_conflicts=True)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of ``thread_id``, in every namespace."""
        thread_id = check_thread_id(thread_id)
        with self._db(), transaction.atomic(using=self.using):
            for model in (models.CheckpointWrite, models.CheckpointBlob, models.Checkpoint):
                model.objects.using(self.using).filter(thread_id=thread_id).delete()

    # -- reads --------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by ``config`` (its ``checkpoint_id``), or the latest of
        its thread and ``checkpoint_ns`` when it names none; ``None`` if there is none.

        ``pending_writes`` are ordered by (task_path, task_id, idx), LangGraph's
        ``writes_sort_key``.
        """
        conf = config["configurable"]
        rows = models.Checkpoint.objects.using(self.using).filter(
            thread_id=check_thread_id(conf["thread_id"]),
            checkpoint_ns=conf.get("checkpoint_ns", "") or "",
        )
        if checkpoint_id := get_checkpoint_id(config):
            rows = rows.filter(checkpoint_id=checkpoint_id)
        else:
            rows = rows.order_by("-checkpoint_id")
        with self._db():
            found = list(rows[:1])
            return self._load(found)[0] if found else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first (by checkpoint id).

        ``config`` narrows to a thread, and to a namespace when it carries
        ``checkpoint_ns``, and to one checkpoint when it carries ``checkpoint_id``;
        ``filter`` keeps checkpoints whose metadata has each key equal to the value;
        ``before`` keeps checkpoints older than that config's checkpoint id; ``limit``
        caps the count. Rows are read ``LIST_PAGE_SIZE`` at a time.
        """
        pages = _Pages(limit)
        while pages.next_size():
            yield from self._list_page(config, filter, before, pages)

    def _list_page(self, config, filter, before, pages: _Pages) -> list[CheckpointTuple]:
        rows = _list_query(self.using, config, filter, before)
        if pages.cursor is not None:
            last_id, last_pk = pages.cursor
            rows = rows.filter(
                Q(checkpoint_id__lt=last_id) | Q(checkpoint_id=last_id, pk__lt=last_pk)
            )
        size = pages.next_size()
        with self._db():
            page = list(rows.order_by("-checkpoint_id", "-pk")[:size])
            tuples = self._load(page)
        pages.advance(page, size)
        return tuples

    def _load(self, rows: Sequence[models.Checkpoint]) -> list[CheckpointTuple]:
        """Turn checkpoint rows into tuples with three more queries per (thread,
        namespace): two for their blobs (keys, then values), one for their writes."""
        blobs: dict[tuple, tuple[str, bytes | None]] = {}
        writes: dict[tuple, list] = defaultdict(list)
        groups: dict[tuple[str, str], list] = defaultdict(list)
        checkpoints = {}
        for row in rows:
            groups[(row.thread_id, row.checkpoint_ns)].append(row)
            checkpoints[row.pk] = self.serde.loads_typed((row.type, bytes(row.checkpoint)))
        for (thread_id, ns), group in groups.items():
            wanted = {
                (channel, str(version))
                for row in group
                for channel, version in checkpoints[row.pk]["channel_versions"].items()
            }
            blobs.update(self._blobs(thread_id, ns, wanted))
            for write in models.CheckpointWrite.objects.using(self.using).filter(
                thread_id=thread_id,
                checkpoint_ns=ns,
                checkpoint_id__in=[row.checkpoint_id for row in group],
            ):
                writes[(thread_id, ns, write.checkpoint_id)].append(write)
        for found in writes.values():
            # In Python, as PostgresSaver does: a database collation must not reorder
            # task paths, or an order-sensitive reducer rebuilds a different value.
            found.sort(key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
        return [
            self._tuple(
                row,
                checkpoints[row.pk],
                blobs,
                [
                    (w.task_id, w.channel, self.serde.loads_typed((w.type, bytes(w.blob))))
                    for w in writes[(row.thread_id, row.checkpoint_ns, row.checkpoint_id)]
                ],
            )
            for row in rows
        ]

    def _blobs(self, thread_id: str, ns: str, wanted: set[tuple[str, str]]) -> dict:
        """The (type, bytes) of exactly the ``wanted`` (channel, version) blobs: their keys
        are matched first, so no unwanted value is ever read."""
        if not wanted:
            return {}
        blobs = models.CheckpointBlob.objects.using(self.using).filter(
            thread_id=thread_id, checkpoint_ns=ns
        )
        keys = blobs.filter(
            channel__in={c for c, _ in wanted}, version__in={v for _, v in wanted}
        ).values_list("pk", "channel", "version")
        pks = [pk for pk, channel, version in keys if (channel, version) in wanted]
        return {
            (thread_id, ns, b.channel, b.version): (
                b.type,
                None if b.blob is None else bytes(b.blob),
            )
            for b in blobs.filter(pk__in=pks)
        }

    def _tuple(self, row, checkpoint, blobs, pending_writes) -> CheckpointTuple:
        values = checkpoint["channel_values"]
        for channel, version in checkpoint["channel_versions"].items():
            stored = blobs.get((row.thread_id, row.checkpoint_ns, channel, str(version)))
            if stored is not None and stored[0] != "empty":
                values[channel] = self.serde.loads_typed(stored)
        config = {
            "configurable": {
                "thread_id": row.thread_id,
                "checkpoint_ns": row.checkpoint_ns,
                "checkpoint_id": row.checkpoint_id,
            }
        }
        parent_config = None
        if row.parent_checkpoint_id:
            parent_config = {
                "configurable": {
                    "thread_id": row.thread_id,
                    "checkpoint_ns": row.checkpoint_ns,
                    "checkpoint_id": row.parent_checkpoint_id,
                }
            }
        return CheckpointTuple(config, checkpoint, row.metadata, parent_config, pending_writes)

    def get_next_version(self, current: str | int | None, channel: None = None) -> str:
        """The version after ``current``, in PostgresSaver's format: a zero-padded
        32-digit counter, a dot, and a random fraction (``langgraph/checkpoint/postgres/
        base.py``), so versions sort as strings and never collide across forks."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    # -- async: the sync methods in a worker thread --------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        pages = _Pages(limit)
        while pages.next_size():
            for item in await asyncio.to_thread(self._list_page, config, filter, before, pages):
                yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)


def _split_channel_values(checkpoint: Checkpoint) -> tuple[dict, dict]:
    """Split a checkpoint into the payload row (primitive values inline) and the values
    that go to blobs. A ``_DeltaSnapshot`` goes to a blob and leaves ``True`` inline, the
    marker PostgresSaver uses so ``DeltaChannel`` history can find its seed."""
    payload = dict(checkpoint)
    inline = dict(checkpoint["channel_values"])
    payload["channel_values"] = inline
    blob_values = {}
    for channel, value in checkpoint["channel_values"].items():
        if isinstance(value, _DeltaSnapshot):
            blob_values[channel] = value
            inline[channel] = True
        elif value is None or isinstance(value, _INLINE_TYPES):
            continue
        else:
            blob_values[channel] = inline.pop(channel)
    return payload, blob_values


class _Pages:
    """Where ``list`` stands: how many checkpoints it may still return (``limit``) and
    the keyset cursor, (checkpoint_id, pk) of the last row read."""

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


def _typed(dumped: tuple[str, bytes | None], field: str) -> dict:
    type_, data = dumped
    return {"type": type_, field: data}


def _list_query(using: str, config, filter, before):
    rows = models.Checkpoint.objects.using(using)
    if config:
        conf = config["configurable"]
        rows = rows.filter(thread_id=check_thread_id(conf["thread_id"]))
        if conf.get("checkpoint_ns") is not None:
            rows = rows.filter(checkpoint_ns=conf["checkpoint_ns"])
        if checkpoint_id := get_checkpoint_id(config):
            rows = rows.filter(checkpoint_id=checkpoint_id)
    for key, value in (filter or {}).items():
        rows = rows.filter(MetadataKeyEquals(key, value))
    if before is not None:
        rows = rows.filter(checkpoint_id__lt=get_checkpoint_id(before))
    return rows
