"""A run as its page shows it: each RunEvent in words, the nodes running now, and how long
the run has taken."""

from __future__ import annotations

import json

from django.utils import timezone

from durable.models import Run, RunEvent
from durable.redaction import redact


def elapsed(run: Run):
    """How long ``run`` has run (until now while it runs); ``None`` before it starts."""
    if run.started_at is None:
        return None
    return (run.ended_at or timezone.now()) - run.started_at


def running_nodes(newest: list[RunEvent]) -> list[str]:
    """Names of the tasks that started and have not finished, from the ``tasks``
    events of the graph itself (not its subgraphs), in the order they started."""
    started: dict[str, str] = {}
    for event in newest:
        if event.event != "tasks" or event.ns or not isinstance(event.data, dict):
            continue
        task = event.data.get("id")
        if _task_finished(event.data):
            started.pop(task, None)
        else:
            started[task] = str(event.data.get("name", ""))
    return list(started.values())


def _task_finished(data: dict) -> bool:
    return "result" in data or "error" in data or "interrupts" in data


def describe(event: RunEvent) -> dict:
    """One event for the page: ``seq``, ``time``, ``kind`` (lifecycle, started,
    finished, failed, interrupted, update, custom; or the stream mode an API client
    asked the run to record: values, token, events, debug, checkpoints), ``what`` (a
    sentence), ``ns`` and ``data`` (the JSON, shown on demand); masked
    (``durable.redaction``)."""
    data = redact(event.data)
    kind, what = _summary(event.event, data)
    return {
        "seq": event.seq,
        "time": event.created_at,
        "kind": kind,
        "what": what,
        "ns": event.ns,
        "data": data,
    }


def _summary(event: str, data) -> tuple[str, str]:
    if event == RunEvent.LIFECYCLE and isinstance(data, dict):
        return "lifecycle", _lifecycle_sentence(data)
    if event == "tasks" and isinstance(data, dict):
        name = data.get("name", "?")
        if data.get("error"):
            return "failed", f"{name} failed: {data['error']}"
        if data.get("interrupts"):
            return "interrupted", f"{name} stopped at an interrupt"
        if _task_finished(data):
            return "finished", f"{name} finished"
        return "started", f"{name} started"
    if event == "updates" and isinstance(data, dict):
        parts = []
        for node, update in data.items():
            if node == "__interrupt__":
                parts.append("interrupt raised")
            elif isinstance(update, dict) and update:
                parts.append(f"{node} wrote {', '.join(sorted(map(str, update)))}")
            else:
                parts.append(f"{node} wrote nothing")
        return "update", "; ".join(parts) or "update"
    if event == "custom":
        return "custom", json.dumps(data, ensure_ascii=False, default=str)[:200]
    return _recorded_for_clients(event, data)


def _recorded_for_clients(event: str, data) -> tuple[str, str]:
    """The modes a run records because an API client asked for them
    (``durable.api.streaming``), in words; anything else by its name."""
    if event == "values":
        return "values", "the whole state after a step"
    if event == "messages" and isinstance(data, list) and len(data) == 2:
        message, metadata = data
        if isinstance(message, dict) and isinstance(metadata, dict):
            text = json.dumps(message.get("content", ""), ensure_ascii=False, default=str)
            return "token", f"{metadata.get('langgraph_node', '?')} streamed {text[:200]}"
    if event == "events" and isinstance(data, dict):
        return "events", f"{data.get('event', '?')} {data.get('name', '')}".strip()
    if event == "debug" and isinstance(data, dict):
        return "debug", f"debug {data.get('type', '?')}"
    if event == "checkpoints" and isinstance(data, dict):
        return "checkpoints", "checkpoint saved"
    return event, event


def _lifecycle_sentence(data: dict) -> str:
    words = [f"status {data.get('status', '?')}"]
    for key in ("kind", "detail", "stop_requested", "draining", "error", "node"):
        if data.get(key):
            words.append(f"{key.replace('_', ' ')}: {data[key]}")
    if "continues_from" in data:
        words.append("continues from its last checkpoint")
    return "; ".join(words)
