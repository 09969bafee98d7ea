"""What the threads list shows above its rows: one tab per status, with its count."""

from __future__ import annotations

from django.db.models import Count
from django.http import QueryDict

from dashboard.present.links import query_changed
from durable.models import Thread


def status_tabs(filterset, query: QueryDict) -> list[dict]:
    """One tab per status, after ``all``: its ``value`` and ``label``, its ``count``
    among the threads the other filters of ``filterset`` (a valid ``ThreadFilter``)
    keep, whether it is the ``current`` one, and the ``query`` string of its link (the
    page's ``query`` with this status, from the first page)."""
    counts = dict(filterset.without("status").values_list("status").annotate(n=Count("pk")))
    chosen = filterset.form.cleaned_data.get("status") or ""
    tabs = [{"value": "", "label": "all", "count": sum(counts.values()), "current": not chosen}]
    for value, label in Thread.Status.choices:
        count = counts.get(value, 0)
        tabs.append({"value": value, "label": label, "count": count, "current": chosen == value})
    for tab in tabs:
        tab["query"] = query_changed(query, status=tab["value"] or None, after=None, before=None)
    return tabs
