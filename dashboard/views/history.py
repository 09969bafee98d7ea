"""The read side of the console: the threads list with its filters, and a thread's
checkpoint history as a tree of lanes.

Both read only indexed columns: the list pages by keyset on (updated_at, pk), the tree
by checkpoint id (``durable.history``), so neither slows down as threads or histories
grow.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django import forms
from django.db.models import Count
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from dashboard import access, lanes, treehtml
from dashboard.filters import SORTS, PageForm, ThreadFilter, keyset_page
from dashboard.views.pages import render_page
from durable import history
from durable.models import Thread

THREADS_PER_PAGE = 50
TREE_PAGE = 100
SHAPES = {"input": "input", "loop": "loop", "update": "update", "fork": "fork"}


# -- page 1: threads ------------------------------------------------------------------


def render_thread_list(request, extra: dict, status: int = 200):
    """``/``: threads filtered by the GET parameters (``dashboard.filters``), newest
    first by default, with ``extra`` context (the start-run forms). Bad filter input
    gets 400 and the form's errors. A request from htmx that targets
    ``thread-results`` gets only that part."""
    context = {**extra, **threads_context(request)}
    if context["filter_errors"] and status == 200:
        status = 400
    return render_page(
        request,
        "dashboard/thread_list.html",
        context,
        target="thread-results",
        part="results",
        status=status,
    )


def threads_context(request) -> dict:
    filterset = ThreadFilter(request.GET, queryset=access.threads(request))
    paging = PageForm(request.GET)
    valid = filterset.is_valid() & paging.is_valid()  # both, so both show their errors
    errors = form_errors(filterset.form) + form_errors(paging)
    if not valid:
        return {"filter": filterset, "filter_errors": errors, "page": None, "status_tabs": []}
    cleaned = paging.cleaned_data
    page = keyset_page(
        filterset.qs,
        newest_first=(cleaned.get("sort") or "-updated") == "-updated",
        after=cleaned.get("after"),
        before=cleaned.get("before"),
        size=THREADS_PER_PAGE,
    )
    counts = history.checkpoint_counts(t.thread_id for t in page.rows)
    for thread in page.rows:
        thread.checkpoint_count = counts.get(thread.thread_id, 0)
    return {
        "filter": filterset,
        "filter_errors": [],
        "page": page,
        "status_tabs": _status_tabs(request, filterset),
        "sorts": SORTS.items(),
        "meta_values": request.GET.getlist("meta"),
    }


def form_errors(form: forms.Form) -> list[tuple[str, str]]:
    """``[(label, message)]`` of a bound form, field errors labelled by their field."""
    found = []
    for name, messages in form.errors.items():
        label = form.fields[name].label or name if name in form.fields else ""
        found.extend((str(label), str(m)) for m in messages)
    return found


def _status_tabs(request, filterset) -> list[dict]:
    """One tab per status with its count among the threads the other filters keep."""
    counts = dict(filterset.without("status").values_list("status").annotate(n=Count("pk")))
    chosen = filterset.form.cleaned_data.get("status") or ""
    tabs = [{"value": "", "label": "all", "count": sum(counts.values()), "current": not chosen}]
    for value, label in Thread.Status.choices:
        count = counts.get(value, 0)
        tabs.append({"value": value, "label": label, "count": count, "current": chosen == value})
    for tab in tabs:
        tab["query"] = _query(request, status=tab["value"] or None, after=None, before=None)
    return tabs


def _query(request, **changes) -> str:
    """The request's query string with ``changes`` (``None`` removes a parameter)."""
    params = request.GET.copy()
    for key, value in changes.items():
        params.pop(key, None)
        if value is not None:
            params[key] = value
    return "?" + params.urlencode() if params else "?"


# -- page 2: the tree -------------------------------------------------------------------


class TreeForm(forms.Form):
    """Where a tree page starts: ``before`` / ``after`` a checkpoint id, in namespace
    ``ns``."""

    before = forms.CharField(required=False, max_length=64)
    after = forms.CharField(required=False, max_length=64)
    ns = forms.CharField(required=False, max_length=2000, strip=False)


@dataclass
class TreeRow:
    """A node of the drawn tree: the ``node`` (``durable.history.TreeNode``), its place
    (``lane``; ``x``, ``y`` in px), ``shape`` (its source), its inspector's ``url``, and
    a ``title`` in words; ``svg`` and ``li``: its HTML (``dashboard.treehtml``)."""

    node: history.TreeNode
    lane: int
    x: int
    y: int
    shape: str
    url: str
    title: str
    parent_off_page: bool
    children_off_page: int
    svg: str = ""
    li: str = ""


@require_GET
def thread_history(request, pk: int):
    """``/threads/<pk>/history/?ns=&before=&after=``: a page of the checkpoint tree."""
    thread = access.thread_or_404(request, pk)
    form = TreeForm(request.GET)
    if not form.is_valid():
        context = {"thread": thread, "tree": None, "tree_errors": form_errors(form)}
        return render(request, "dashboard/history.html", context, status=400)
    tree = tree_context(thread, **form.cleaned_data)
    context = {"thread": thread, "tree": tree}
    return render_page(request, "dashboard/history.html", context, target="tree", part="tree")


def tree_context(thread: Thread, *, ns: str = "", before: str = "", after: str = "") -> dict:
    """What the tree partial draws: ``rows``, ``layout``, ``page`` and page links."""
    page = history.tree_page(
        thread.thread_id, ns, before=before or None, after=after or None, limit=TREE_PAGE
    )
    on_page = page.ids
    from_above = {n.checkpoint_id for n in page.nodes if set(n.children) - on_page}
    layout = lanes.layout(page.nodes, from_above)
    rows = [_row(thread, ns, node, layout, on_page) for node in page.nodes]
    diff_a = rows[1].node.checkpoint_id if len(rows) > 1 else ""
    diff_b = rows[0].node.checkpoint_id if rows else ""
    for row in rows:
        row.svg = treehtml.svg_node(row)
        row.li = treehtml.list_item(row, diff_a, diff_b)
    base = reverse("thread-history", args=[thread.pk])
    links = {}
    if page.nodes and page.newer:
        links["newest"] = base + query_params(ns=ns)
        links["newer"] = base + query_params(ns=ns, after=page.nodes[0].checkpoint_id)
    if page.nodes and page.older:
        links["older"] = base + query_params(ns=ns, before=page.nodes[-1].checkpoint_id)
    return {
        "rows": rows,
        "layout": layout,
        "page": page,
        "ns": ns,
        "links": links,
        "namespaces": history.namespaces(thread.thread_id) if ns or page.nodes else [],
    }


def query_params(**values) -> str:
    kept = {k: v for k, v in values.items() if v}
    return "?" + urlencode(kept) if kept else ""


def _row(thread, ns, node, layout, on_page) -> TreeRow:
    place = layout.places[node.checkpoint_id]
    url = reverse("checkpoint", args=[thread.pk, node.checkpoint_id]) + query_params(ns=ns)
    return TreeRow(
        node=node,
        lane=place.lane,
        x=place.x,
        y=place.y,
        shape=SHAPES.get(node.source, "loop"),
        url=url,
        title=node_title(node),
        parent_off_page=bool(node.parent_id) and node.parent_id not in on_page,
        children_off_page=len(set(node.children) - on_page),
    )


def node_title(node: history.TreeNode) -> str:
    """One line saying what a checkpoint is, for the SVG's ``<title>``."""
    parts = [f"step {node.step}" if node.step is not None else "step ?", node.source]
    if node.writers:
        parts.append("written by " + ", ".join(node.writers))
    if node.interrupts:
        state = "answered" if node.resumed else "waiting"
        parts.append(f"interrupt in {', '.join(node.interrupts)} ({state})")
    if node.errors:
        parts.append("error in " + ", ".join(node.errors))
    if len(node.children) > 1:
        parts.append(f"{len(node.children)} branches")
    if node.created_at:
        parts.append(node.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"))
    return " · ".join(parts)
