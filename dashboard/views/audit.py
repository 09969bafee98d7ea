"""The audit trail of the current tenant: filtered, paged, and exported as CSV.

Filters are GET parameters (``?action=fork&actor=ann&thread=order-1&after=2026-11-01``),
so a filtered view is a link; ``?format=csv`` downloads the same rows.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import access
from dashboard.forms import AuditFilter
from dashboard.present.audit import csv_lines, decisions

PAGE_SIZE = 100


@require_GET
def audit(request):
    """The tenant's audit events, newest first, ``PAGE_SIZE`` a page, a resume's with
    its decisions in words; bad filters are form errors (400) naming the parameter."""
    filterset = AuditFilter(request.GET, queryset=access.audit_events(request))
    if not filterset.is_valid():
        return render(request, "dashboard/audit.html", {"filter": filterset}, status=400)
    if request.GET.get("format") == "csv":
        return _csv(request, filterset.qs)
    page = Paginator(filterset.qs, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "dashboard/audit.html",
        {
            "filter": filterset,
            "page": page,
            "rows": [(event, decisions(event)) for event in page],
            "query": query.urlencode(),
        },
    )


def _csv(request, events) -> StreamingHttpResponse:
    slug = request.tenant.slug if request.tenant else "none"
    return StreamingHttpResponse(
        csv_lines(events.select_related("tenant").iterator(chunk_size=500)),
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="audit-{slug}.csv"'},
    )
