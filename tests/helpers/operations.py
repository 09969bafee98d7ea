"""Threads and runs with chosen times and statuses, written straight to the tables, for
the Operations page's tests (its counts are of the tables, whatever ran them)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from durable.models import Checkpoint, CheckpointBlob, Run, Tenant, Thread

UTC_MINUTE = timedelta(minutes=1)


def seeded_thread(name: str, graph: str = "expense_approval", tenant=None, **fields) -> Thread:
    """A thread ``name`` of ``tenant`` (default: the default tenant); ``updated_at`` in
    ``fields`` is written after the save, which would otherwise set it to now."""
    updated_at = fields.pop("updated_at", None)
    thread = Thread.objects.create(
        tenant=tenant or Tenant.default(),
        thread_id=str(uuid.uuid4()),
        name=name,
        graph=graph,
        **fields,
    )
    if updated_at is not None:
        Thread.objects.filter(pk=thread.pk).update(updated_at=updated_at)
        thread.refresh_from_db()
    return thread


def seeded_run(
    thread: Thread,
    status: str,
    created_at: datetime,
    wait: float | None = None,
    duration: float | None = None,
    **fields,
) -> Run:
    """A run of ``thread`` created at ``created_at``, claimed ``wait`` seconds later and
    ended ``duration`` seconds after that (``None``: not claimed, not ended)."""
    run = Run.objects.create(
        thread=thread, graph=thread.graph, kind="start", status=status, **fields
    )
    started = created_at + timedelta(seconds=wait) if wait is not None else None
    ended = started + timedelta(seconds=duration) if started and duration is not None else None
    Run.objects.filter(pk=run.pk).update(created_at=created_at, started_at=started, ended_at=ended)
    run.refresh_from_db()
    return run


def stored(thread: Thread, checkpoints: int, blob_bytes: int) -> None:
    """``checkpoints`` checkpoints of ``thread`` of 10 bytes each, and one blob of
    ``blob_bytes`` bytes."""
    for i in range(checkpoints):
        Checkpoint.objects.create(
            thread_id=thread.thread_id,
            checkpoint_id=f"cp-{i:04d}",
            type="msgpack",
            checkpoint=b"0123456789",
        )
    CheckpointBlob.objects.create(
        thread_id=thread.thread_id,
        channel="values",
        version="1",
        type="msgpack",
        blob=b"x" * blob_bytes,
    )
