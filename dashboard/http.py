"""The console's responses beyond a plain ``render``: the redirect after a POST, a page
or (for htmx) one of its partials, and a stream of server-sent events."""

from __future__ import annotations

from collections.abc import AsyncIterator

from django.http import HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import render

from durable import sse


def see_other(url: str) -> HttpResponseRedirect:
    """303 to ``url``: the browser follows a POST's result with a GET, so reloading the
    page it lands on does not post again."""
    return HttpResponseRedirect(url, status=303)


def render_page(request, template, context, *, target, part, status=200, part_only=False):
    """``template`` rendered whole, or only its partial ``part`` (django-template-partials'
    ``"page.html#part"``) when htmx targets the element ``target`` or ``part_only`` is
    set. The response says ``Vary: HX-Request``, since it depends on that header."""
    if part_only or (request.htmx and request.htmx.target == target):
        template = f"{template}#{part}"
    response = render(request, template, context, status=status)
    response["Vary"] = "HX-Request"
    return response


def event_stream(events: AsyncIterator[bytes]) -> StreamingHttpResponse:
    """A ``text/event-stream`` response sending ``events`` (bytes from
    ``durable.sse.event``), with the headers that keep caches and proxies from holding
    them back (``durable.sse.SSE_HEADERS``)."""
    return StreamingHttpResponse(events, content_type="text/event-stream", headers=sse.SSE_HEADERS)
