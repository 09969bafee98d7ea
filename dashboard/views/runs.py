"""A run's live progress: its RunEvents as server-sent events."""

from __future__ import annotations

from django.http import Http404, HttpResponseBadRequest, StreamingHttpResponse
from django.views.decorators.http import require_GET

from durable import events
from durable.models import Run


@require_GET
async def run_events(request, pk: int):
    """The run's events as server-sent events (``id:`` seq, ``event:`` the stream mode
    or ``lifecycle``, ``data:`` JSON), after the ``Last-Event-ID`` header's (or the
    ``after`` parameter's) event; then ``event: end`` with the final status. The thread
    page re-renders its live part on each. Served under ASGI (``make run``)."""
    try:
        after = events.last_event_id(request)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    if not await events.borrow(_run_exists, pk):
        raise Http404(f"No run {pk}.")
    return StreamingHttpResponse(
        _run_event_stream(pk, after), content_type="text/event-stream", headers=events.SSE_HEADERS
    )


def _run_exists(pk: int) -> bool:
    return Run.objects.filter(pk=pk).exists()


async def _run_event_stream(pk: int, after: int):
    async for item in events.follow(pk, after):
        if isinstance(item, events.Event):
            yield events.sse(item.event, {"ns": item.ns, "data": item.data}, id=item.seq)
        elif isinstance(item, events.Keepalive):
            yield b": keepalive\n\n"
        else:
            yield events.sse("end", {"status": item.status})
