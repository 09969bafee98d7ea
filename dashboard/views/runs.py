"""A run's page and its live progress: its RunEvents as server-sent events, and
cancelling it."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard import access
from dashboard.http import render_page, see_other
from dashboard.present.runs import describe, elapsed, running_nodes
from durable import engine, logcontext, sse
from durable.db import borrow
from durable.engine import follow
from durable.models import Run
from durable.redaction import redact

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
    if not await borrow(access.may_see_run, request, pk):
        raise Http404(f"No run {pk}.")
    return sse.response(_run_event_stream(pk, after))


async def _run_event_stream(pk: int, after: int):
    async for item in follow.follow(pk, after):
        if isinstance(item, follow.Event):
            yield sse.event(item.event, {"ns": item.ns, "data": item.data}, id=item.seq)
        elif isinstance(item, follow.Keepalive):
            yield sse.KEEPALIVE
        else:
            yield sse.event("end", {"status": item.status})


@require_GET
def run_event(request, pk: int, seq: int):
    """``/runs/<pk>/events/<seq>/``: one event of the run as JSON, whole (the run page
    shows long ones shortened), masked (``durable.redaction``). 404 for a run the
    request may not see."""
    run = get_object_or_404(access.runs(request), pk=pk)
    event = get_object_or_404(run.events, seq=seq)
    body = {"seq": event.seq, "event": event.event, "ns": event.ns, "data": redact(event.data)}
    return JsonResponse(body, json_dumps_params={"indent": 2, "ensure_ascii": False})


# -- the run page ------------------------------------------------------------------------


@require_GET
def run_detail(request, pk: int):
    """Run ``pk``: status (text and icon), who asked and why, timings, the node(s)
    running now, and its latest ``EVENTS_SHOWN`` events. While the run is active the
    page follows ``run_events`` over SSE (htmx's SSE extension) and re-renders its
    ``live`` partial on each event, polls that partial every 2 s when no stream is
    open, and reloads itself without JavaScript. An htmx request aimed at ``run-live``
    gets only that partial; a run a cron started says so. 404 for a run the request
    may not see."""
    run = get_object_or_404(
        access.runs(request).select_related("thread", "assistant", "cron"), pk=pk
    )
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
    return see_other(reverse("run", args=[run.pk]))


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
        "elapsed": elapsed(run),
        "reason": (run.metadata or {}).get("reason", ""),
        "log_query": logcontext.query(run.pk, settings.DURABLE_LOG_FORMAT),
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
