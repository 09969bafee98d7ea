"""``/threads``: create, search, count, read, update the metadata of and delete the
token's tenant's threads. The wire's ``thread_id`` is the thread's ``name``."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpResponse
from ninja import Router

from durable import engine
from durable.api import access, answers, shapes
from durable.api.authentication import caller, may_change
from durable.api.document import refusal
from durable.api.errors import ApiError
from durable.api.schemas import (
    ThreadCount,
    ThreadCreate,
    ThreadId,
    ThreadPatch,
    ThreadPrune,
    ThreadSearch,
)
from durable.graphs import graph_names
from durable.models import Run, Thread
from durable.persistence.metadata import MetadataKeyEquals

threads = Router(tags=["threads"])


@threads.post(
    "",
    summary="Create a thread",
    response=answers.Thread,
    openapi_extra=refusal(404, "The graph_id is not a registered graph."),
)
def create_thread(request, body: ThreadCreate = None):
    """Creates a thread with no run yet. ``metadata.graph_id`` (or ``graph_id``) binds
    it to a registered graph now; otherwise its first run does. 409 when ``thread_id``
    exists and ``if_exists`` is ``raise``."""
    body = body or ThreadCreate()
    name = body.thread_id
    metadata = dict(body.metadata)
    graph = body.graph_id or metadata.pop("graph_id", None)
    metadata.pop("assistant_id", None)
    if graph is not None and graph not in graph_names():
        raise ApiError(404, f"Graph {graph!r} is not registered.", "graph_id")
    if name is not None:
        access.check_reachable(name)
        if existing := access.find_thread(request, name):
            if body.if_exists == "raise":
                raise ApiError(409, f"Thread {name!r} already exists.", "thread_id")
            return shapes.thread_json(existing)
    may_change(request)
    created = engine.create_thread(graph, name=name, metadata=metadata, tenant=request.auth.tenant)
    return shapes.thread_json(created)


def _matching(request, metadata: dict | None, status: str | None) -> QuerySet[Thread]:
    """The threads whose metadata has every key/value of ``metadata`` (``graph_id`` and
    ``assistant_id`` match the thread's graph; an ``assistant_id`` of a stored assistant,
    the threads with a run on it), with ``status``."""
    found = access.threads(request)
    for key, value in (metadata or {}).items():
        if key == "assistant_id" and (stored := engine.find_assistant(request.auth.tenant, value)):
            # Agent Chat UI finds a stored assistant's threads by its id.
            found = found.filter(
                Exists(Run.objects.filter(thread=OuterRef("pk"), assistant=stored))
            )
        elif key in ("graph_id", "assistant_id"):
            found = found.filter(graph=value) if isinstance(value, str) else found.none()
        else:
            found = found.filter(MetadataKeyEquals(key, value))
    if status:
        found = found.filter(status=status)
    return found


@threads.post("/search", summary="Search threads", response=list[answers.Thread])
def search_threads(request, body: ThreadSearch = None):
    """Threads whose metadata has every key/value of ``metadata`` (``graph_id`` and
    ``assistant_id`` match the thread's graph), with ``status``, among ``ids``; sorted,
    then ``limit`` (at most 100) from ``offset``."""
    body = body or ThreadSearch()
    found = _matching(request, body.metadata, body.status)
    if body.ids is not None:
        found = found.filter(name__in=body.ids)
    sign = "-" if body.sort_order == "desc" else ""
    order = "name" if body.sort_by == "thread_id" else body.sort_by
    found = found.order_by(f"{sign}{order}", f"{sign}pk")
    return [shapes.thread_json(t) for t in found[body.offset : body.offset + body.limit]]


@threads.post("/count", summary="Count threads", response=int)
def count_threads(request, body: ThreadCount = None):
    """How many threads ``POST /threads/search`` would find with the same ``metadata``
    and ``status``, all pages together."""
    body = body or ThreadCount()
    return _matching(request, body.metadata, body.status).count()


@threads.post("/prune", summary="Prune threads", response=answers.ThreadPruneResponse)
def prune_threads(request, body: ThreadPrune):
    """Prunes the threads of ``thread_ids``: ``strategy`` ``delete`` (the default)
    deletes each, its runs and all its checkpoints; ``keep_latest`` keeps each thread
    and only its latest checkpoint per namespace. A thread with an active run is left
    as it is; an id the tenant has no thread of is passed over. Returns
    ``{"pruned_count": n}``, the threads deleted or pruned."""
    may_change(request)
    found = access.threads(request).filter(name__in=body.thread_ids)
    pruned = engine.prune_threads(found, body.strategy, requested_by=caller(request))
    return {"pruned_count": pruned}


@threads.get("/{thread_id}", summary="Get a thread", response=answers.Thread)
def get_thread(request, thread_id: ThreadId):
    return shapes.thread_json(access.thread(request, thread_id))


@threads.patch(
    "/{thread_id}",
    summary="Update a thread's metadata",
    response={200: answers.Thread, 204: None},
)
def patch_thread(request, thread_id: ThreadId, body: ThreadPatch):
    """Merges ``metadata`` into the thread's: its keys replace the thread's same keys,
    the others stay. ``graph_id`` and ``assistant_id`` name the thread's graph, which
    this cannot change: equal to it they change nothing, else 422. Returns the thread,
    or nothing (204) with ``Prefer: return=minimal``."""
    thread = access.thread(request, thread_id)
    may_change(request)
    metadata = dict(body.metadata)
    shown = shapes.thread_json(thread)["metadata"] if "assistant_id" in metadata else {}
    for key in ("graph_id", "assistant_id"):
        if key in metadata and metadata.pop(key) not in (thread.graph or None, shown.get(key)):
            raise ApiError(
                422,
                f"metadata.{key}: a thread's graph is set when it is created or by its "
                f"first run, and cannot change (thread {thread.name!r} runs "
                f"{thread.graph or 'no graph yet'}).",
                f"metadata.{key}",
            )
    thread = engine.update_thread_metadata(thread, metadata)
    if request.headers.get("Prefer") == "return=minimal":
        return HttpResponse(status=204)
    return shapes.thread_json(thread)


@threads.delete("/{thread_id}", summary="Delete a thread", response={204: None})
def delete_thread(request, thread_id: ThreadId):
    """Deletes the thread, its runs and events and all its checkpoints. 409 while a run
    is running (cancel it first)."""
    thread = access.thread(request, thread_id)
    may_change(request)
    engine.delete_thread(thread, requested_by=caller(request))
    return 204, None


@threads.post("/{thread_id}/copy", summary="Copy a thread", response=answers.Thread)
def copy_thread(request, thread_id: ThreadId):
    """A new thread (new ``thread_id``) with the thread's metadata, graph and every
    checkpoint of its history; runs are not copied. Returns the new thread. 409 while
    a run is running on the thread."""
    thread = access.thread(request, thread_id)
    may_change(request)
    return shapes.thread_json(engine.copy_thread(thread))
