"""The audit trail of the current tenant: filtered, paged, and exported as CSV.

Filters are GET parameters (``?action=fork&actor=ann&thread=order-1&after=2026-11-01``),
so a filtered view is a link; ``?format=csv`` downloads the same rows.
"""

from __future__ import annotations

import csv
import json

import django_filters
from django import forms
from django.core.paginator import Paginator
from django.http import StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import access
from durable.models import AuditEvent

PAGE_SIZE = 100
CSV_COLUMNS = [
    "created_at",
    "tenant",
    "actor",
    "action",
    "thread_name",
    "thread_id",
    "run_id",
    "checkpoint_id",
    "checkpoint_before",
    "checkpoint_after",
    "reason",
    "detail",
]


class AuditFilter(django_filters.FilterSet):
    action = django_filters.ChoiceFilter(choices=AuditEvent.Action.choices)
    actor = django_filters.CharFilter(lookup_expr="icontains")
    thread = django_filters.CharFilter(field_name="thread_name", lookup_expr="icontains")
    after = django_filters.DateTimeFilter(
        field_name="created_at",
        lookup_expr="gte",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )
    before = django_filters.DateTimeFilter(
        field_name="created_at",
        lookup_expr="lt",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )

    class Meta:
        model = AuditEvent
        fields: list[str] = []


@require_GET
def audit(request):
    """The tenant's audit events, newest first, ``PAGE_SIZE`` a page; bad filters are
    form errors (400) naming the parameter."""
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
        {"filter": filterset, "page": page, "query": query.urlencode()},
    )


class _Echo:
    def write(self, value):
        return value


def _csv(request, events) -> StreamingHttpResponse:
    writer = csv.writer(_Echo())

    def rows():
        yield writer.writerow(CSV_COLUMNS)
        for event in events.select_related("tenant").iterator(chunk_size=500):
            yield writer.writerow(_csv_row(event))

    slug = request.tenant.slug if request.tenant else "none"
    return StreamingHttpResponse(
        rows(),
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="audit-{slug}.csv"'},
    )


def _csv_row(event: AuditEvent) -> list:
    values = {c: getattr(event, c) for c in CSV_COLUMNS if c not in ("tenant", "created_at")}
    values["tenant"] = event.tenant.slug if event.tenant else ""
    values["created_at"] = event.created_at.isoformat()
    values["detail"] = json.dumps(event.detail, sort_keys=True, default=str)
    return [_cell(values[c]) for c in CSV_COLUMNS]


def _cell(value) -> str:
    """A CSV cell that a spreadsheet will not run as a formula (OWASP CSV injection)."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
