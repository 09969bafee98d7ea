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
import functools
import itertools
import operator
import random
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from typing import Any, NamedTuple

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
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from durable import db as sql
from durable import models
from durable.persistence.metadata import MetadataKeyEquals
from durable.persistence.serde import default_serde

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
        payload, blob_values = _split_channel_values(checkpoint)
        blobs = [
            {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "channel": channel,
                "version": str(version),
                **_typed(self._dump(blob_values[channel], f"channel {channel!r}"), "blob"),
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
            **_typed(self._dump_payload(payload), "checkpoint"),
        }
        checkpoint_sql, checkpoint_params = sql.upsert(
            self.using,
            models.Checkpoint,
            [row],
            update=["type", "checkpoint", "channel_versions", "metadata"],
        )
        statements = [(checkpoint_sql, checkpoint_params)]
        if blobs:
            blob_sql, blob_params = sql.upsert(self.using, models.CheckpointBlob, blobs)
            if connections[self.using].vendor == "postgresql":
                # One statement, so one round trip and atomic without BEGIN and COMMIT:
                # PostgresSaver pipelines the same two inserts.
                statements = [
                    (
                        f"WITH blobs AS ({blob_sql}) {checkpoint_sql}",
                        blob_params + checkpoint_params,
                    )
                ]
            else:
                statements.insert(0, (blob_sql, blob_params))
        # Two statements (SQLite) need a transaction; one (PostgreSQL) is atomic as it is.
        atomic = transaction.atomic(using=self.using) if len(statements) > 1 else nullcontext()
        with self._db(), atomic, self._cursor() as cursor:
            for statement, params in statements:
                cursor.execute(statement, params)
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
            {
                "thread_id": thread_id,
                "checkpoint_ns": conf.get("checkpoint_ns", "") or "",
                "checkpoint_id": conf["checkpoint_id"],
                "task_id": task_id,
                "task_path": task_path,
                "idx": WRITES_IDX_MAP.get(channel, idx),
                "channel": channel,
                **_typed(self._dump(value, f"write to channel {channel!r}"), "blob"),
            }
            for idx, (channel, value) in enumerate(writes)
        ]
        if not rows:
            return
        special = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        statement, params = sql.upsert(
            self.using,
            models.CheckpointWrite,
            rows,
            update=["channel", "type", "blob", "task_path"] if special else [],
        )
        with self._db(), self._cursor() as cursor:
            cursor.execute(statement, params)

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

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of ``thread_id``, in every namespace."""
        self._delete_threads([check_thread_id(thread_id)])

    def _delete_threads(self, thread_ids: list[str]) -> None:
        with self._db(), transaction.atomic(using=self.using):
            for model in (models.CheckpointWrite, models.CheckpointBlob, models.Checkpoint):
                model.objects.using(self.using).filter(thread_id__in=thread_ids).delete()

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints whose ``metadata["run_id"]`` is one of ``run_ids``, in
        every thread and namespace, with their writes and the blobs no remaining
        checkpoint uses. Raises ``TypeError`` for a single string.

        As LangGraph's base class warns, deleting a run whose writes a later
        ``DeltaChannel`` value is rebuilt from breaks that value; this is meant for a run
        whose checkpoints are the newest of their thread (a rollback)."""
        run_ids = _id_list(run_ids, "run_ids")
        checkpoints = models.Checkpoint.objects.using(self.using)
        with self._db(), transaction.atomic(using=self.using):
            doomed: dict[tuple[str, str], list[str]] = defaultdict(list)
            for chunk in _chunks(run_ids, 100):
                matching = functools.reduce(
                    operator.or_, (MetadataKeyEquals("run_id", r) for r in chunk)
                )
                for thread_id, ns, checkpoint_id in checkpoints.filter(matching).values_list(
                    "thread_id", "checkpoint_ns", "checkpoint_id"
                ):
                    doomed[(thread_id, ns)].append(checkpoint_id)
            for (thread_id, ns), ids in doomed.items():
                self._delete_checkpoints(thread_id, ns, ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint (ids kept), blob and write of ``source_thread_id``, in
        every namespace, to ``target_thread_id``. Rows the target already has are kept."""
        source = check_thread_id(source_thread_id)
        target = check_thread_id(target_thread_id)
        with self._db(), transaction.atomic(using=self.using):
            for model in (models.Checkpoint, models.CheckpointBlob, models.CheckpointWrite):
                manager = model.objects.using(self.using)
                rows = manager.filter(thread_id=source).values().iterator(chunk_size=500)
                for chunk in _chunks(rows, 500):
                    copies = [model(**{**row, "id": None, "thread_id": target}) for row in chunk]
                    manager.bulk_create(copies, ignore_conflicts=True)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune the history of ``thread_ids``.

        ``"delete"`` removes every checkpoint, blob and write of the threads.
        ``"keep_latest"`` keeps, per namespace, the latest checkpoint with its pending
        writes, and deletes older checkpoints, their writes and the blobs no kept
        checkpoint uses. A ``DeltaChannel`` value is rebuilt from ancestors' writes
        (``get_delta_channel_history``), so for each channel named in the latest
        checkpoint's ``counters_since_delta_snapshot`` the ancestors back to its nearest
        snapshot are kept too: the first safe option in the ``prune`` docstring of
        ``langgraph/checkpoint/base``. Checkpoints newer than the latest one read (a run
        still appending) are never touched; each thread is pruned in one transaction.
        Forking or replaying from a checkpoint being deleted is not safe.

        Raises ``TypeError`` for a single string and ``ValueError`` for another strategy.
        """
        thread_ids = [check_thread_id(t) for t in _id_list(thread_ids, "thread_ids")]
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"strategy must be 'keep_latest' or 'delete', got {strategy!r}")
        if strategy == "delete":
            self._delete_threads(thread_ids)
            return
        for thread_id in thread_ids:
            with self._db(), transaction.atomic(using=self.using):
                self._keep_latest(thread_id)

    def _keep_latest(self, thread_id: str) -> None:
        checkpoints = models.Checkpoint.objects.using(self.using).filter(thread_id=thread_id)
        namespaces = set(checkpoints.values_list("checkpoint_ns", flat=True))
        for ns in namespaces:
            in_ns = checkpoints.filter(checkpoint_ns=ns)
            head = in_ns.order_by("-checkpoint_id").values(
                "checkpoint_id", "parent_checkpoint_id", "metadata"
            )[0]
            delta_channels = list(head["metadata"].get("counters_since_delta_snapshot") or {})
            chain, _ = self._delta_chain(
                thread_id, ns, head["parent_checkpoint_id"], delta_channels
            )
            keep = {head["checkpoint_id"], *chain}
            doomed = in_ns.filter(checkpoint_id__lt=head["checkpoint_id"]).exclude(
                checkpoint_id__in=keep
            )
            self._delete_checkpoints(
                thread_id, ns, list(doomed.values_list("checkpoint_id", flat=True))
            )
            # The oldest kept checkpoint's parent is gone: it becomes a root.
            in_ns.filter(checkpoint_id__in=keep).exclude(parent_checkpoint_id__in=keep).update(
                parent_checkpoint_id=None
            )

    def _delete_checkpoints(self, thread_id: str, ns: str, checkpoint_ids: list[str]) -> None:
        """Delete these checkpoints of one namespace, their writes, and the blobs that no
        checkpoint left in the namespace uses. Call inside a transaction."""
        if not checkpoint_ids:
            return
        checkpoints = models.Checkpoint.objects.using(self.using).filter(
            thread_id=thread_id, checkpoint_ns=ns
        )
        freed = set()
        for chunk in _chunks(checkpoint_ids, 5000):
            doomed = checkpoints.filter(checkpoint_id__in=chunk)
            for versions in doomed.values_list("channel_versions", flat=True):
                freed.update((ch, str(v)) for ch, v in versions.items())
            doomed.delete()
            models.CheckpointWrite.objects.using(self.using).filter(
                thread_id=thread_id, checkpoint_ns=ns, checkpoint_id__in=chunk
            ).delete()
        for versions in checkpoints.values_list("channel_versions", flat=True):
            freed.difference_update((ch, str(v)) for ch, v in versions.items())
        by_channel: dict[str, list[str]] = defaultdict(list)
        for channel, version in freed:
            by_channel[channel].append(version)
        blobs = models.CheckpointBlob.objects.using(self.using)
        for channel, versions in by_channel.items():
            for chunk in _chunks(versions, 5000):
                blobs.filter(
                    thread_id=thread_id, checkpoint_ns=ns, channel=channel, version__in=chunk
                ).delete()

    # -- reads --------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by ``config`` (its ``checkpoint_id``), or the latest of
        its thread and ``checkpoint_ns`` when it names none; ``None`` if there is none.

        ``pending_writes`` are ordered by (task_path, task_id, idx), LangGraph's
        ``writes_sort_key``.
        """
        conf = config["configurable"]
        params = [check_thread_id(conf["thread_id"]), conf.get("checkpoint_ns", "") or ""]
        if checkpoint_id := get_checkpoint_id(config):
            which = "AND checkpoint_id = %s"
            params.append(checkpoint_id)
        else:
            which = "ORDER BY checkpoint_id DESC"
        with self._db():
            found = sql.select(
                self.using,
                models.Checkpoint,
                f"thread_id = %s AND checkpoint_ns = %s {which} LIMIT 1",
                params,
            )
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
            self._tuple(
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
        """One query for the ``wanted`` blobs, matched by exact (channel, version) so no
        unneeded value is read, and for the writes of ``checkpoint_ids``, sorted by
        ``writes_sort_key`` (in Python, as PostgresSaver does: a database collation
        must not reorder task paths, or an order-sensitive reducer rebuilds a different
        value). Returns ``({(thread, ns, channel, version): (type, bytes)},
        {(thread, ns, checkpoint_id): [_Write, ...]})``."""
        ops = connections[self.using].ops
        parts, params = [], []
        if wanted:
            # A list of row values is planned as index lookups on PostgreSQL (IN
            # (VALUES ...) became a scan of the thread's blobs); SQLite only takes VALUES.
            pairs = ", ".join(["(%s, %s)"] * len(wanted))
            if connections[self.using].vendor != "postgresql":
                pairs = f"VALUES {pairs}"
            parts.append(
                "SELECT 'b', channel, version, type, blob, NULL, NULL, NULL"
                f" FROM {ops.quote_name(models.CheckpointBlob._meta.db_table)}"
                " WHERE thread_id = %s AND checkpoint_ns = %s"
                f" AND (channel, version) IN ({pairs})"
            )
            params += [thread_id, ns, *itertools.chain.from_iterable(wanted)]
        if checkpoint_ids:
            marks = ", ".join(["%s"] * len(checkpoint_ids))
            parts.append(
                "SELECT 'w', channel, checkpoint_id, type, blob, task_id, task_path, idx"
                f" FROM {ops.quote_name(models.CheckpointWrite._meta.db_table)}"
                f" WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id IN ({marks})"
            )
            params += [thread_id, ns, *checkpoint_ids]
        blobs: dict[tuple, tuple[str, bytes | None]] = {}
        writes: dict[tuple, list[_Write]] = defaultdict(list)
        if not parts:
            return blobs, writes
        with self._cursor() as cursor:
            cursor.execute(" UNION ALL ".join(parts), params)
            for kind, channel, key, type_, data, task_id, task_path, idx in cursor.fetchall():
                data = None if data is None else bytes(data)
                if kind == "b":
                    blobs[(thread_id, ns, channel, key)] = (type_, data)
                else:
                    writes[(thread_id, ns, key)].append(
                        _Write(task_id, task_path, idx, channel, type_, data)
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

        The chain is read with a recursive query over parent ids, ``CHAIN_PAGE``
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
            chain, seeds = self._delta_chain(thread_id, ns, parent[0] if parent else None, channels)
            return self._delta_history(thread_id, ns, channels, chain, seeds)

    CHAIN_PAGE = 512

    def _delta_chain(
        self, thread_id: str, ns: str, start_id: str | None, channels: Sequence[str]
    ) -> tuple[list[str], dict[str, tuple[str, str]]]:
        """Walk parent ids from ``start_id``: the checkpoint ids visited, newest first,
        until every channel has met a stored blob (or the root), and per channel the
        (checkpoint_id, version) of that seed."""
        chain: list[str] = []
        seeds: dict[str, tuple[str, str]] = {}
        cursor = start_id if channels else None
        while cursor is not None and len(seeds) < len(channels):
            page = self._chain_page(thread_id, ns, cursor)
            if not page:
                break
            wanted = {
                (ch, str(versions[ch]))
                for _, _, versions in page
                for ch in channels
                if ch not in seeds and ch in versions
            }
            stored = self._stored_blob_keys(thread_id, ns, wanted)
            for checkpoint_id, _, versions in page:
                chain.append(checkpoint_id)
                for ch in channels:
                    if ch not in seeds and (ch, str(versions.get(ch))) in stored:
                        seeds[ch] = (checkpoint_id, str(versions[ch]))
                if len(seeds) == len(channels):
                    break
            cursor = page[-1][1]
        return chain, seeds

    def _chain_page(self, thread_id: str, ns: str, start_id: str) -> list[tuple[str, str, dict]]:
        """``start_id`` and up to ``CHAIN_PAGE - 1`` of its ancestors, newest first, as
        (checkpoint_id, parent_checkpoint_id, channel_versions): one recursive query,
        each step a hit on the (thread_id, checkpoint_ns, checkpoint_id) index."""
        connection = connections[self.using]
        table = connection.ops.quote_name(models.Checkpoint._meta.db_table)
        query = f"""
            WITH RECURSIVE chain(checkpoint_id, parent_checkpoint_id, channel_versions, depth)
            AS (
                SELECT checkpoint_id, parent_checkpoint_id, channel_versions, 0 FROM {table}
                WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s
              UNION ALL
                SELECT c.checkpoint_id, c.parent_checkpoint_id, c.channel_versions,
                       chain.depth + 1
                FROM chain JOIN {table} c
                  ON c.thread_id = %s AND c.checkpoint_ns = %s
                 AND c.checkpoint_id = chain.parent_checkpoint_id
                WHERE chain.depth < %s
            )
            SELECT checkpoint_id, parent_checkpoint_id, channel_versions
            FROM chain ORDER BY depth
        """
        params = [thread_id, ns, start_id, thread_id, ns, self.CHAIN_PAGE - 1]
        with connection.cursor() as cursor:
            cursor.execute(query, params)
            return [(cid, parent, sql.json_value(v)) for cid, parent, v in cursor.fetchall()]

    def _stored_blob_keys(self, thread_id: str, ns: str, wanted: set[tuple[str, str]]) -> set:
        if not wanted:
            return set()
        keys = (
            models.CheckpointBlob.objects.using(self.using)
            .filter(
                thread_id=thread_id,
                checkpoint_ns=ns,
                channel__in={c for c, _ in wanted},
                version__in={v for _, v in wanted},
            )
            .exclude(type="empty")
            .values_list("channel", "version")
        )
        return set(keys) & wanted

    def _delta_history(self, thread_id, ns, channels, chain, seeds) -> dict:
        reach = {
            ch: chain[: chain.index(seeds[ch][0]) + 1] if ch in seeds else chain for ch in channels
        }
        by_checkpoint: dict[str, list] = defaultdict(list)
        needed = sorted(set().union(*reach.values()))
        for chunk in _chunks(needed, 5000):
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

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(
            self.get_delta_channel_history, config=config, channels=channels
        )


def _split_channel_values(checkpoint: Checkpoint) -> tuple[dict, dict]:
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
        elif value is None or isinstance(value, _INLINE_TYPES):
            continue
        else:
            blob_values[channel] = inline.pop(channel)
    return payload, blob_values


class _Write(NamedTuple):
    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str
    blob: bytes


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


def _id_list(ids: Sequence[str], field: str) -> list[str]:
    if isinstance(ids, str):
        raise TypeError(f"{field} must be a sequence of ids, not a str")
    return [str(i) for i in ids]


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


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
