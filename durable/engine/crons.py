"""Crons: schedules that start runs, as LangGraph's Agent Server has them
(``create_cron``, ``update_cron``, ``delete_cron``), and the fire of one slot
(``fire``), which Celery beat wakes up in a worker (``durable.engine.beat``).

A cron's runs are started by ``runs.submit``, the operation every run goes
through, so a fire is checked and recorded as any run is. A request is checked before
anything is written: a refused one raises ``InvalidRequest`` naming the field
(``schedule``, ``timezone``, ``end_time``, ``on_run_completed``, ``thread``, and those
of ``start``: ``graph``, ``input``, ``config``, ...) and stores nothing.

Slots: ``schedule`` is a five-field cron expression read in ``timezone``; day of month
and day of week must both match, as Celery's ``crontab`` (which beat fires by) reads
them. A cron's ``next_run_date`` is the slot its next fire claims. A fire claims it with
a compare-and-set (the row moves to the following slot only where it still holds the
slot read), so two beats or two workers never start one slot twice; a slot older than
``DURABLE_CRON_GRACE_SECONDS`` (beat was down) is skipped, not run late, so missed slots
are never replayed in a burst. Once ``end_time`` has passed the cron is disabled.
"""

from __future__ import annotations

import functools
import logging
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from celery.schedules import ParseException, crontab_parser
from croniter import CroniterBadDateError, croniter
from django.db import transaction
from django.utils import timezone as dj_timezone

from durable import audit, conf
from durable.engine import beat
from durable.engine.checks import InvalidRequest, check_input, check_request, compiled_graph
from durable.engine.options import run_fields
from durable.engine.requests import OPTION_FIELDS, RunRequest
from durable.engine.runs import submit
from durable.engine.stored_assistants import check_config_schema, resolve_assistant
from durable.engine.threads import set_on_completion
from durable.models import Cron, Run, Tenant, Thread

logger = logging.getLogger(__name__)

# How much earlier than its slot a fire may come and still claim it: beat and the
# worker read clocks of their own.
EARLY_SECONDS = 2.0
# Celery's crontab fields, their ranges, in the order of a cron expression.
_FIELDS = (
    ("minute", 60, 0),
    ("hour", 24, 0),
    ("day of month", 31, 1),
    ("month", 12, 1),
    ("day of week", 7, 0),
)
# What a cron's ``payload`` keeps of its request (a ``RunRequest``'s input and options,
# ``stream_modes`` under the API's name ``stream_mode``): each fire's run asks them.
PAYLOAD_KEYS = ("input", *("stream_mode" if f == "stream_modes" else f for f in OPTION_FIELDS))


# -- checks ------------------------------------------------------------------------------


def check_schedule(schedule: Any) -> str:
    """``schedule`` as stored: five fields separated by single spaces. Raises
    ``InvalidRequest("schedule")`` for anything Celery's crontab or croniter refuses."""
    if not isinstance(schedule, str) or len(schedule) > 200:
        raise InvalidRequest("schedule", "schedule must be a cron expression of five fields.")
    fields = schedule.split()
    if len(fields) != 5:
        raise InvalidRequest(
            "schedule",
            f"schedule {schedule!r} must have five fields (minute hour day-of-month month "
            f"day-of-week), not {len(fields)}.",
        )
    if "#" in schedule:  # Celery's parser drops "#n" and would fire on every such day
        raise InvalidRequest(
            "schedule",
            f"schedule {schedule!r} names an nth weekday ('#'), which Celery's crontab "
            "cannot fire: name the days of the month instead.",
        )
    for text, (what, size, first) in zip(fields, _FIELDS, strict=True):
        try:
            crontab_parser(size, first).parse(text)
        except (ParseException, ValueError) as exc:
            raise InvalidRequest(
                "schedule", f"schedule has a bad {what} field {text!r} ({exc})."
            ) from None
    if not croniter.is_valid(" ".join(fields)):
        raise InvalidRequest("schedule", f"schedule {schedule!r} is not a cron expression.")
    try:
        next_slot(" ".join(fields), "UTC", dj_timezone.now())
    except CroniterBadDateError:  # 31 February, say
        raise InvalidRequest("schedule", f"schedule {schedule!r} names no date.") from None
    return " ".join(fields)


def check_timezone(name: Any) -> str:
    """An IANA time zone name (``None``: ``UTC``). Raises ``InvalidRequest("timezone")``."""
    if name is None:
        return "UTC"
    if not isinstance(name, str) or name not in _zone_names():
        raise InvalidRequest(
            "timezone", f"timezone {name!r} is not an IANA time zone (e.g. Europe/Paris)."
        )
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidRequest("timezone", f"timezone {name!r} is not known here.") from None
    return name


@functools.cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones() | {"UTC"})


def check_end_time(end_time: Any, now: datetime) -> datetime | None:
    """An aware datetime after ``now``, or ``None``. Raises ``InvalidRequest("end_time")``."""
    if end_time is None:
        return None
    if not isinstance(end_time, datetime):
        raise InvalidRequest("end_time", "end_time must be a date and time.")
    if dj_timezone.is_naive(end_time):
        end_time = end_time.replace(tzinfo=ZoneInfo("UTC"))
    if end_time <= now:
        raise InvalidRequest("end_time", f"end_time {end_time.isoformat()} is in the past.")
    return end_time


def next_slot(schedule: str, zone: str, after: datetime) -> datetime:
    """The cron's first slot strictly after ``after``, in UTC."""
    local = after.astimezone(ZoneInfo(zone))
    # day_or=False: both day fields must match, as Celery's crontab fires.
    found = croniter(schedule, local, day_or=False).get_next(datetime)
    return found.astimezone(ZoneInfo("UTC"))


def _slot_before(end_time: datetime | None, slot: datetime) -> datetime | None:
    """``slot``, or ``None`` when it falls after the cron's ``end_time``: no fire is
    shown as next that will not happen."""
    return slot if end_time is None or slot <= end_time else None


def _checked_payload(graph: str, payload: dict, thread: Thread | None) -> dict:
    """``payload`` checked as ``start`` checks a run's request (nothing is written), and
    its config against the graph's config schema, as an assistant's is: on a thread of
    its own a run needs an input; on a thread, none goes on from its next tasks."""
    compiled = compiled_graph(graph)
    if payload.get("input") is not None or thread is None:
        check_input(compiled, payload.get("input"))
    check_config_schema(compiled, run_fields(_request(payload, graph=graph), compiled)["config"])
    return {k: v for k, v in payload.items() if k in PAYLOAD_KEYS and v is not None}


def _request(payload: dict, **fields: Any) -> RunRequest:
    """The ``RunRequest`` a fire of a cron with ``payload`` makes, with ``fields`` over
    it; a cron's runs queue behind an active one (``enqueue``) unless it says otherwise."""
    asked = {f: payload.get("stream_mode" if f == "stream_modes" else f) for f in OPTION_FIELDS}
    asked["durability"] = asked["durability"] or "async"
    asked["multitask_strategy"] = asked["multitask_strategy"] or "enqueue"
    return RunRequest(input=payload.get("input"), **(asked | fields))


def _check_on_run_completed(value: Any) -> str:
    if value not in Cron.OnRunCompleted.values:
        raise InvalidRequest("on_run_completed", "on_run_completed is delete or keep.")
    return value


# -- requests ----------------------------------------------------------------------------


def create_cron(
    schedule: str,
    *,
    tenant: Tenant,
    assistant_id: str,
    thread: Thread | None = None,
    timezone: str | None = None,
    end_time: datetime | None = None,
    enabled: bool = True,
    on_run_completed: str = "delete",
    payload: dict | None = None,
    requested_by: Any = None,
) -> Cron:
    """A cron of the assistant ``assistant_id`` in ``tenant`` (kept as the caller named
    it: a stored assistant's UUID or a registered graph's name), on ``thread`` or,
    without one, on a new thread per fire; ``payload`` holds the run's request
    (``PAYLOAD_KEYS``; ``metadata`` is also the cron's). Its beat task is written in the
    same transaction, and the creation audited. Raises ``InvalidRequest`` (see the
    module; ``UnknownAssistant`` names ``assistant_id``)."""
    resolved = resolve_assistant(tenant, assistant_id)
    graph = resolved.graph
    now = dj_timezone.now()
    schedule = check_schedule(schedule)
    zone = check_timezone(timezone)
    end_time = check_end_time(end_time, now)
    on_run_completed = _check_on_run_completed(on_run_completed)
    payload = _checked_payload(graph, payload or {}, thread)
    check_request(RunRequest(graph=graph), thread)
    with transaction.atomic():
        cron = Cron.objects.create(
            tenant=tenant,
            thread=thread,
            assistant_id=assistant_id,
            stored_assistant=resolved.assistant,
            graph=graph,
            schedule=schedule,
            timezone=zone,
            end_time=end_time,
            enabled=bool(enabled),
            on_run_completed=on_run_completed,
            payload=payload,
            metadata=payload.get("metadata") or {},
            user_id=audit.actor_name(requested_by) or "",
            next_run_date=_slot_before(end_time, next_slot(schedule, zone, now))
            if enabled
            else None,
        )
        beat.follow(cron)
        _audit(audit.Action.CRON_CREATE, cron, requested_by)
    return cron


def update_cron(cron: Cron, changes: dict, *, requested_by: Any = None) -> Cron:
    """Change what ``changes`` names of ``cron``: ``schedule``, ``timezone``,
    ``end_time`` (``None`` clears it), ``enabled``, ``on_run_completed``, and the
    payload's keys (``metadata`` is merged into the cron's). The next slot is computed
    again from now, and the beat task follows, in one transaction. Raises
    ``InvalidRequest`` as ``create_cron``."""
    now = dj_timezone.now()
    schedule = check_schedule(changes.get("schedule", cron.schedule))
    zone = check_timezone(changes.get("timezone", cron.timezone))
    end_time = cron.end_time
    if "end_time" in changes:
        end_time = check_end_time(changes["end_time"], now)
    on_run_completed = _check_on_run_completed(
        changes.get("on_run_completed", cron.on_run_completed)
    )
    payload = dict(cron.payload)
    for key in PAYLOAD_KEYS:
        if changes.get(key) is not None:
            payload[key] = changes[key]
    if changes.get("metadata") is not None:
        payload["metadata"] = {**cron.metadata, **changes["metadata"]}
    payload = _checked_payload(cron.graph, payload, cron.thread)
    enabled = bool(changes.get("enabled", cron.enabled))
    if changes.get("enabled") and end_time is not None and end_time <= now:
        raise InvalidRequest(
            "enabled",
            f"The cron ended at {end_time.isoformat()}: give a later end_time to enable it.",
        )
    with transaction.atomic():
        cron = Cron.objects.select_for_update().get(pk=cron.pk)
        moved = (schedule, zone, enabled) != (cron.schedule, cron.timezone, cron.enabled)
        if moved or cron.next_run_date is None:
            slot = next_slot(schedule, zone, now) if enabled else None
            cron.next_run_date = slot and _slot_before(end_time, slot)
        cron.schedule, cron.timezone, cron.end_time = schedule, zone, end_time
        cron.on_run_completed, cron.payload, cron.enabled = on_run_completed, payload, enabled
        cron.metadata = payload.get("metadata") or {}
        cron.save()
        beat.follow(cron)
        _audit(audit.Action.CRON_UPDATE, cron, requested_by, sorted(changes))
    return Cron.objects.select_related("tenant", "thread").get(pk=cron.pk)


def delete_cron(cron: Cron, *, requested_by: Any = None) -> None:
    """Delete ``cron`` and so its beat task (``beat.forget``); the runs it started stay,
    no longer marked."""
    with transaction.atomic():
        _audit(audit.Action.CRON_DELETE, cron, requested_by)
        cron.delete()


def _audit(action: str, cron: Cron, requested_by: Any, changed: list | None = None) -> None:
    detail = {"cron_id": str(cron.cron_id), "schedule": cron.schedule, "enabled": cron.enabled}
    if changed is not None:
        detail["changed"] = changed
    audit.record(action, actor=requested_by, tenant=cron.tenant, thread=cron.thread, detail=detail)


# -- fires -------------------------------------------------------------------------------


def fire(cron_pk: int, now: datetime | None = None) -> Run | None:
    """Start the run of the cron's due slot, once: claim ``next_run_date`` (due by
    ``now``, default the current time) by moving it to the following slot where it
    still holds the slot read, then start the run on the cron's thread or a new one,
    marked with the cron. Returns that run, or ``None`` when nothing was started: the
    cron is gone or disabled, its slot is not due or was claimed by another fire, the
    slot is older than ``DURABLE_CRON_GRACE_SECONDS`` (skipped), ``end_time`` has
    passed (the cron is disabled), or ``start`` refused the run (logged, and kept in
    ``last_error`` until a fire starts one)."""
    now = now or dj_timezone.now()
    cron = Cron.objects.select_related("tenant", "thread").filter(pk=cron_pk).first()
    if cron is None or not cron.enabled:
        return None
    if cron.end_time is not None and cron.end_time <= now:
        _end(cron)
        return None
    slot = cron.next_run_date
    if slot is None or slot > now + timedelta(seconds=EARLY_SECONDS):
        return None
    following = _slot_before(cron.end_time, next_slot(cron.schedule, cron.timezone, max(now, slot)))
    fresh = now - slot <= timedelta(seconds=float(conf.DURABLE_CRON_GRACE_SECONDS))
    with transaction.atomic():
        claimed = Cron.objects.filter(pk=cron.pk, enabled=True, next_run_date=slot).update(
            next_run_date=following, **({"last_run_date": slot} if fresh else {})
        )
        if not claimed:
            return None
        if not fresh:
            logger.info("cron %s: slot %s missed (now %s); skipped", cron.cron_id, slot, now)
            return None
        try:
            with transaction.atomic():
                run = _start(cron)
        except InvalidRequest as exc:
            # Kept on the row, so that the Crons page shows a cron whose fires all fail.
            logger.warning("cron %s: run refused (%s: %s)", cron.cron_id, exc.field, exc)
            refused = f"{exc.field}: {exc.message}"
            Cron.objects.filter(pk=cron.pk).update(last_error=refused)
            return None
        if cron.last_error:
            Cron.objects.filter(pk=cron.pk).update(last_error="")
        return run


def _start(cron: Cron) -> Run:
    """The fire's run, on the cron's assistant as it stands now (its latest version's
    config and context under the cron's own); raises ``UnknownAssistant`` for one
    deleted since."""
    payload = cron.payload
    chosen = resolve_assistant(
        cron.tenant, cron.assistant_id, payload.get("config"), payload.get("context")
    )
    request = _request(
        payload,
        graph=chosen.graph,
        assistant=chosen,
        config=chosen.config,
        context=chosen.context,
        requested_by=f"cron:{cron.cron_id}",
    )
    name = cron.thread.name if cron.thread is not None else None
    run = submit(request, name=name, tenant=cron.tenant, cron=cron)
    if cron.thread is None:
        # Its own thread, as a stateless run's: deleted once the run ends, or kept.
        set_on_completion(run, cron.on_run_completed)
    return run


def _end(cron: Cron) -> None:
    with transaction.atomic():
        if Cron.objects.filter(pk=cron.pk, enabled=True).update(enabled=False, next_run_date=None):
            cron.enabled = False
            beat.follow(cron)
