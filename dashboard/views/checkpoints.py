"""One checkpoint inspected, two compared, and the graph's picture.

State is read through ``durable.engine`` (LangGraph's ``get_state`` and the saver's
``get_tuple``, so values come back through the saver's serde, decrypted when a key is
set). A checkpoint that is not the thread's, in the namespace asked for, is a 404.
"""

from __future__ import annotations

from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard import access
from dashboard.forms import (
    DiffForm,
    JsonForm,
    NamespaceForm,
    PictureForm,
    RevealForm,
    form_errors,
)
from dashboard.http import render_page
from dashboard.present import checkpoint, diffs, graph, values
from dashboard.present.links import json_url, query_params
from durable import engine, history, snapshots
from durable.redaction import masked_paths, redact, redact_under
from durable.values import jsonable, pretty


def _snapshot(thread, checkpoint_id: str, ns: str):
    try:
        return engine.state_at(thread, checkpoint_id, checkpoint_ns=ns)
    except engine.InvalidRequest as exc:
        raise Http404(exc.message) from None


def _namespace(request) -> str:
    form = NamespaceForm(request.GET)
    if not form.is_valid():
        raise Http404("No such namespace.")
    return form.cleaned_data["ns"]


# -- the inspector ------------------------------------------------------------------------


@require_GET
def checkpoint_detail(request, pk: int, checkpoint_id: str):
    """``/threads/<pk>/checkpoints/<id>/?ns=``: values, next, tasks, pending writes,
    metadata and config of one checkpoint. htmx requests targeting
    ``checkpoint-detail`` (the thread page's pane) get the ``detail`` partial."""
    thread = access.thread_or_404(request, pk)
    ns = _namespace(request)
    snapshot = _snapshot(thread, checkpoint_id, ns)
    writes = engine.pending_writes(thread, checkpoint_id, checkpoint_ns=ns)
    keys = values.state_keys(snapshot.values)
    for key in keys:
        key.json_url = json_url(thread, checkpoint_id, ns, key.key)
    may_reveal = access.may_reveal_here(request)
    context = {
        "thread": thread,
        "ns": ns,
        "checkpoint_id": checkpoint_id,
        "snapshot": snapshot,
        "keys": keys,
        "json_url": json_url(thread, checkpoint_id, ns),
        "tasks": checkpoint.tasks(thread, snapshot, ns),
        "writes": checkpoint.writes(snapshot, writes),
        "metadata_html": values.json_html(snapshot.metadata),
        "config_html": values.json_html(snapshot.config),
        "parent_url": checkpoint.parent_url(thread, snapshot, ns),
        "children": checkpoint.children(thread, checkpoint_id, ns),
        "created_at": history.checkpoint_time(checkpoint_id),
        "masked": masked_paths(snapshot.values),
        "may_reveal": may_reveal,
        "graph_url": reverse("thread-graph", args=[thread.pk])
        + query_params(checkpoint=checkpoint_id if not ns else ""),
    }
    return render_page(
        request, "dashboard/checkpoint.html", context, target="checkpoint-detail", part="detail"
    )


@require_GET
def checkpoint_json(request, pk: int, checkpoint_id: str):
    """``/threads/<pk>/checkpoints/<id>/json/?ns=&key=``: the whole checkpoint as JSON
    (``durable.snapshots.checkpoint_download``: the thread's ids, values, next, tasks
    with their errors and interrupts, pending writes, metadata, config), or with ``key``
    one state value: what pages show cut
    (``dashboard.present.values.shown``), whole; masked as pages are
    (``durable.redaction``). 404 for a key the state does not have."""
    thread = access.thread_or_404(request, pk)
    form = JsonForm(request.GET)
    if not form.is_valid():
        raise Http404("No such namespace or key.")
    ns, key = form.cleaned_data["ns"], form.cleaned_data["key"]
    snapshot = _snapshot(thread, checkpoint_id, ns)
    if key:
        values = snapshot.values if isinstance(snapshot.values, dict) else {}
        if key not in values:
            raise Http404(f"The state has no key {key!r}.")
        body = jsonable(redact_under(key, values[key]))
    else:
        writes = engine.pending_writes(thread, checkpoint_id, checkpoint_ns=ns)
        body = redact(snapshots.checkpoint_download(snapshot, thread, checkpoint_id, ns, writes))
    return JsonResponse(body, safe=False, json_dumps_params={"indent": 2, "ensure_ascii": False})


@require_POST
def reveal_value(request, pk: int, checkpoint_id: str):
    """``POST /threads/<pk>/checkpoints/<id>/reveal/`` (``path``, ``ns``): the one masked
    state value at ``path``, for this response only (``durable.engine.reveal``, which
    audits it): for htmx the inspector's ``revealed`` partial, else a page of its own.
    403 for a member who is neither a tenant admin nor an auditor; 404 for a thread not
    visible, a checkpoint not the thread's, or a path that is no masked value there."""
    thread = access.thread_or_404(request, pk)
    access.require_revealer(request)
    form = RevealForm(request.POST)
    if not form.is_valid():
        raise Http404("No such namespace or path.")
    path, ns = form.cleaned_data["path"], form.cleaned_data["ns"]
    try:
        value = engine.reveal(
            thread, checkpoint_id, path, checkpoint_ns=ns, requested_by=request.user
        )
    except engine.InvalidRequest as exc:
        raise Http404(exc.message) from None
    context = {"thread": thread, "checkpoint_id": checkpoint_id, "path": path, "ns": ns}
    context["value_html"] = values.highlighted(pretty(value))
    template = "dashboard/checkpoint.html#revealed" if request.htmx else "dashboard/revealed.html"
    response = render(request, template, context)
    # Shown once: no cache (the browser's, or a proxy's) keeps it.
    response["Cache-Control"] = "no-store"
    return response


# -- the diff -----------------------------------------------------------------------------


@require_GET
def checkpoint_diff(request, pk: int):
    """``/threads/<pk>/diff/?a=<id>&b=<id>&ns=``: what changed from A to B, as paths
    and as a side-by-side diff of the states' JSON. 400 without both ids."""
    thread = access.thread_or_404(request, pk)
    form = DiffForm(request.GET)
    if not form.is_valid():
        context = {"thread": thread, "errors": form_errors(form)}
        return render(request, "dashboard/diff.html", context, status=400)
    a_id, b_id, ns = (form.cleaned_data[k] for k in ("a", "b", "ns"))
    a, b = _snapshot(thread, a_id, ns), _snapshot(thread, b_id, ns)
    context = {
        "thread": thread,
        "ns": ns,
        "a": checkpoint.diff_side(thread, a, a_id, ns),
        "b": checkpoint.diff_side(thread, b, b_id, ns),
        "changes": diffs.state_changes(a.values, b.values),
        "lines": diffs.side_by_side(redact(a.values), redact(b.values)),
        "swap_url": reverse("diff", args=[thread.pk]) + query_params(a=b_id, b=a_id, ns=ns),
    }
    return render(request, "dashboard/diff.html", context)


# -- the graph's picture ------------------------------------------------------------------


@require_GET
def thread_graph(request, pk: int):
    """``/threads/<pk>/graph/?checkpoint=<id>``: the graph's nodes and edges, with the
    next nodes of the thread's latest checkpoint (or of ``checkpoint``) marked."""
    thread = access.thread_or_404(request, pk)
    form = PictureForm(request.GET)
    if not form.is_valid():
        raise Http404("No such checkpoint.")
    try:
        drawing = engine.graph_drawing(thread)
    except engine.InvalidRequest as exc:
        raise Http404(exc.message) from None
    checkpoint_id = form.cleaned_data["checkpoint"]
    state = _snapshot(thread, checkpoint_id, "") if checkpoint_id else engine.thread_state(thread)
    current = set(state.next)
    context = {
        "thread": thread,
        "checkpoint_id": checkpoint_id,
        "picture": graph.picture(drawing, current),
        "next": state.next,
        "edges": drawing.edges,
        "mermaid": drawing.draw_mermaid(),
    }
    return render(request, "dashboard/graph.html", context)
