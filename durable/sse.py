"""Server-sent events on the wire, for the console's run pages and the API's run streams:
one event's bytes, the response that sends them, the keep-alive comment, and where a
reconnecting client resumes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import StreamingHttpResponse

from durable.metrics import process as metrics
from durable.redaction import redact

# What a stream writes when ``durable.engine.follow`` reports a quiet spell: a comment,
# so that proxies and browsers keep the connection open.
KEEPALIVE = b": keepalive\n\n"


def event(name: str | None, data: Any, id: int | str | None = None) -> bytes:
    """One server-sent event: ``id:`` (when given), ``event:`` (when given) and the
    ``data`` as one line of JSON, its sensitive values masked (``durable.redaction``)."""
    lines = []
    if id is not None:
        lines.append(f"id: {id}")
    if name is not None:
        lines.append(f"event: {name}")
    # The one way out of every stream (the API's and the console's): masked here.
    data = redact(data)
    lines.append(f"data: {json.dumps(data, cls=DjangoJSONEncoder, separators=(',', ':'))}")
    return ("\n".join(lines) + "\n\n").encode()


SSE_HEADERS = {
    "Cache-Control": "no-store",
    # nginx buffers responses unless told not to.
    "X-Accel-Buffering": "no",
}


def response(events: AsyncIterator[bytes]) -> StreamingHttpResponse:
    """A ``text/event-stream`` response sending ``events`` (bytes from ``event``, or
    ``KEEPALIVE``), with the headers that keep caches and proxies from holding them back
    (``SSE_HEADERS``)."""
    return StreamingHttpResponse(
        _counted(events), content_type="text/event-stream", headers=SSE_HEADERS
    )


async def _counted(events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``events``, counted as an open stream (``durable_event_streams_open``) from the
    first byte sent until the stream ends or the client goes away."""
    with metrics.EVENT_STREAMS_OPEN.track_inprogress():
        async for chunk in events:
            yield chunk


# How much of a refused Last-Event-ID a 422 says back: enough to recognise it, and no
# more, so a header of any length is never echoed whole.
ECHOED_ID_CHARS = 40


def echoed_id(value: str) -> str:
    """``value`` quoted for an error message, cut to ``ECHOED_ID_CHARS``."""
    if len(value) <= ECHOED_ID_CHARS:
        return repr(value)
    return f"{value[:ECHOED_ID_CHARS]!r}… ({len(value)} characters)"


def last_event_id(request) -> int:
    """The seq a reconnecting client already has: its ``Last-Event-ID`` header (sent by
    browsers' EventSource and the SDK on reconnect), else the ``after`` query
    parameter, else 0. ``-1`` is 0 too: the JS SDK's ``joinStream`` sends it to replay
    a run from its start (the Agent Server's stream ids). Raises ``ValueError`` for one
    that is not a whole number."""
    value = request.headers.get("Last-Event-ID") or request.GET.get("after") or "0"
    if value == "-1":
        return 0
    if not value.isdigit():
        raise ValueError(
            f"Last-Event-ID must be an event id (a whole number), not {echoed_id(value)}."
        )
    return int(value)
