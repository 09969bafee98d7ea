"""``DjangoSaver``: a LangGraph checkpointer over the Django ORM, its public methods. The
SQL is in ``statements``, row shaping in ``rows``, what pruning keeps in ``pruning``."""

from __future__ import annotations

import asyncio
import functools
import operator
import random
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

from django.db import transaction
from django.db.models import Q
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from durable import db as sql
from durable import models
from durable.metrics import process as metrics
from durable.persistence.checkpoint import pruning, statements
from durable.persistence.checkpoint.pruning import Counts, PrunePlan
from durable.persistence.checkpoint.rows import (
    Pages,
    Write,
    check_thread_id,
    checkpoint_config,
    checkpoint_tuple,
    chunks,
    id_list,
    split_channel_values,
    typed,
)
from durable.persistence.metadata import MetadataKeyEquals
from durable.persistence.serde import default_serde

__all__ = ["Counts", "DjangoSaver", "PrunePlan", "check_thread_id"]


class DjangoSaver(BaseCheckpointSaver[str]):
    """A ``BaseCheckpointSaver`` storing checkpoints in this project's ORM tables. Any
    graph compiles with it unchanged::

        graph = builder.compile(checkpointer=DjangoSaver())
        graph.invoke(inputs, {"configurable": {"thread_id": "t-1"}})

    Storage follows LangGraph's PostgresSaver (``langgraph/checkpoint/postgres``): the
    checkpoint dict goes in ``Checkpoint`` with primitive channel values inline, every
    other channel value goes in ``CheckpointBlob`` once per (channel, version) and only
    for the channels in ``new_versions``; task writes go in ``CheckpointWrite``. Values
    are encoded by ``self.serde``; nothing is ever unpickled.

    Connections: LangGraph calls a sync saver from its own worker threads, and Django
    keeps one connection per thread. Every method leaves the calling thread's connection
    as it found it: a connection the call had to open is closed when the call ends
    (outside an atomic block), so a finished run leaves no connection behind.

    Because those threads use their own connections, a graph run inside the caller's
    ``transaction.atomic()`` does not see, or roll back with, the caller's transaction;
    on SQLite, whose writers take a file lock, it waits for that transaction and fails
    with "database is locked". Run graphs outside atomic blocks (and without
    ``ATOMIC_REQUESTS``), as the Celery worker does.

    Args:
        serde: the serializer for checkpoints, blobs and writes; when omitted,
            ``durable.persistence.serde.default_serde()``: LangGraph's ``JsonPlusSerializer`` in
            strict msgpack mode, encrypted when ``DURABLE_ENCRYPTION_KEY`` is set.
        using: the Django database alias to read and write (default ``"default"``).

    The async methods run the sync ones in a worker thread (``asyncio.to_thread``), so
    they never block the event loop.
    """

    def __init__(self, *, serde: SerializerProtocol | None = None, using: str = "default"):
        super().__init__(serde=serde or default_serde())
        self.using = using

    def _db(self):
        return sql.connection_as_found(self.using)

    def _cursor(self):
        return sql.cursor(self.using)

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
        payload, blob_values = split_channel_values(checkpoint)
        blobs = [
            {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "channel": channel,
                "version": str(version),
                **typed(self._dump(blob_values[channel], f"channel {channel!r}"), "blob"),
            }
            for channel, version in new_versions.items()
            if channel in blob_values
        ]
        row = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
            "parent_checkpoint_id": conf.get("checkpoint_id"),
            "channel_versions": checkpoint["channel_versions"],
            "metadata": get_serializable_checkpoint_metadata(config, metadata),
            **typed(self._dump_payload(payload), "checkpoint"),
        }
        executed = statements.put_checkpoint(self.using, row, blobs)
        # Two statements (SQLite) need a transaction; one (PostgreSQL) is atomic as it is.
        atomic = transaction.atomic(using=self.using) if len(executed) > 1 else nullcontext()
        with metrics.CHECKPOINT_SAVE_SECONDS.labels("put").time():
            with self._db(), atomic, self._cursor() as cursor:
                for statement, params in executed:
                    cursor.execute(statement, params)
        metrics.CHECKPOINT_SAVE_BYTES.labels("put").observe(
            len(row["checkpoint"] or b"") + sum(len(b["blob"] or b"") for b in blobs)
        )
        return checkpoint_config(thread_id, checkpoint_ns, checkpoint["id"])

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
            {
                "thread_id": thread_id,
                "checkpoint_ns": conf.get("checkpoint_ns", "") or "",
                "checkpoint_id": conf["checkpoint_id"],
                "task_id": task_id,
                "task_path": task_path,
                "idx": WRITES_IDX_MAP.get(channel, idx),
                "channel": channel,
                **typed(self._dump(value, f"write to channel {channel!r}"), "blob"),
            }
            for idx, (channel, value) in enumerate(writes)
        ]
        if not rows:
            return
        special = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        statement, params = statements.put_writes(self.using, rows, special=special)
        with metrics.CHECKPOINT_SAVE_SECONDS.labels("put_writes").time():
            with self._db(), self._cursor() as cursor:
                cursor.execute(statement, params)
        metrics.CHECKPOINT_SAVE_BYTES.labels("put_writes").observe(
            sum(len(r["blob"] or b"") for r in rows)
        )

    def _dump(self, value: Any, where: str) -> tuple[str, bytes]:
        """``serde.dumps_typed(value)``; a value it cannot encode raises ``TypeError``
        naming ``where`` (the channel) and the value's type, never a silent ``None``."""
        try:
            return self.serde.dumps_typed(value)
        except Exception as exc:
            raise TypeError(
                f"{where}: cannot serialize a value of type {type(value).__name__}: {exc}"
            ) from exc

    def _dump_payload(self, payload: dict) -> tuple[str, bytes]:
        try:
            return self.serde.dumps_typed(payload)
        except Exception:
            for channel, value in payload["channel_values"].items():
                self._dump(value, f"channel {channel!r}")  # names the culprit
            raise

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint (ids kept), blob and write of ``source_thread_id``, in
        every namespace, to ``target_thread_id``. Rows the target already has are kept."""
        source = check_thread_id(source_thread_id)
        target = check_thread_id(target_thread_id)
        with self._db(), transaction.atomic(using=self.using):
            for model in (models.Checkpoint, models.CheckpointBlob, models.CheckpointWrite):
                manager = model.objects.using(self.using)
                rows = manager.filter(thread_id=source).values().iterator(chunk_size=500)
                for chunk in chunks(rows, 500):
                    copies = [model(**{**row, "id": None, "thread_id": target}) for row in chunk]
                    manager.bulk_create(copies, ignore_conflicts=True)

    # -- deleting and pruning ------------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of ``thread_id``, in every namespace."""
        with self._db(), transaction.atomic(using=self.using):
            pruning.delete_threads(self.using, [check_thread_id(thread_id)])

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints whose ``metadata["run_id"]`` is one of ``run_ids``, in
        every thread and namespace, with their writes and the blobs no remaining
        checkpoint uses. Raises ``TypeError`` for a single string.

        As LangGraph's base class warns, deleting a run whose writes a later
        ``DeltaChannel`` value is rebuilt from breaks that value; this is meant for a run
        whose checkpoints are the newest of their thread (a rollback)."""
        run_ids = id_list(run_ids, "run_ids")
        checkpoints = models.Checkpoint.objects.using(self.using)
        with self._db(), transaction.atomic(using=self.using):
            doomed: dict[tuple[str, str], list[str]] = defaultdict(list)
            for chunk in chunks(run_ids, 100):
                matching = functools.reduce(
                    operator.or_, (MetadataKeyEquals("run_id", r) for r in chunk)
                )
                for thread_id, ns, checkpoint_id in checkpoints.filter(matching).values_list(
                    "thread_id", "checkpoint_ns", "checkpoint_id"
                ):
                    doomed[(thread_id, ns)].append(checkpoint_id)
            for (thread_id, ns), ids in doomed.items():
                pruning.delete_checkpoints(self.using, thread_id, ns, ids)

    def prune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> None:
        """Prune the history of ``thread_ids``.

        ``strategy="delete"`` removes every checkpoint, blob and write of the threads.
        ``"keep_latest"`` (the default) keeps, per namespace, the latest checkpoint with
        its pending writes, or with ``keep_last=N`` the N newest, and deletes older
        checkpoints, their writes and the blobs no kept checkpoint uses; a kept
        checkpoint whose parent is deleted becomes a root. A ``DeltaChannel`` value is
        rebuilt from ancestors' writes (``get_delta_channel_history``), so for each
        channel named in a kept checkpoint's ``counters_since_delta_snapshot`` the
        ancestors back to its nearest snapshot are kept too: the first safe option in the
        ``prune`` docstring of ``langgraph/checkpoint/base``. So a DeltaChannel thread
        keeps more checkpoints than asked, and every kept one reads exactly as before.
        Checkpoints newer than the latest one read (a run still appending) are never
        touched; each thread is pruned in one transaction. Forking or replaying from a
        checkpoint being deleted is not safe.

        ``prune_plan`` with the same arguments counts what this removes. Raises
        ``TypeError`` for a single string and ``ValueError`` for another strategy or a
        bad ``keep_last`` (``pruning.kept_per_namespace``).
        """
        thread_ids = [check_thread_id(t) for t in id_list(thread_ids, "thread_ids")]
        keep = pruning.kept_per_namespace(strategy, keep_last)
        if keep is None:
            with self._db(), transaction.atomic(using=self.using):
                pruning.delete_threads(self.using, thread_ids)
            return
        for thread_id in thread_ids:
            with self._db(), transaction.atomic(using=self.using):
                pruning.keep_last(self.using, thread_id, keep)

    def prune_plan(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> dict[str, PrunePlan]:
        """The dry run of ``prune`` with the same arguments: per thread id (as a string),
        a ``PrunePlan`` whose ``removed`` counts the checkpoints, blobs and writes that
        ``prune`` would delete now and ``kept`` those it would leave. Changes nothing.
        Same errors as ``prune``."""
        thread_ids = [check_thread_id(t) for t in id_list(thread_ids, "thread_ids")]
        keep = pruning.kept_per_namespace(strategy, keep_last)
        with self._db():
            return {
                thread_id: pruning.plan(self.using, thread_id, keep) for thread_id in thread_ids
            }

    def count_rows(self, thread_id: str) -> Counts:
        """The checkpoints, blobs and writes ``thread_id`` holds, in every namespace."""
        with self._db():
            return pruning.count_rows(self.using, check_thread_id(thread_id))

    # -- reads --------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by ``config`` (its ``checkpoint_id``), or the latest of
        its thread and ``checkpoint_ns`` when it names none; ``None`` if there is none.

        ``pending_writes`` are ordered by (task_path, task_id, idx), LangGraph's
        ``writes_sort_key``.
        """
        conf = config["configurable"]
        where, params = statements.one_checkpoint(
            check_thread_id(conf["thread_id"]),
            conf.get("checkpoint_ns", "") or "",
            get_checkpoint_id(config),
        )
        with self._db():
            found = sql.select(self.using, models.Checkpoint, where, params)
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
        caps the count. Rows are read ``rows.LIST_PAGE_SIZE`` at a time.
        """
        pages = Pages(limit)
        while pages.next_size():
            yield from self._list_page(config, filter, before, pages)

    def _list_page(self, config, filter, before, pages: Pages) -> list[CheckpointTuple]:
        rows = statements.listed(self.using, config, filter, before)
        # Within one thread and namespace checkpoint ids are unique, and ordering by the
        # id alone lets PostgreSQL walk the unique index backwards and stop after
        # ``size`` rows; across threads (copy_thread keeps ids) ``pk`` breaks ties.
        one_namespace = bool(config) and config["configurable"].get("checkpoint_ns") is not None
        if pages.cursor is not None:
            last_id, last_pk = pages.cursor
            after = Q(checkpoint_id__lt=last_id)
            if not one_namespace:
                after |= Q(checkpoint_id=last_id, pk__lt=last_pk)
            rows = rows.filter(after)
        order = ("-checkpoint_id",) if one_namespace else ("-checkpoint_id", "-pk")
        size = pages.next_size()
        with self._db():
            page = list(rows.order_by(*order)[:size])
            tuples = self._load(page)
        pages.advance(page, size)
        return tuples

    def _load(self, rows: Sequence[models.Checkpoint]) -> list[CheckpointTuple]:
        """Turn checkpoint rows into tuples with one more query per (thread, namespace),
        reading their blobs and their pending writes together."""
        blobs: dict[tuple, tuple[str, bytes | None]] = {}
        writes: dict[tuple, list] = defaultdict(list)
        groups: dict[tuple[str, str], list] = defaultdict(list)
        checkpoints = {}
        for row in rows:
            groups[(row.thread_id, row.checkpoint_ns)].append(row)
            checkpoints[row.pk] = self.serde.loads_typed((row.type, bytes(row.checkpoint)))
            checkpoints[row.pk]["channel_versions"] = row.channel_versions
        for (thread_id, ns), group in groups.items():
            wanted = {
                (channel, str(version))
                for row in group
                for channel, version in row.channel_versions.items()
            }
            found_blobs, found_writes = self._read(
                thread_id, ns, wanted, [row.checkpoint_id for row in group]
            )
            blobs.update(found_blobs)
            writes.update(found_writes)
        return [
            checkpoint_tuple(
                self.serde,
                row,
                checkpoints[row.pk],
                blobs,
                [
                    (w.task_id, w.channel, self.serde.loads_typed((w.type, w.blob)))
                    for w in writes.get((row.thread_id, row.checkpoint_ns, row.checkpoint_id), [])
                ],
            )
            for row in rows
        ]

    def _blobs(self, thread_id: str, ns: str, wanted: set[tuple[str, str]]) -> dict:
        """The (type, bytes) of exactly the ``wanted`` (channel, version) blobs."""
        return self._read(thread_id, ns, wanted, [])[0]

    def _read(
        self, thread_id: str, ns: str, wanted: set[tuple[str, str]], checkpoint_ids: list[str]
    ) -> tuple[dict, dict]:
        """The ``wanted`` blobs and the writes of ``checkpoint_ids`` in one query
        (``statements.blobs_and_writes``), the writes sorted by ``writes_sort_key`` (in
        Python, as PostgresSaver does: a database collation must not reorder task paths,
        or an order-sensitive reducer rebuilds a different value). Returns ``({(thread,
        ns, channel, version): (type, bytes)}, {(thread, ns, checkpoint_id): [Write,
        ...]})``."""
        blobs: dict[tuple, tuple[str, bytes | None]] = {}
        writes: dict[tuple, list[Write]] = defaultdict(list)
        query = statements.blobs_and_writes(self.using, thread_id, ns, wanted, checkpoint_ids)
        if query is None:
            return blobs, writes
        with self._cursor() as cursor:
            cursor.execute(*query)
            for kind, channel, key, type_, data, task_id, task_path, idx in cursor.fetchall():
                data = None if data is None else bytes(data)
                if kind == "b":
                    blobs[(thread_id, ns, channel, key)] = (type_, data)
                else:
                    writes[(thread_id, ns, key)].append(
                        Write(task_id, task_path, idx, channel, type_, data)
                    )
        for found in writes.values():
            found.sort(key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
        return blobs, writes

    # -- DeltaChannel history ------------------------------------------------------

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Per channel, the writes on the parent chain of ``config``'s checkpoint (oldest
        first, each checkpoint's in ``writes_sort_key`` order) back to the nearest
        ancestor holding a stored value (a ``_DeltaSnapshot`` blob), returned as
        ``seed``; the contract of ``BaseCheckpointSaver.get_delta_channel_history``.

        The chain is read with a recursive query over parent ids, ``pruning.CHAIN_PAGE``
        ancestors at a time, then the writes and seeds in one query each, instead of one
        ``get_tuple`` per ancestor. A primitive value kept inline before a channel became
        a ``DeltaChannel`` is not taken as a seed (PostgresSaver does take it).
        """
        channels = list(channels)
        if not channels:
            return {}
        conf = config["configurable"]
        thread_id = check_thread_id(conf["thread_id"])
        ns = conf.get("checkpoint_ns", "") or ""
        target = models.Checkpoint.objects.using(self.using).filter(
            thread_id=thread_id, checkpoint_ns=ns
        )
        if checkpoint_id := get_checkpoint_id(config):
            target = target.filter(checkpoint_id=checkpoint_id)
        else:
            target = target.order_by("-checkpoint_id")
        with self._db():
            parent = list(target.values_list("parent_checkpoint_id", flat=True)[:1])
            chain, seeds = pruning.delta_chain(
                self.using, thread_id, ns, parent[0] if parent else None, channels
            )
            return self._delta_history(thread_id, ns, channels, chain, seeds)

    def _delta_history(self, thread_id, ns, channels, chain, seeds) -> dict:
        reach = {
            ch: chain[: chain.index(seeds[ch][0]) + 1] if ch in seeds else chain for ch in channels
        }
        by_checkpoint: dict[str, list] = defaultdict(list)
        needed = sorted(set().union(*reach.values()))
        for chunk in chunks(needed, pruning.CHUNK):
            for write in models.CheckpointWrite.objects.using(self.using).filter(
                thread_id=thread_id, checkpoint_ns=ns, checkpoint_id__in=chunk, channel__in=channels
            ):
                by_checkpoint[write.checkpoint_id].append(write)
        for found in by_checkpoint.values():
            found.sort(key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
        seed_blobs = self._blobs(thread_id, ns, {(ch, ver) for ch, (_, ver) in seeds.items()})
        result: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            writes: list[PendingWrite] = [
                (w.task_id, ch, self.serde.loads_typed((w.type, bytes(w.blob))))
                for checkpoint_id in reversed(reach[ch])
                for w in by_checkpoint[checkpoint_id]
                if w.channel == ch
            ]
            entry: DeltaChannelHistory = {"writes": writes}
            if ch in seeds:
                blob = seed_blobs.get((thread_id, ns, ch, seeds[ch][1]))
                if blob is not None and blob[0] != "empty":
                    entry["seed"] = self.serde.loads_typed(blob)
            result[ch] = entry
        return result

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
        pages = Pages(limit)
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

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy, keep_last=keep_last)

    async def aprune_plan(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> dict[str, PrunePlan]:
        return await asyncio.to_thread(
            self.prune_plan, thread_ids, strategy=strategy, keep_last=keep_last
        )

    async def acount_rows(self, thread_id: str) -> Counts:
        return await asyncio.to_thread(self.count_rows, thread_id)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(
            self.get_delta_channel_history, config=config, channels=channels
        )
