"""A run's page and its live progress: its RunEvents as server-sent events, and
cancelling it."""

from __future__ import annotations

import json

from django.http import (
    Http404,
    HttpResponseBadRequest,
    HttpResponseRedirect,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from dashboard import access
from dashboard.views.pages import render_page
from durable import engine, sse
from durable.db import borrow
from durable.engine import follow as events
from durable.models import Run, RunEvent

# The newest events a run page shows; older ones are counted, not listed.
EVENTS_SHOWN = 200


@require_GET
async def run_events(request, pk: int):
    """The run's events as server-sent events (``id:`` seq, ``event:`` the stream mode
    or ``lifecycle``, ``data:`` JSON), after the ``Last-Event-ID`` header's (or the
    ``after`` parameter's) event; then ``event: end`` with the final status. The thread
    page re-renders its live part on each. Served under ASGI (``make run``)."""
    try:
        after = sse.last_event_id(request)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    if not await borrow(_visible, request, pk):
        raise Http404(f"No run {pk}.")
    return StreamingHttpResponse(
        _run_event_stream(pk, after), content_type="text/event-stream", headers=sse.SSE_HEADERS
    )


def _visible(request, pk: int) -> bool:
    """Whether run ``pk`` exists and ``request`` may see it (``dashboard.access``)."""
    return access.runs(request).filter(pk=pk).exists()


async def _run_event_stream(pk: int, after: int):
    async for item in events.follow(pk, after):
        if isinstance(item, events.Event):
            yield sse.event(item.event, {"ns": item.ns, "data": item.data}, id=item.seq)
        elif isinstance(item, events.Keepalive):
            yield sse.KEEPALIVE
        else:
            yield sse.event("end", {"status": item.status})


@require_GET
def run_event(request, pk: int, seq: int):
    """``/runs/<pk>/events/<seq>/``: one event of the run as JSON, whole (the run page
    shows long ones shortened). 404 for a run the request may not see."""
    run = get_object_or_404(access.runs(request), pk=pk)
    event = get_object_or_404(run.events, seq=seq)
    body = {"seq": event.seq, "event": event.event, "ns": event.ns, "data": event.data}
    return JsonResponse(body, json_dumps_params={"indent": 2, "ensure_ascii": False})


# -- the run page ------------------------------------------------------------------------


@require_GET
def run_detail(request, pk: int):
    """Run ``pk``: status (text and icon), who asked and why, timings, the node(s)
    running now, and its latest ``EVENTS_SHOWN`` events. While the run is active the
    page follows ``run_events`` over SSE (htmx's SSE extension) and re-renders its
    ``live`` partial on each event, polls that partial every 2 s when no stream is
    open, and reloads itself without JavaScript. An htmx request aimed at ``run-live``
    gets only that partial. 404 for a run the request may not see."""
    run = get_object_or_404(access.runs(request).select_related("thread"), pk=pk)
    return _render_run(request, run)


@require_POST
def cancel_run(request, pk: int):
    """Cancel run ``pk`` (``durable.engine.cancel``): a pending run ends at once, a
    running one stops at its next super-step. Then 303 to the run page, or, for htmx,
    the page's live partial. A run that already ended is refused with the reason
    shown (400 without htmx)."""
    run = get_object_or_404(access.runs(request).select_related("thread"), pk=pk)
    access.require_operator(request)
    error = ""
    try:
        engine.cancel(run, requested_by=request.user)
    except engine.InvalidRequest as exc:
        error = exc.message
    run.refresh_from_db()
    if request.htmx:
        return _render_run(request, run, error=error, partial=True)
    if error:
        return _render_run(request, run, error=error, status=400)
    return HttpResponseRedirect(reverse("run", args=[run.pk]), status=303)


def _render_run(request, run: Run, *, error: str = "", status: int = 200, partial=None):
    newest = list(run.events.order_by("-seq")[:EVENTS_SHOWN])
    newest.reverse()
    total = newest[-1].seq if newest else 0
    context = {
        "run": run,
        "thread": run.thread,
        "events": [describe(e) for e in newest],
        "hidden_events": max(0, total - len(newest)),
        "last_seq": total,
        "running_nodes": running_nodes(newest) if run.is_active else [],
        "elapsed": _elapsed(run),
        "reason": (run.metadata or {}).get("reason", ""),
        "error": error,
    }
    return render_page(
        request,
        "dashboard/run_detail.html",
        context,
        target="run-live",
        part="live",
        status=status,
        part_only=partial,
    )


def _elapsed(run: Run):
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
    finished, failed, interrupted, update, custom), ``what`` (a sentence), ``ns`` and
    ``data`` (the JSON, shown on demand)."""
    kind, what = _summary(event.event, event.data)
    return {
        "seq": event.seq,
        "time": event.created_at,
        "kind": kind,
        "what": what,
        "ns": event.ns,
        "data": event.data,
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
    return event, event


def _lifecycle_sentence(data: dict) -> str:
    words = [f"status {data.get('status', '?')}"]
    for key in ("kind", "detail", "stop_requested", "draining", "error", "node"):
        if data.get(key):
            words.append(f"{key.replace('_', ' ')}: {data[key]}")
    if "continues_from" in data:
        words.append("continues from its last checkpoint")
    return "; ".join(words)
