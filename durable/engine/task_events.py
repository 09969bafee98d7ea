"""What a run's ``tasks`` events say about its root tasks (LangGraph's ``tasks`` stream
mode: a task's start carries ``input``, its result ``error``/``result``/``interrupts``;
ids are deterministic per super-step, so a task executed again from the same checkpoint
keeps its id): which ran more than once, which run now."""

from __future__ import annotations

from collections import Counter

from django.db.models import QuerySet

from durable.models import Run, RunEvent

# How many of a run's latest ``tasks`` events tell which nodes run now.
RECENT_TASK_EVENTS = 200


def task_starts(run_id) -> QuerySet[RunEvent]:
    """The run's ``tasks`` events of the graph itself that say a task starts."""
    return RunEvent.objects.filter(run=run_id, event="tasks", ns="", data__has_key="input")


def executions(run: Run) -> Counter:
    """How many times each root task of ``run`` executed, counted from its
    ``tasks`` events in order: a start counts unless the task's result was recorded
    before it (LangGraph announces a task whose saved writes it reapplies, and runs it
    not), and each result after the first counts too (the task ran again because its
    writes were not saved). Keys are ``(task id, name)``."""
    done: set[str] = set()
    counts: Counter = Counter()
    events = RunEvent.objects.filter(run=run, event="tasks", ns="").order_by("seq")
    for data in events.values_list("data", flat=True).iterator():
        if not isinstance(data, dict) or "id" not in data:
            continue
        key = (data["id"], data.get("name", ""))
        if "input" in data:
            if data["id"] not in done:
                counts[key] += 1
        elif data["id"] in done:
            counts[key] += 1
        else:
            done.add(data["id"])
    return counts


def running_nodes(run: Run) -> list[str]:
    """The root nodes of ``run`` started and not finished in its current attempt (since
    the latest claim's lifecycle event, which names the attempt), from its latest
    events."""
    claims = RunEvent.objects.filter(run=run, event=RunEvent.LIFECYCLE, data__has_key="attempt")
    since = claims.order_by("-seq").values_list("seq", flat=True).first() or 0
    recent = RunEvent.objects.filter(run=run, event="tasks", ns="", seq__gt=since)
    recent = recent.order_by("-seq")
    started: dict[str, str] = {}
    ended: set[str] = set()
    for data in reversed(list(recent.values_list("data", flat=True)[:RECENT_TASK_EVENTS])):
        if not isinstance(data, dict) or "id" not in data:
            continue
        if "input" in data:
            started[data["id"]] = data.get("name", "")
        else:
            ended.add(data["id"])
    return sorted({name for task, name in started.items() if task not in ended})
