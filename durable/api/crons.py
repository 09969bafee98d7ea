"""``/runs/crons`` and ``/threads/{thread_id}/runs/crons``: schedules that start runs,
created, changed, deleted, searched and counted as the Agent Server's are
(``durable.engine.crons``, which checks and stores them and keeps Celery beat's
schedule in step)."""

from __future__ import annotations

from django.db.models import QuerySet
from ninja import Router

from durable import engine
from durable.api import access, answers, shapes
from durable.api.authentication import caller, may_change
from durable.api.cron_schemas import (
    CronCount,
    CronCreate,
    CronPatch,
    CronRun,
    CronSearch,
    ThreadCronCreate,
)
from durable.api.document import refusal
from durable.api.errors import ApiError, json_response
from durable.api.schemas import ThreadId, stream_modes
from durable.models import Cron
from durable.persistence.metadata import MetadataKeyEquals

crons = Router(tags=["crons"])
thread_crons = Router(tags=["crons"])

_UNKNOWN_ASSISTANT = refusal(
    422, "The assistant_id is neither an assistant of the tenant nor a registered graph."
)


def _payload(body: CronRun, fields: set[str] | None = None) -> dict:
    """The run request ``body`` holds, as ``durable.engine.crons`` keeps it; with
    ``fields``, only those the body sent (a patch)."""
    durability = body.durability
    if durability is None and body.checkpoint_during is not None:
        durability = "exit" if body.checkpoint_during is False else "async"
    payload = {
        "input": body.input,
        "metadata": body.metadata,
        "config": body.config.model_dump(exclude_none=True) if body.config else None,
        "context": body.context,
        "webhook": body.webhook,
        "interrupt_before": body.interrupt_before,
        "interrupt_after": body.interrupt_after,
        "stream_mode": stream_modes(body.stream_mode) if body.stream_mode else None,
        "durability": durability,
        "multitask_strategy": body.multitask_strategy,
    }
    if fields is not None:
        sent = fields | ({"durability"} if "checkpoint_during" in fields else set())
        payload = {k: v for k, v in payload.items() if k in sent}
    return payload


def _create(request, body: ThreadCronCreate, thread=None, on_run_completed: str = "delete"):
    """The cron ``body`` asks for. An unknown assistant is a 422 naming ``assistant_id``,
    as every field of a cron's request that cannot be stored is (a run's is a 404)."""
    may_change(request)
    try:
        cron = engine.create_cron(
            body.schedule,
            tenant=request.auth.tenant,
            assistant_id=body.assistant_id,
            thread=thread,
            timezone=body.timezone,
            end_time=body.end_time,
            enabled=body.enabled,
            on_run_completed=on_run_completed,
            payload=_payload(body),
            requested_by=caller(request),
        )
    except engine.UnknownAssistant as exc:
        raise ApiError(422, exc.message, "assistant_id") from None
    return shapes.cron_json(cron)


@crons.post(
    "/crons", summary="Create a cron", response=answers.Cron, openapi_extra=_UNKNOWN_ASSISTANT
)
def create_cron(request, body: CronCreate):
    """Creates a cron whose every fire starts ``input`` on a new thread, deleted once its
    run has ended (``on_run_completed``: ``delete``, the default) or kept (``keep``).
    ``schedule`` is a five-field cron expression read in ``timezone`` (an IANA name,
    default UTC); ``end_time`` (in the future) ends it. The run's fields are those of
    ``POST /runs``, checked now. 422 naming the field for a bad expression, an unknown
    timezone, a past ``end_time`` or an unknown ``assistant_id``; nothing is stored."""
    return _create(request, body, on_run_completed=body.on_run_completed)


@thread_crons.post(
    "/{thread_id}/runs/crons",
    summary="Create a thread cron",
    response=answers.Cron,
    openapi_extra=_UNKNOWN_ASSISTANT,
)
def create_thread_cron(request, thread_id: ThreadId, body: ThreadCronCreate):
    """As ``POST /runs/crons``, with every fire running on thread ``thread_id`` (its
    ``multitask_strategy``, default ``enqueue``, says what a fire does while a run is
    active). 404 for an unknown thread."""
    return _create(request, body, thread=access.thread(request, thread_id))


def _matching(request, body: CronCount) -> QuerySet[Cron]:
    found = access.crons(request)
    if body.assistant_id is not None:
        found = found.filter(assistant_id=body.assistant_id)
    if body.thread_id is not None:
        found = found.filter(thread__name=body.thread_id)
    for key, value in (body.metadata or {}).items():
        found = found.filter(MetadataKeyEquals(key, value))
    return found


_SORT_COLUMNS = {"thread_id": "thread__name", "cron_id": "cron_id"}


@crons.post("/crons/search", summary="Search crons", response=list[answers.CronFields])
def search_crons(request, body: CronSearch = None):
    """The tenant's crons of ``assistant_id``, on ``thread_id``, ``enabled`` or not,
    whose metadata has every key/value of ``metadata``; sorted, then ``limit`` from
    ``offset``; with ``select``, only those fields of each."""
    body = body or CronSearch()
    found = _matching(request, body)
    if body.enabled is not None:
        found = found.filter(enabled=body.enabled)
    sign = "-" if body.sort_order == "desc" else ""
    column = _SORT_COLUMNS.get(body.sort_by, body.sort_by)
    found = found.order_by(f"{sign}{column}", f"{sign}pk")
    page = [shapes.cron_json(c) for c in found[body.offset : body.offset + body.limit]]
    if body.select:
        page = [{k: c[k] for k in body.select} for c in page]
    # Answered as built: the schema would fill the fields ``select`` left out.
    return json_response(request, page)


@crons.post("/crons/count", summary="Count crons", response=int)
def count_crons(request, body: CronCount = None):
    """How many crons ``POST /runs/crons/search`` would find with the same filters."""
    return _matching(request, body or CronCount()).count()


# After search and count: /runs/crons/search is no cron's URL.
@crons.patch("/crons/{cron_id}", summary="Update a cron", response=answers.Cron)
def update_cron(request, cron_id: str, body: CronPatch):
    """Changes the fields sent: ``schedule``, ``timezone``, ``end_time`` (``null``
    clears it), ``enabled``, ``on_run_completed``, and the run's fields (``metadata`` is
    merged into the cron's). The next run date is computed again. Refusals as for
    ``POST /runs/crons``."""
    cron = access.cron(request, cron_id)
    may_change(request)
    sent = set(body.model_fields_set)
    changes = _payload(body, sent)
    for key in ("schedule", "timezone", "end_time", "enabled", "on_run_completed"):
        if key in sent and (getattr(body, key) is not None or key == "end_time"):
            changes[key] = getattr(body, key)
    changed = engine.update_cron(cron, changes, requested_by=caller(request))
    return shapes.cron_json(changed)


@crons.delete("/crons/{cron_id}", summary="Delete a cron", response={204: None})
def delete_cron(request, cron_id: str):
    """Deletes the cron; the runs it started stay."""
    cron = access.cron(request, cron_id)
    may_change(request)
    engine.delete_cron(cron, requested_by=caller(request))
    return 204, None
