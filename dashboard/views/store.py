"""The store browser: LangGraph's long-term memory (``DjangoStore``), read-only.

``/store/?ns=a.b&filter=...&page=N``: the namespaces as a tree, and the items under
namespace prefix ``ns`` (labels joined with ``.``, which LangGraph forbids inside a
label) that match ``filter`` (``dashboard.forms.filters.parse_filter``), newest first,
``ITEMS_PER_PAGE`` a page. Reads never refresh an item's TTL.
"""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import access
from dashboard.forms import BadFilter, parse_filter, store_page
from dashboard.present.store import tree

ITEMS_PER_PAGE = 20
# Namespaces the tree shows at most; beyond that the page says so.
NAMESPACES_SHOWN = 500


@require_GET
def store(request):
    """The store page; a bad filter or namespace is shown with its error (400), and
    no item is listed."""
    store = access.store(request)
    ns_text = request.GET.get("ns", "").strip().strip(".")
    prefix = tuple(label for label in ns_text.split(".") if label)
    filter_text = request.GET.get("filter", "")
    page = store_page(request.GET.get("page", ""))
    namespaces = store.list_namespaces(limit=NAMESPACES_SHOWN + 1)
    context = {
        "tree": tree(namespaces[:NAMESPACES_SHOWN]),
        "more_namespaces": len(namespaces) > NAMESPACES_SHOWN,
        "ns": ".".join(prefix),
        "crumbs": [(label, ".".join(prefix[: i + 1])) for i, label in enumerate(prefix)],
        "filter_text": filter_text,
        "page": page,
        "items": [],
        "error": "",
    }
    try:
        found = store.search(
            prefix,
            filter=parse_filter(filter_text),
            limit=ITEMS_PER_PAGE + 1,
            offset=(page - 1) * ITEMS_PER_PAGE,
            refresh_ttl=False,
        )
    except (BadFilter, ValueError) as exc:
        context["error"] = str(exc) if isinstance(exc, BadFilter) else f"filter: {exc}"
        return render(request, "dashboard/store.html", context, status=400)
    context["items"] = found[:ITEMS_PER_PAGE]
    context["has_next"] = len(found) > ITEMS_PER_PAGE
    return render(request, "dashboard/store.html", context)
