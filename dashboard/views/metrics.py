"""``GET /metrics``: Prometheus' scrape of ``durable.metrics``, for whoever
``DURABLE_METRICS_TOKEN`` names: a client sending that bearer token, or, with no token
set, a client on the loopback interface only, and not through a proxy (a reverse proxy
on the same machine connects from loopback for every client it forwards). Anyone else
gets a bare 403, no series."""

from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.views.decorators.http import require_GET

from durable import conf
from durable.metrics.exposition import CONTENT_TYPE, render

LOOPBACK = ("127.0.0.1", "::1")
# Headers a reverse proxy adds to what it forwards.
FORWARDED = ("Forwarded", "X-Forwarded-For", "X-Real-IP")


def may_scrape(request: HttpRequest) -> bool:
    """Whether ``request`` may read the metrics: the configured bearer token, compared
    in constant time; without one, a loopback ``REMOTE_ADDR`` with no proxy's header."""
    token = conf.DURABLE_METRICS_TOKEN
    if token:
        scheme, _, sent = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(sent.strip(), token)
    forwarded = any(name in request.headers for name in FORWARDED)
    return request.META.get("REMOTE_ADDR") in LOOPBACK and not forwarded


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not may_scrape(request):
        return HttpResponseForbidden(b"Forbidden\n", content_type="text/plain")
    response = HttpResponse(render(), content_type=CONTENT_TYPE)
    response["Cache-Control"] = "no-store"
    return response
