"""The bodies of the cron routes (``durable.api.crons``), after the Agent Server's
OpenAPI (its ``CronCreate``, ``ThreadCronCreate``, ``CronPatch``, ``CronSearch`` and
``CronCountRequest``). Parsing and the shared types are in ``durable.api.schemas``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field
from pydantic import StrictBool

from durable.api.schemas import MAX_OFFSET, Breakpoints, RunConfig, Strict, ThreadId

CronSortBy = Literal[
    "cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at", "updated_at"
]
CronField = Literal[
    "cron_id",
    "assistant_id",
    "thread_id",
    "on_run_completed",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "user_id",
    "payload",
    "next_run_date",
    "metadata",
    "enabled",
]


class CronRun(Strict):
    """What each of a cron's runs is started with, as a run request names it (checked by
    ``durable.engine.crons`` as ``start`` checks a run)."""

    input: Any = None
    metadata: dict[str, Any] | None = None
    config: RunConfig | None = None
    context: dict[str, Any] | None = None
    webhook: str | None = Field(None, min_length=1, max_length=65536)
    interrupt_before: Breakpoints = None
    interrupt_after: Breakpoints = None
    stream_mode: str | list[str] | None = None
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    durability: Literal["sync", "async", "exit"] | None = None
    checkpoint_during: bool | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] = "enqueue"


class ThreadCronCreate(CronRun):
    assistant_id: str
    schedule: str
    timezone: str | None = None
    end_time: datetime | None = None
    # Strict: "yes" or 1 is a 422 here, as a PATCH's 5 is, not a cron enabled by chance.
    enabled: StrictBool = True
    # The JS SDK sends it for a thread's cron too, where every fire keeps the thread.
    on_run_completed: Literal["delete", "keep"] = "delete"


class CronCreate(ThreadCronCreate):
    """A cron whose every fire runs on a new thread."""


class CronPatch(CronRun):
    schedule: str | None = None
    timezone: str | None = None
    end_time: datetime | None = None
    enabled: StrictBool | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] | None = None


class CronCount(Strict):
    assistant_id: str | None = None
    thread_id: ThreadId | None = None
    metadata: dict[str, Any] | None = None


class CronSearch(CronCount):
    enabled: StrictBool | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    sort_by: CronSortBy = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"
    select: list[CronField] | None = None
