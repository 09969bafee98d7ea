"""The SQL ``DjangoSaver`` runs, one named function per statement. Each returns
``(sql, params)`` (or a QuerySet) for the database alias ``using`` and executes nothing;
``saver.py`` and ``pruning.py`` run them."""

from __future__ import annotations

import itertools
from typing import Any

from django.db import connections
from langgraph.checkpoint.base import get_checkpoint_id

from durable import db as sql
from durable import models
from durable.persistence.checkpoint.rows import check_thread_id
from durable.persistence.metadata import MetadataKeyEquals

Statement = tuple[str, list]


def put_checkpoint(using: str, row: dict, blobs: list[dict]) -> list[Statement]:
    """The upserts of one checkpoint ``row`` and its new ``blobs`` (blobs first; a
    checkpoint already stored gets its payload, versions and metadata replaced, a blob
    already stored is kept). On PostgreSQL both are one statement, so one round trip and
    atomic without BEGIN and COMMIT, as PostgresSaver pipelines the same two inserts;
    elsewhere two statements, which the caller runs in a transaction."""
    checkpoint_sql, checkpoint_params = sql.upsert(
        using,
        models.Checkpoint,
        [row],
        update=["type", "checkpoint", "channel_versions", "metadata"],
    )
    if not blobs:
        return [(checkpoint_sql, checkpoint_params)]
    blob_sql, blob_params = sql.upsert(using, models.CheckpointBlob, blobs)
    if connections[using].vendor == "postgresql":
        return [(f"WITH blobs AS ({blob_sql}) {checkpoint_sql}", blob_params + checkpoint_params)]
    return [(blob_sql, blob_params), (checkpoint_sql, checkpoint_params)]


def put_writes(using: str, rows: list[dict], *, special: bool) -> Statement:
    """The upsert of a task's write ``rows``: ``special`` ones (every channel in
    ``WRITES_IDX_MAP``) replace the write at their slot, regular ones keep a stored one."""
    return sql.upsert(
        using,
        models.CheckpointWrite,
        rows,
        update=["channel", "type", "blob", "task_path"] if special else [],
    )


def one_checkpoint(thread_id: str, checkpoint_ns: str, checkpoint_id: str | None) -> Statement:
    """The ``WHERE`` (for ``sql.select`` on ``Checkpoint``) of the checkpoint
    ``checkpoint_id``, or of the latest of the thread and namespace when it is None."""
    params = [thread_id, checkpoint_ns]
    if checkpoint_id:
        which = "AND checkpoint_id = %s"
        params.append(checkpoint_id)
    else:
        which = "ORDER BY checkpoint_id DESC"
    return f"thread_id = %s AND checkpoint_ns = %s {which} LIMIT 1", params


def listed(using: str, config, filter: dict[str, Any] | None, before):
    """``list``'s checkpoints as a QuerySet, unordered and unpaged: of ``config``'s thread
    (and namespace, and checkpoint, when it names them), metadata equal to ``filter``,
    older than ``before``'s checkpoint id."""
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


def blobs_and_writes(
    using: str, thread_id: str, ns: str, wanted: set[tuple[str, str]], checkpoint_ids: list[str]
) -> Statement | None:
    """One query for the ``wanted`` (channel, version) blobs, matched exactly so no
    unneeded value is read, and for the writes of ``checkpoint_ids``; None when it
    would ask for nothing. Rows are ``('b', channel, version, type, blob, NULL, NULL,
    NULL)`` and ``('w', channel, checkpoint_id, type, blob, task_id, task_path, idx)``,
    unordered."""
    connection = connections[using]
    ops = connection.ops
    parts, params = [], []
    if wanted:
        # A list of row values is planned as index lookups on PostgreSQL (IN
        # (VALUES ...) became a scan of the thread's blobs); SQLite only takes VALUES.
        pairs = ", ".join(["(%s, %s)"] * len(wanted))
        if connection.vendor != "postgresql":
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
    if not parts:
        return None
    return " UNION ALL ".join(parts), params


def ancestors(using: str, thread_id: str, ns: str, start_id: str, size: int) -> Statement:
    """``start_id`` and up to ``size - 1`` of its ancestors, newest first, as rows
    (checkpoint_id, parent_checkpoint_id, channel_versions): one recursive query, each
    step a hit on the (thread_id, checkpoint_ns, checkpoint_id) index."""
    table = connections[using].ops.quote_name(models.Checkpoint._meta.db_table)
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
    return query, [thread_id, ns, start_id, thread_id, ns, size - 1]


def row_counts(using: str, thread_id: str) -> Statement:
    """One row: the thread's checkpoints, blobs and writes, in every namespace."""
    quote = connections[using].ops.quote_name
    tables = [
        quote(model._meta.db_table)
        for model in (models.Checkpoint, models.CheckpointBlob, models.CheckpointWrite)
    ]
    query = "SELECT " + ", ".join(
        f"(SELECT COUNT(*) FROM {table} WHERE thread_id = %s)" for table in tables
    )
    return query, [thread_id] * 3
