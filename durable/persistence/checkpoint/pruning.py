"""What pruning a thread's history keeps and removes, for ``DjangoSaver.prune`` and its
dry run ``DjangoSaver.prune_plan``: keep the latest (or the last N) checkpoints per
namespace, plus the ancestors their ``DeltaChannel`` values are rebuilt from; delete the
rest with their writes and the blobs no kept checkpoint uses; or count what that would
remove. Functions take the Django database alias ``using``; the saver owns connections
and transactions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connections

from durable import db as sql
from durable import models
from durable.persistence.checkpoint import statements
from durable.persistence.checkpoint.rows import chunks, version_keys

# Ids per ``IN (...)``: under SQLite's limit of 32,766 parameters, and few round trips.
CHUNK = 5000
# Ancestors read per recursive query when walking a DeltaChannel's chain.
CHAIN_PAGE = 512

KEEP_LATEST = "keep_latest"
DELETE = "delete"


@dataclass
class Counts:
    """Rows of one thread, or removed from it: checkpoints, blobs, writes."""

    checkpoints: int = 0
    blobs: int = 0
    writes: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.checkpoints + other.checkpoints,
            self.blobs + other.blobs,
            self.writes + other.writes,
        )

    def __sub__(self, other: Counts) -> Counts:
        return Counts(
            self.checkpoints - other.checkpoints,
            self.blobs - other.blobs,
            self.writes - other.writes,
        )

    def __bool__(self) -> bool:
        return bool(self.checkpoints or self.blobs or self.writes)

    def as_dict(self) -> dict[str, int]:
        return {"checkpoints": self.checkpoints, "blobs": self.blobs, "writes": self.writes}


@dataclass(frozen=True)
class PrunePlan:
    """What pruning one thread would do: the rows it would ``remove`` and those it would
    leave (``kept``), in every namespace. ``removed + kept`` is the thread's rows now."""

    removed: Counts
    kept: Counts


def kept_per_namespace(strategy: str, keep_last: int | None) -> int | None:
    """How many of the newest checkpoints per namespace a prune keeps: ``None`` for
    ``strategy="delete"`` (nothing), 1 for ``"keep_latest"``, ``keep_last`` when given
    (with ``"keep_latest"``, the default). ``ValueError`` for another strategy, for
    ``keep_last`` with ``"delete"``, and for a ``keep_last`` that is not a whole number
    of at least 1."""
    if strategy not in (KEEP_LATEST, DELETE):
        raise ValueError(f"strategy must be 'keep_latest' or 'delete', got {strategy!r}")
    if keep_last is None:
        return None if strategy == DELETE else 1
    if strategy == DELETE:
        raise ValueError("keep_last goes with strategy 'keep_latest', not 'delete'")
    if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 1:
        raise ValueError(f"keep_last must be a whole number of at least 1, got {keep_last!r}")
    return keep_last


# -- the thread as a whole -----------------------------------------------------------------


def count_rows(using: str, thread_id: str) -> Counts:
    """The thread's checkpoints, blobs and writes, in every namespace: one query."""
    with connections[using].cursor() as cursor:
        cursor.execute(*statements.row_counts(using, thread_id))
        return Counts(*cursor.fetchone())


def delete_threads(using: str, thread_ids: list[str]) -> None:
    """Delete every checkpoint, blob and write of ``thread_ids``. Call inside a
    transaction."""
    for model in (models.CheckpointWrite, models.CheckpointBlob, models.Checkpoint):
        model.objects.using(using).filter(thread_id__in=thread_ids).delete()


def keep_last(using: str, thread_id: str, keep: int) -> None:
    """Prune ``thread_id`` to what ``keep_sets`` keeps. A kept checkpoint whose parent is
    deleted becomes a root, so no parent id points at a checkpoint that no longer
    exists. Call inside a transaction."""
    for ns, _kept, doomed in keep_sets(using, thread_id, keep):
        if not doomed:
            continue
        delete_checkpoints(using, thread_id, ns, doomed)
        rows = _in_namespace(using, thread_id, ns)
        for chunk in chunks(doomed, CHUNK):
            rows.filter(parent_checkpoint_id__in=chunk).update(parent_checkpoint_id=None)


def plan(using: str, thread_id: str, keep: int | None) -> PrunePlan:
    """What ``keep_last(using, thread_id, keep)`` would remove (``keep`` None: deleting
    the thread), read without changing anything."""
    total = count_rows(using, thread_id)
    if keep is None:
        return PrunePlan(removed=total, kept=Counts())
    removed = Counts()
    for ns, _kept, doomed in keep_sets(using, thread_id, keep):
        removed += _removal(using, thread_id, ns, doomed)
    return PrunePlan(removed=removed, kept=total - removed)


def keep_sets(using: str, thread_id: str, keep: int) -> list[tuple[str, set[str], list[str]]]:
    """Per namespace of ``thread_id``: (namespace, ids kept, ids to delete) when keeping
    the last ``keep`` checkpoints. Kept too: for each kept checkpoint whose parent is not
    kept, the ancestors its DeltaChannel values are rebuilt from (``delta_chain`` of the
    channels in its ``counters_since_delta_snapshot``): the first safe option in the
    ``prune`` docstring of ``langgraph/checkpoint/base``. Checkpoints newer than those
    read (a run still appending) are never to be deleted."""
    checkpoints = models.Checkpoint.objects.using(using).filter(thread_id=thread_id)
    namespaces = sorted(set(checkpoints.values_list("checkpoint_ns", flat=True)))
    result = []
    for ns in namespaces:
        in_ns = checkpoints.filter(checkpoint_ns=ns)
        newest = list(
            in_ns.order_by("-checkpoint_id").values_list(
                "checkpoint_id", "parent_checkpoint_id", "metadata"
            )[:keep]
        )
        if not newest:
            continue
        kept = {checkpoint_id for checkpoint_id, _, _ in newest}
        channels = sorted(
            {
                channel
                for _, _, metadata in newest
                for channel in (metadata or {}).get("counters_since_delta_snapshot") or {}
            }
        )
        for _, parent, _ in newest:
            if channels and parent and parent not in kept:
                chain, _ = delta_chain(using, thread_id, ns, parent, channels)
                kept.update(chain)
        oldest = newest[-1][0]
        doomed = [
            checkpoint_id
            for checkpoint_id in in_ns.filter(checkpoint_id__lte=oldest).values_list(
                "checkpoint_id", flat=True
            )
            if checkpoint_id not in kept
        ]
        result.append((ns, kept, doomed))
    return result


# -- checkpoints of one namespace ------------------------------------------------------------


def delete_checkpoints(using: str, thread_id: str, ns: str, checkpoint_ids: list[str]) -> None:
    """Delete these checkpoints of one namespace, their writes, and the blobs that no
    checkpoint left in the namespace uses (``freed_blobs``). Call inside a transaction."""
    if not checkpoint_ids:
        return
    freed = freed_blobs(using, thread_id, ns, checkpoint_ids)
    checkpoints = _in_namespace(using, thread_id, ns)
    writes = models.CheckpointWrite.objects.using(using).filter(
        thread_id=thread_id, checkpoint_ns=ns
    )
    for chunk in chunks(checkpoint_ids, CHUNK):
        checkpoints.filter(checkpoint_id__in=chunk).delete()
        writes.filter(checkpoint_id__in=chunk).delete()
    blobs = models.CheckpointBlob.objects.using(using).filter(thread_id=thread_id, checkpoint_ns=ns)
    for channel, versions in freed.items():
        for chunk in chunks(versions, CHUNK):
            blobs.filter(channel=channel, version__in=chunk).delete()


def freed_blobs(using: str, thread_id: str, ns: str, doomed: Sequence[str]) -> dict[str, list]:
    """The blobs that deleting the ``doomed`` checkpoints frees: the (channel, version)
    pairs they use that no other checkpoint of the namespace uses, as ``{channel:
    [version, ...]}``. One read of the namespace's ``channel_versions``."""
    doomed_set = set(doomed)
    freed: set[tuple[str, str]] = set()
    used: set[tuple[str, str]] = set()
    rows = _in_namespace(using, thread_id, ns).values_list("checkpoint_id", "channel_versions")
    for checkpoint_id, versions in rows:
        (freed if checkpoint_id in doomed_set else used).update(version_keys(versions))
    by_channel: dict[str, list[str]] = defaultdict(list)
    for channel, version in sorted(freed - used):
        by_channel[channel].append(version)
    return by_channel


def _removal(using: str, thread_id: str, ns: str, doomed: list[str]) -> Counts:
    """What ``delete_checkpoints(using, thread_id, ns, doomed)`` would delete."""
    if not doomed:
        return Counts()
    writes = models.CheckpointWrite.objects.using(using).filter(
        thread_id=thread_id, checkpoint_ns=ns
    )
    blobs = models.CheckpointBlob.objects.using(using).filter(thread_id=thread_id, checkpoint_ns=ns)
    return Counts(
        checkpoints=len(doomed),
        blobs=sum(
            blobs.filter(channel=channel, version__in=chunk).count()
            for channel, versions in freed_blobs(using, thread_id, ns, doomed).items()
            for chunk in chunks(versions, CHUNK)
        ),
        writes=sum(
            writes.filter(checkpoint_id__in=chunk).count() for chunk in chunks(doomed, CHUNK)
        ),
    )


def _in_namespace(using: str, thread_id: str, ns: str):
    return models.Checkpoint.objects.using(using).filter(thread_id=thread_id, checkpoint_ns=ns)


# -- DeltaChannel ancestors -----------------------------------------------------------------


def delta_chain(
    using: str, thread_id: str, ns: str, start_id: str | None, channels: Sequence[str]
) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """Walk parent ids from ``start_id``: the checkpoint ids visited, newest first,
    until every channel has met a stored blob (or the root), and per channel the
    (checkpoint_id, version) of that seed. ``CHAIN_PAGE`` ancestors per query."""
    chain: list[str] = []
    seeds: dict[str, tuple[str, str]] = {}
    cursor = start_id if channels else None
    while cursor is not None and len(seeds) < len(channels):
        page = _ancestors(using, thread_id, ns, cursor)
        if not page:
            break
        wanted = {
            (ch, str(versions[ch]))
            for _, _, versions in page
            for ch in channels
            if ch not in seeds and ch in versions
        }
        stored = _stored_blob_keys(using, thread_id, ns, wanted)
        for checkpoint_id, _, versions in page:
            chain.append(checkpoint_id)
            for ch in channels:
                if ch not in seeds and (ch, str(versions.get(ch))) in stored:
                    seeds[ch] = (checkpoint_id, str(versions[ch]))
            if len(seeds) == len(channels):
                break
        cursor = page[-1][1]
    return chain, seeds


def _ancestors(using: str, thread_id: str, ns: str, start_id: str) -> list[tuple[str, str, dict]]:
    with connections[using].cursor() as cursor:
        cursor.execute(*statements.ancestors(using, thread_id, ns, start_id, CHAIN_PAGE))
        return [(cid, parent, sql.json_value(v)) for cid, parent, v in cursor.fetchall()]


def _stored_blob_keys(using: str, thread_id: str, ns: str, wanted: set[tuple[str, str]]) -> set:
    """Those of the ``wanted`` (channel, version) pairs that have a stored value."""
    if not wanted:
        return set()
    keys = (
        models.CheckpointBlob.objects.using(using)
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
