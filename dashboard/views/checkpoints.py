"""One checkpoint inspected, two compared, and the graph's picture.

State is read through ``durable.engine`` (LangGraph's ``get_state`` and the saver's
``get_tuple``, so values come back through the saver's serde, decrypted when a key is
set). A checkpoint that is not the thread's, in the namespace asked for, is a 404.
"""

from __future__ import annotations

from django import forms
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from dashboard import access, diffs, graphpic, present
from dashboard.views.history import form_errors, query_params
from dashboard.views.pages import render_page
from durable import engine, history
from durable.api import shapes
from durable.values import jsonable

NS_MAX_LENGTH = 2000


class NamespaceForm(forms.Form):
    ns = forms.CharField(required=False, max_length=NS_MAX_LENGTH, strip=False)


class DiffForm(NamespaceForm):
    """The two checkpoints to compare: ``a`` (before) and ``b`` (after)."""

    a = forms.CharField(
        max_length=64, label="Checkpoint A", error_messages={"required": "Pick checkpoint A."}
    )
    b = forms.CharField(
        max_length=64, label="Checkpoint B", error_messages={"required": "Pick checkpoint B."}
    )


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


# -- page 3: inspector ------------------------------------------------------------------


@require_GET
def checkpoint_detail(request, pk: int, checkpoint_id: str):
    """``/threads/<pk>/checkpoints/<id>/?ns=``: values, next, tasks, pending writes,
    metadata and config of one checkpoint. htmx requests targeting
    ``checkpoint-detail`` (the thread page's pane) get the ``detail`` partial."""
    thread = access.thread_or_404(request, pk)
    ns = _namespace(request)
    snapshot = _snapshot(thread, checkpoint_id, ns)
    writes = engine.pending_writes(thread, checkpoint_id, checkpoint_ns=ns)
    keys = present.state_keys(snapshot.values)
    for key in keys:
        key.json_url = json_url(thread, checkpoint_id, ns, key.key)
    context = {
        "thread": thread,
        "ns": ns,
        "checkpoint_id": checkpoint_id,
        "snapshot": snapshot,
        "keys": keys,
        "json_url": json_url(thread, checkpoint_id, ns),
        "tasks": _tasks(thread, snapshot, ns),
        "writes": _writes(snapshot, writes),
        "metadata_html": present.json_html(snapshot.metadata),
        "config_html": present.json_html(snapshot.config),
        "parent_url": _parent_url(thread, snapshot, ns),
        "children": _children(thread, checkpoint_id, ns),
        "created_at": history.checkpoint_time(checkpoint_id),
        "graph_url": reverse("thread-graph", args=[thread.pk])
        + query_params(checkpoint=checkpoint_id if not ns else ""),
    }
    return render_page(
        request, "dashboard/checkpoint.html", context, target="checkpoint-detail", part="detail"
    )


class JsonForm(NamespaceForm):
    key = forms.CharField(required=False, max_length=1000, strip=False)


@require_GET
def checkpoint_json(request, pk: int, checkpoint_id: str):
    """``/threads/<pk>/checkpoints/<id>/json/?ns=&key=``: the whole checkpoint as JSON
    (values, next, tasks with their errors and interrupts, pending writes, metadata,
    config), or with ``key`` one state value: what pages show cut
    (``dashboard.present.shown``), whole. 404 for a key the state does not have."""
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
        body = values[key]
    else:
        writes = engine.pending_writes(thread, checkpoint_id, checkpoint_ns=ns)
        body = {
            "thread_id": thread.thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
            "values": snapshot.values,
            "next": list(snapshot.next),
            "tasks": [shapes.task_json(t, thread, subgraph=False) for t in snapshot.tasks],
            "pending_writes": [
                {"task_id": task_id, "channel": channel, "value": value}
                for task_id, channel, value in writes
            ],
            "metadata": snapshot.metadata,
            "config": snapshot.config,
            "parent_config": snapshot.parent_config,
        }
    return JsonResponse(
        jsonable(body), safe=False, json_dumps_params={"indent": 2, "ensure_ascii": False}
    )


def json_url(thread, checkpoint_id: str, ns: str = "", key: str = "") -> str:
    """The URL of ``checkpoint_json``: the whole checkpoint, or one state ``key``."""
    return reverse("checkpoint-json", args=[thread.pk, checkpoint_id]) + query_params(
        ns=ns, key=key
    )


def _tasks(thread, snapshot, ns: str) -> list[dict]:
    prefix = f"{ns}|" if ns else ""
    subgraphs = history.existing_namespaces(
        thread.thread_id, [f"{prefix}{t.name}:{t.id}" for t in snapshot.tasks]
    )
    tasks = []
    for task in snapshot.tasks:
        child_ns = f"{prefix}{task.name}:{task.id}"
        tasks.append(
            {
                "task": task,
                "error": f"{type(task.error).__name__}: {task.error}" if task.error else "",
                "interrupts": [(i.id, present.json_html(i.value)) for i in task.interrupts],
                "result_html": present.json_html(task.result) if task.result else None,
                "subgraph_url": (
                    reverse("thread-history", args=[thread.pk]) + query_params(ns=child_ns)
                    if child_ns in subgraphs
                    else ""
                ),
                "subgraph_ns": child_ns,
            }
        )
    return tasks


def _writes(snapshot, writes) -> list[dict]:
    names = {t.id: t.name for t in snapshot.tasks}
    return [
        {
            "task": names.get(task_id, ""),
            "task_id": task_id,
            "channel": channel,
            "html": present.json_html(value),
        }
        for task_id, channel, value in writes
    ]


def _parent_url(thread, snapshot, ns: str) -> str:
    parent = (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    if not parent:
        return ""
    return reverse("checkpoint", args=[thread.pk, parent]) + query_params(ns=ns)


def _children(thread, checkpoint_id: str, ns: str) -> list[dict]:
    return [
        {
            "node": child,
            "url": reverse("checkpoint", args=[thread.pk, child.checkpoint_id])
            + query_params(ns=ns),
            "diff_url": reverse("diff", args=[thread.pk])
            + query_params(a=checkpoint_id, b=child.checkpoint_id, ns=ns),
        }
        for child in history.children_of(thread.thread_id, ns, checkpoint_id)
    ]


# -- page 4: diff ---------------------------------------------------------------------------


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
        "a": _side(thread, a, a_id, ns),
        "b": _side(thread, b, b_id, ns),
        "changes": diffs.changes(a.values, b.values),
        "lines": diffs.side_by_side(a.values, b.values),
        "swap_url": reverse("diff", args=[thread.pk]) + query_params(a=b_id, b=a_id, ns=ns),
    }
    return render(request, "dashboard/diff.html", context)


def _side(thread, snapshot, checkpoint_id: str, ns: str) -> dict:
    metadata = snapshot.metadata or {}
    return {
        "id": checkpoint_id,
        "step": metadata.get("step"),
        "source": metadata.get("source"),
        "next": snapshot.next,
        "url": reverse("checkpoint", args=[thread.pk, checkpoint_id]) + query_params(ns=ns),
        "json_url": json_url(thread, checkpoint_id, ns),
    }


# -- page 9: the graph's picture ------------------------------------------------------------


class GraphForm(forms.Form):
    checkpoint = forms.CharField(required=False, max_length=64)


@require_GET
def thread_graph(request, pk: int):
    """``/threads/<pk>/graph/?checkpoint=<id>``: the graph's nodes and edges, with the
    next nodes of the thread's latest checkpoint (or of ``checkpoint``) marked."""
    thread = access.thread_or_404(request, pk)
    form = GraphForm(request.GET)
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
        "picture": graphpic.picture(drawing, current),
        "next": state.next,
        "edges": drawing.edges,
        "mermaid": drawing.draw_mermaid(),
    }
    return render(request, "dashboard/graph.html", context)
