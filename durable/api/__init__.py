"""The HTTP API, shaped after LangGraph's Agent Server API so that the official
``langgraph-sdk`` client works against it unchanged (``get_sync_client(url=".../api")``).

Resources, paths and fields follow the Agent Server's where they exist: threads, their
state and history, runs (background, streamed, waited for) and assistants. A registered
graph's name is its ``assistant_id`` (and its ``graph_id``). Every operation goes through
``durable.engine.operations``; this module only reads models.

Every answer under the API's root is JSON (its docs page aside). Errors are
``{"detail": message, "field": name}`` (``field`` is ``null`` when no single input is at
fault): 400 for a body that is not JSON, 404 for an unknown thread, run or assistant, or
for a path that is no route of this API, 405 (with ``Allow``) for a method a route does
not take, 409 when the thread or run is in the wrong state for the request (a busy thread
under ``reject``, a run that already ended), 422 for any other input that is not
acceptable, 500 for a failure of the server. A refused request changes nothing.

Not served: stateless runs (``POST /runs`` and the like: 404), ``config``, ``context``,
``interrupt_before``/``interrupt_after``, webhooks, thread TTLs, ``values`` filters on
threads, ``cancel`` with ``action=rollback``, stream modes other than
values/updates/custom/tasks (refused with 422 naming the field when sent); there are no
cron routes.

Every request carries a tenant's API token in the ``x-api-key`` header
(``langgraph-sdk``'s ``api_key``): 401 without a valid one. The token's tenant scopes
everything: another tenant's thread or run is a 404, and the store routes read and write
only under the tenant's own namespace prefix, which the client never sees. A viewer's
token reads; whatever would change a thread, a run or the store is a 403.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from typing import Any, Literal
from urllib.parse import urlencode

from asgiref.sync import iscoroutinefunction
from django.core.exceptions import RequestDataTooBig
from django.db.models import QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    StreamingHttpResponse,
)
from django.urls import URLPattern, re_path, reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from langgraph.types import StateSnapshot
from ninja import Field, NinjaAPI, Query, Router, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.security import APIKeyHeader
from pydantic import AliasChoices, ConfigDict

from durable import engine, sse, tenancy
from durable.db import borrow
from durable.engine import follow as events
from durable.graphs import graph_names
from durable.models import THREAD_ID_MAX_LENGTH, Run, Thread
from durable.persistence.metadata import MetadataKeyEquals
from durable.persistence.store import ScopedStore, tenant_store
from durable.values import jsonable

logger = logging.getLogger(__name__)

# The largest offset a database takes (PostgreSQL's OFFSET is a bigint).
MAX_OFFSET = 2**63 - 1


class ApiError(Exception):
    """A refused request: HTTP ``status``, a message, and the input ``field`` at fault."""

    def __init__(self, status: int, message: str, field: str | None = None):
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


class _BodyNotJSON(ValueError):
    pass


class JSONParser(Parser):
    """Parses bodies as JSON, saying where a body fails to parse (ninja turns any parse
    failure into a 400; ``_http_error`` passes our message on).

    A body must say ``Content-Type: application/json`` (else 415): a browser sends a
    cross-site form or ``text/plain`` POST without asking the server first, but not a
    JSON one, so this keeps other web pages from driving the API (it has no CSRF token).
    A body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is a 413."""

    def parse_body(self, request):
        if request.content_type != "application/json":
            raise ApiError(
                415, "The request body must be JSON (Content-Type: application/json).", "body"
            )
        try:
            return json.loads(request.body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _BodyNotJSON(f"The request body is not valid JSON: {exc}.") from None
        except RecursionError:
            raise _BodyNotJSON("The request body is nested too deeply.") from None


class TenantToken(APIKeyHeader):
    """A tenant's API token (``durable.tenancy``) in the ``x-api-key`` header, as
    ``langgraph-sdk`` sends ``api_key``. ``request.auth`` is then the ``ApiToken``:
    its tenant scopes every lookup, its role decides whether the request may change
    anything."""

    param_name = "x-api-key"
    # Async, so that ninja awaits it on a borrowed connection (``durable.db.borrow``), given
    # back at once: a sync check would hold its request thread's connection for as long
    # as a stream of server-sent events stays open.
    is_async = True

    async def authenticate(self, request, key):
        return await borrow(tenancy.authenticate, key)


class JSONOnlyAPI(NinjaAPI):
    """A ``NinjaAPI`` that answers in JSON where ninja and Django would send HTML or
    plain text: a path that is no route (Django's 404 page; the API's root too) and a
    method its route does not take (ninja's ``405 Method not allowed``)."""

    @property
    def urls(self):
        patterns, app_name, namespace = super().urls
        routes = [_with_json_405(p) if isinstance(p, URLPattern) else p for p in patterns]
        # Last, so that it answers only what no route matched.
        routes.append(re_path(r"^.*$", _no_route, name="no-route"))
        return routes, app_name, namespace


def _with_json_405(pattern: URLPattern) -> URLPattern:
    view = pattern.callback
    if pattern.name == "api-root":  # ninja's root view raises Http404 for reverse()
        view = _no_route
    if iscoroutinefunction(view):

        async def answer(request, *args, **kwargs):
            return _json_405(request, await view(request, *args, **kwargs))

    else:

        def answer(request, *args, **kwargs):
            return _json_405(request, view(request, *args, **kwargs))

    functools.update_wrapper(answer, view)
    return URLPattern(pattern.pattern, answer, pattern.default_args, pattern.name)


def _json_405(request, response):
    if not isinstance(response, HttpResponseNotAllowed):
        return response
    allowed = ", ".join(sorted(m.strip() for m in response["Allow"].split(",")))
    answer = _error(
        request, 405, f"{request.method} is not allowed on {request.path}; allowed: {allowed}."
    )
    answer["Allow"] = allowed
    return answer


@csrf_exempt
def _no_route(request, *args, **kwargs):
    docs = reverse("api:openapi-view")
    return _error(
        request,
        404,
        f"{request.method} {request.path} is not a route of this API; its routes are "
        f"listed at {docs}.",
    )


api = JSONOnlyAPI(
    title="Durable console API",
    version="1",
    description=__doc__,
    urls_namespace="api",
    parser=JSONParser(),
    auth=TenantToken(),
)


def _error(request, status: int, message: str, field: str | None = None) -> HttpResponse:
    return api.create_response(request, {"detail": message, "field": field}, status=status)


@api.exception_handler(ApiError)
def _api_error(request, exc: ApiError):
    return _error(request, exc.status, exc.message, exc.field)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request, exc):
    return _error(request, 401, "Send a valid API token in the x-api-key header.", "x-api-key")


# durable.engine.operations names its inputs; the API's requests name some of them differently.
_API_FIELDS = {
    "thread": "thread_id",
    "graph": "assistant_id",
    "resume": "command.resume",
    "answers": "command.resume",
}


@api.exception_handler(engine.InvalidRequest)
def _invalid_request(request, exc: engine.InvalidRequest):
    """422 for unacceptable input; 409 when the thread or run is not in a state that
    allows the request (``durable.engine.operations`` names ``thread`` or ``run`` then: a busy
    thread under ``reject``, a run that already ended; thread ids are checked here)."""
    status = 409 if exc.field in ("thread", "run") else 422
    return _error(request, status, exc.message, _API_FIELDS.get(exc.field, exc.field))


@api.exception_handler(RequestDataTooBig)
def _too_large(request, exc):
    return _error(request, 413, "The request body is too large.", "body")


@api.exception_handler(HttpError)
def _http_error(request, exc: HttpError):
    if isinstance(exc.__cause__, _BodyNotJSON):
        return _error(request, 400, str(exc.__cause__), "body")
    if isinstance(exc.__cause__, ApiError):
        return _api_error(request, exc.__cause__)
    return _error(request, exc.status_code, str(exc))


@api.exception_handler(Http404)
def _not_found(request, exc):
    return _error(request, 404, "Not found.")


@api.exception_handler(Exception)
def _server_error(request, exc: Exception):
    """Anything else is a failure of the server: logged, and a JSON 500 (ninja's default
    sends a plain-text traceback under DEBUG)."""
    logger.exception("%s %s failed", request.method, request.path, exc_info=exc)
    return _error(request, 500, "Internal server error.")


@api.exception_handler(ValidationError)
def _validation_error(request, exc: ValidationError):
    first = exc.errors[0]
    # loc is ("body", "<parameter>", field...) or ("query", field) or ("path", field).
    loc = [str(p) for p in first["loc"]]
    parts = loc[2:] if loc[0] == "body" else loc[1:]
    field = ".".join(parts) or ("body" if loc[0] == "body" else None)
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "is not supported by this server"
    elif first["type"] == "missing" and loc[0] == "body" and len(loc) <= 2:
        return _error(request, 422, "The request needs a JSON body.", "body")
    return _error(request, 422, f"{field}: {message}." if field else f"{message}.", field)


# -- scoping ------------------------------------------------------------------------


def _threads(request: HttpRequest) -> QuerySet[Thread]:
    """The threads of the token's tenant. Every lookup below goes through this one
    queryset, runs included (they are reached only through their thread), so another
    tenant's thread is a 404 like one that does not exist."""
    return Thread.objects.filter(tenant=request.auth.tenant)


def _find_thread(request: HttpRequest, thread_id: str) -> Thread | None:
    """The tenant's thread named ``thread_id`` (``Thread.name``: the id the tenant
    gave it; the checkpointer's own id is never shown)."""
    if "\x00" in thread_id:  # no thread has one, and PostgreSQL cannot compare it
        return None
    return _threads(request).filter(name=thread_id).first()


def _may_change(request: HttpRequest) -> None:
    """403 for a viewer's token: it reads, it does not resume, fork, replay, cancel,
    create or delete."""
    if not tenancy.may_act(request.auth.role):
        raise ApiError(403, "This token is a viewer's: it cannot change threads or runs.")


def _caller(request: HttpRequest) -> str:
    """Who asked, as runs and the audit trail record it."""
    return f"token:{request.auth.name}"


def _thread(request: HttpRequest, thread_id: str) -> Thread:
    thread = _find_thread(request, thread_id)
    if thread is None:
        raise ApiError(404, f"Thread {thread_id!r} not found.", "thread_id")
    return thread


def _run(thread: Thread, run_id: str) -> Run:
    # Run ids are bigints: anything else is no run (and must not reach the database).
    valid = run_id.isascii() and run_id.isdigit() and len(run_id) <= 18
    run = thread.runs.filter(pk=int(run_id)).first() if valid else None
    if run is None:
        raise ApiError(404, f"Run {run_id!r} not found on thread {thread.name!r}.", "run_id")
    return run


def _graph(assistant_id: str) -> str:
    if assistant_id not in graph_names():
        raise ApiError(
            404,
            f"Assistant {assistant_id!r} not found. Registered graphs: {', '.join(graph_names())}.",
            "assistant_id",
        )
    return assistant_id


# -- shapes -------------------------------------------------------------------------


class Strict(Schema):
    model_config = ConfigDict(extra="forbid")


class CheckpointRef(Strict):
    """A checkpoint of a thread, as the Agent Server names it."""

    checkpoint_id: str | None = None
    checkpoint_ns: str = ""
    thread_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


def _checkpoint(config: dict | None, thread: Thread) -> dict | None:
    if not config:
        return None
    c = config["configurable"]
    return {
        "thread_id": thread.name,
        "checkpoint_ns": c.get("checkpoint_ns", ""),
        "checkpoint_id": c.get("checkpoint_id"),
        "checkpoint_map": c.get("checkpoint_map"),
    }


def _interrupt(item) -> dict:
    return {"value": jsonable(item.value), "id": item.id}


def _task(task, thread: Thread) -> dict:
    error = task.error
    if isinstance(error, BaseException):
        error = f"{type(error).__name__}({error})"
    state = task.state
    return {
        "id": task.id,
        "name": task.name,
        "error": jsonable(error) if error is not None else None,
        "interrupts": [_interrupt(i) for i in task.interrupts],
        "checkpoint": _checkpoint(state, thread) if isinstance(state, dict) else None,
        "state": _state(state, thread) if isinstance(state, StateSnapshot) else None,
        "result": jsonable(task.result) if task.result is not None else None,
    }


def _state(snapshot: StateSnapshot, thread: Thread) -> dict:
    """A ``StateSnapshot`` of ``thread`` as the Agent Server's ``ThreadState``."""
    return {
        "values": jsonable(snapshot.values),
        "next": list(snapshot.next),
        "checkpoint": _checkpoint(snapshot.config, thread),
        "metadata": jsonable(snapshot.metadata),
        "created_at": snapshot.created_at,
        "parent_checkpoint": _checkpoint(snapshot.parent_config, thread),
        "tasks": [_task(t, thread) for t in snapshot.tasks],
        "interrupts": [_interrupt(i) for i in snapshot.interrupts],
    }


def _thread_json(thread: Thread) -> dict:
    """A thread as the Agent Server's ``Thread``: its metadata carries ``graph_id`` and
    ``assistant_id`` once a graph is bound; ``values`` and ``interrupts`` (by task id)
    are its latest state's."""
    state = engine.thread_state(thread)
    interrupts: dict[str, list] = {}
    for task in state.tasks:
        if task.interrupts:
            interrupts[task.id] = [_interrupt(i) for i in task.interrupts]
    metadata = dict(thread.metadata)
    if thread.graph:
        metadata.update(graph_id=thread.graph, assistant_id=thread.graph)
    return {
        "thread_id": thread.name,
        "created_at": thread.created_at,
        "updated_at": thread.updated_at,
        "metadata": metadata,
        "status": thread.status,
        "values": jsonable(state.values),
        "interrupts": interrupts,
    }


def _run_json(run: Run) -> dict:
    """A run as the Agent Server's ``Run``, plus what this server records: ``kind``
    (start, resume, fork, replay), ``durability``, ``requested_by``, the checkpoint it
    started from, ``interrupts`` it stopped at, ``error`` and why it was stopped."""
    return {
        "run_id": str(run.pk),
        "thread_id": run.thread.name,
        "assistant_id": run.graph,
        "created_at": run.created_at,
        "updated_at": run.ended_at or run.started_at or run.created_at,
        "status": run.status,
        "metadata": run.metadata,
        "multitask_strategy": run.multitask_strategy,
        "kind": run.kind,
        "durability": run.durability,
        "requested_by": run.requested_by,
        "checkpoint_id": run.checkpoint_id or None,
        "interrupts": run.interrupts,
        "error": (
            {"error": run.error_type, "message": run.error_message, "node": run.error_node}
            if run.error_type
            else None
        ),
        "stop_detail": run.stop_detail or None,
    }


# -- assistants ---------------------------------------------------------------------

assistants = Router(tags=["assistants"])
_REGISTERED_AT = timezone.now()


def _assistant(name: str) -> dict:
    return {
        "assistant_id": name,
        "graph_id": name,
        "name": name,
        "description": None,
        "config": {},
        "context": {},
        "metadata": {},
        "version": 1,
        "created_at": _REGISTERED_AT,
        "updated_at": _REGISTERED_AT,
    }


class AssistantSearch(Schema):
    graph_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


@assistants.post("/search", summary="Search assistants (one per registered graph)")
def search_assistants(request, body: AssistantSearch = None):
    """The registered graphs as assistants, by name; they carry no metadata, so a
    ``metadata`` filter matches none."""
    body = body or AssistantSearch()
    names = [
        n
        for n in graph_names()
        if (body.graph_id is None or n == body.graph_id)
        and (body.name is None or n == body.name)
        and not body.metadata
    ]
    return [_assistant(n) for n in names[body.offset : body.offset + body.limit]]


@assistants.get("/{assistant_id}", summary="Get an assistant")
def get_assistant(request, assistant_id: str):
    return _assistant(_graph(assistant_id))


# -- threads ------------------------------------------------------------------------

threads = Router(tags=["threads"])


ThreadId = Field(None, min_length=1, max_length=THREAD_ID_MAX_LENGTH)
# Ids a URL path cannot carry back as one segment: clients and proxies resolve "." and
# "..", and "/" splits the segment, so such a thread could be created but never reached.
# Ids a thread URL cannot carry: a "/" or a dot segment, or the name of a route beside
# /threads/{thread_id} (GET /threads/search would not reach a thread named "search").
UNREACHABLE_THREAD_IDS = re.compile(r"/|^\.{1,2}$|^(search|count)$")


class ThreadCreate(Strict):
    thread_id: str | None = ThreadId
    metadata: dict[str, Any] = {}
    if_exists: Literal["raise", "do_nothing"] = "raise"
    graph_id: str | None = None


@threads.post("", summary="Create a thread")
def create_thread(request, body: ThreadCreate = None):
    """Creates a thread with no run yet. ``metadata.graph_id`` (or ``graph_id``) binds
    it to a registered graph now; otherwise its first run does. 409 when ``thread_id``
    exists and ``if_exists`` is ``raise``."""
    body = body or ThreadCreate()
    metadata = dict(body.metadata)
    graph = body.graph_id or metadata.pop("graph_id", None)
    metadata.pop("assistant_id", None)
    if graph is not None and graph not in graph_names():
        raise ApiError(404, f"Graph {graph!r} is not registered.", "graph_id")
    if body.thread_id is not None:
        engine.check_storable(body.thread_id, "thread_id")
        if UNREACHABLE_THREAD_IDS.search(body.thread_id):
            raise ApiError(
                422,
                "thread_id cannot hold '/' or be '.', '..', 'search' or 'count' in URLs.",
                "thread_id",
            )
        if existing := _find_thread(request, body.thread_id):
            if body.if_exists == "raise":
                raise ApiError(409, f"Thread {body.thread_id!r} already exists.", "thread_id")
            return _thread_json(existing)
    _may_change(request)
    created = engine.create_thread(
        graph, thread_id=body.thread_id, metadata=metadata, tenant=request.auth.tenant
    )
    return _thread_json(created)


class ThreadSearch(Strict):
    metadata: dict[str, Any] | None = None
    ids: list[str] | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    limit: int = Field(10, ge=1, le=100)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    sort_by: Literal["thread_id", "status", "created_at", "updated_at"] = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"


def _matching(request, metadata: dict | None, status: str | None) -> QuerySet[Thread]:
    """The threads whose metadata has every key/value of ``metadata`` (``graph_id`` and
    ``assistant_id`` match the thread's graph), with ``status``."""
    found = _threads(request)
    for key, value in (metadata or {}).items():
        if key in ("graph_id", "assistant_id"):
            found = found.filter(graph=value) if isinstance(value, str) else found.none()
        else:
            found = found.filter(MetadataKeyEquals(key, value))
    if status:
        found = found.filter(status=status)
    return found


@threads.post("/search", summary="Search threads")
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
    return [_thread_json(t) for t in found[body.offset : body.offset + body.limit]]


class ThreadCount(Strict):
    metadata: dict[str, Any] | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None


@threads.post("/count", summary="Count threads", response=int)
def count_threads(request, body: ThreadCount = None):
    """How many threads ``POST /threads/search`` would find with the same ``metadata``
    and ``status``, all pages together."""
    body = body or ThreadCount()
    return _matching(request, body.metadata, body.status).count()


@threads.get("/{thread_id}", summary="Get a thread")
def get_thread(request, thread_id: str):
    return _thread_json(_thread(request, thread_id))


class ThreadPatch(Strict):
    metadata: dict[str, Any] = {}


@threads.patch("/{thread_id}", summary="Update a thread's metadata")
def patch_thread(request, thread_id: str, body: ThreadPatch):
    """Merges ``metadata`` into the thread's: its keys replace the thread's same keys,
    the others stay. ``graph_id`` and ``assistant_id`` name the thread's graph, which
    this cannot change: equal to it they change nothing, else 422. Returns the thread,
    or nothing (204) with ``Prefer: return=minimal``."""
    thread = _thread(request, thread_id)
    _may_change(request)
    metadata = dict(body.metadata)
    for key in ("graph_id", "assistant_id"):
        if key in metadata and metadata.pop(key) != (thread.graph or None):
            raise ApiError(
                422,
                f"metadata.{key}: a thread's graph is set when it is created or by its "
                f"first run, and cannot change (thread {thread_id!r} runs "
                f"{thread.graph or 'no graph yet'}).",
                f"metadata.{key}",
            )
    thread = engine.update_thread_metadata(thread, metadata)
    if request.headers.get("Prefer") == "return=minimal":
        return HttpResponse(status=204)
    return _thread_json(thread)


# -- state and history ----------------------------------------------------------------


def _state_at(thread: Thread, checkpoint_id: str, field: str, subgraphs: bool) -> dict:
    try:
        snapshot = engine.state_at(thread, checkpoint_id, subgraphs=subgraphs)
    except engine.InvalidRequest as exc:
        raise engine.InvalidRequest(field, exc.message) from None
    return _state(snapshot, thread)


class StateQuery(Schema):
    subgraphs: bool = False


@threads.get("/{thread_id}/state", summary="Get a thread's latest state")
def get_state(request, thread_id: str, query: Query[StateQuery]):
    """The latest ``ThreadState``; with ``subgraphs``, each task's subgraph state."""
    thread = _thread(request, thread_id)
    return _state(engine.thread_state(thread, subgraphs=query.subgraphs), thread)


class StateUpdate(Strict):
    values: dict[str, Any] | None = None
    as_node: str | None = None
    checkpoint: CheckpointRef | None = None
    checkpoint_id: str | None = None


@threads.post("/{thread_id}/state", summary="Update a thread's state (fork)")
def update_state(request, thread_id: str, body: StateUpdate):
    """``update_state`` at ``checkpoint`` (default: the latest) with ``values`` (state
    keys; reducers apply), as if node ``as_node`` had written them (or LangGraph's
    ``__copy__``, ``__input__``, ``__end__``). History is not edited: a new checkpoint
    branches off that one. Returns ``{"checkpoint": ...}``, the new checkpoint."""
    thread = _thread(request, thread_id)
    _may_change(request)
    checkpoint_id = (body.checkpoint.checkpoint_id if body.checkpoint else None) or (
        body.checkpoint_id
    )
    if checkpoint_id is None:
        latest = engine.thread_state(thread).config["configurable"].get("checkpoint_id")
        if latest is None:
            raise ApiError(
                409, f"Thread {thread_id!r} has no checkpoint to update yet.", "checkpoint"
            )
        checkpoint_id = latest
    field = "checkpoint.checkpoint_id" if body.checkpoint else "checkpoint_id"
    try:
        forked = engine.fork(
            thread, checkpoint_id, body.values, as_node=body.as_node, requested_by=_caller(request)
        )
    except engine.InvalidRequest as exc:
        if exc.field == "checkpoint_id":
            raise engine.InvalidRequest(field, exc.message) from None
        raise
    return {"checkpoint": _checkpoint(forked.config, thread)}


class StateAtCheckpoint(Strict):
    checkpoint: CheckpointRef
    subgraphs: bool = False


@threads.post("/{thread_id}/state/checkpoint", summary="Get a thread's state at a checkpoint")
def post_state_at(request, thread_id: str, body: StateAtCheckpoint):
    thread = _thread(request, thread_id)
    checkpoint_id = body.checkpoint.checkpoint_id
    return _state_at(thread, checkpoint_id, "checkpoint.checkpoint_id", body.subgraphs)


@threads.get("/{thread_id}/state/{checkpoint_id}", summary="Get a thread's state at a checkpoint")
def get_state_at(request, thread_id: str, checkpoint_id: str, query: Query[StateQuery]):
    thread = _thread(request, thread_id)
    return _state_at(thread, checkpoint_id, "checkpoint_id", query.subgraphs)


@threads.delete("/{thread_id}", summary="Delete a thread", response={204: None})
def delete_thread(request, thread_id: str):
    """Deletes the thread, its runs and events and all its checkpoints. 409 while a run
    is running (cancel it first)."""
    thread = _thread(request, thread_id)
    _may_change(request)
    engine.delete_thread(thread, requested_by=_caller(request))
    return 204, None


class HistoryQuery(Strict):
    limit: int = Field(10, ge=1, le=1000)
    before: str | CheckpointRef | None = None
    metadata: dict[str, Any] | None = Field(
        None, validation_alias=AliasChoices("metadata", "filter")
    )
    checkpoint: CheckpointRef | None = None


@threads.post("/{thread_id}/history", summary="List a thread's checkpoints, newest first")
def get_history(request, thread_id: str, body: HistoryQuery = None):
    """At most ``limit`` (1-1000) states, newest first: older than checkpoint ``before``
    (an id, or a checkpoint object), with metadata matching ``metadata`` (also accepted
    as ``filter``)."""
    body = body or HistoryQuery()
    thread = _thread(request, thread_id)
    if body.checkpoint and body.checkpoint.checkpoint_ns:
        raise ApiError(422, "Subgraph histories are not served yet.", "checkpoint.checkpoint_ns")
    before = body.before.checkpoint_id if isinstance(body.before, CheckpointRef) else body.before
    history = engine.thread_history(thread, body.limit, before=before, filter=body.metadata)
    return [_state(s, thread) for s in history]


# -- runs ---------------------------------------------------------------------------

# What a run's stream can carry: the modes workers record as RunEvents, and ``values``,
# the thread's values once the run ends (workers record updates, not whole states).
STREAM_MODES = ("values", "updates", "custom", "tasks")


class CommandBody(Strict):
    resume: Any = None


class RunCreate(Strict):
    assistant_id: str
    input: Any = None
    command: CommandBody | None = None
    metadata: dict[str, Any] | None = None
    stream_mode: str | list[str] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] = "reject"
    durability: Literal["sync", "async", "exit"] = "async"
    if_not_exists: Literal["create", "reject"] = "reject"
    checkpoint_id: str | None = None
    checkpoint: CheckpointRef | None = None

    def modes(self) -> list[str]:
        return _modes(self.stream_mode)

    def options(self, request: HttpRequest) -> dict:
        return {
            "metadata": self.metadata,
            "durability": self.durability,
            "multitask_strategy": self.multitask_strategy,
            "requested_by": _caller(request),
        }


def _modes(stream_mode: str | list[str] | None) -> list[str]:
    modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode or [])
    modes = [m for m in modes if m] or list(STREAM_MODES)
    if unknown := [m for m in modes if m not in STREAM_MODES]:
        raise ApiError(
            422,
            f"Stream mode(s) {', '.join(unknown)} are not recorded; "
            f"choose from {', '.join(STREAM_MODES)}.",
            "stream_mode",
        )
    return modes


def _resume_args(pending: list[str], value: Any) -> dict:
    """``command.resume`` as ``engine.resume`` arguments: a map whose keys are all pending
    interrupt ids answers each by id (LangGraph's resume map); anything else is the
    answer to the one pending interrupt."""
    if isinstance(value, dict) and value and set(value) <= set(pending):
        return {"answers": value}
    return {"value": value}


def _create_run(request, thread_id: str, body: RunCreate) -> Run:
    """The run ``body`` asks for: ``input`` starts the graph (from ``checkpoint_id``:
    not served); ``command.resume`` answers the pending interrupt(s), or, with
    ``checkpoint_id``, those pending at that past checkpoint (``answer_again``); neither,
    with ``checkpoint_id``, replays from that checkpoint."""
    graph = _graph(body.assistant_id)
    body.modes()
    thread = _find_thread(request, thread_id)
    if thread is None and (body.if_not_exists != "create" or body.input is None):
        raise ApiError(404, f"Thread {thread_id!r} not found.", "thread_id")
    if thread is None and UNREACHABLE_THREAD_IDS.search(thread_id):
        raise ApiError(422, f"A thread cannot be named {thread_id!r}.", "thread_id")
    _may_change(request)
    if thread is not None and thread.graph and thread.graph != graph:
        raise ApiError(
            422,
            f"Thread {thread_id!r} runs graph {thread.graph!r}, not {graph!r}.",
            "assistant_id",
        )
    checkpoint_id = (body.checkpoint.checkpoint_id if body.checkpoint else None) or (
        body.checkpoint_id
    )
    if body.command is not None and body.input is not None:
        raise ApiError(422, "Send either input or command, not both.", "input")
    if body.command is not None:
        return _resume(request, thread, body, checkpoint_id)
    if checkpoint_id is not None:
        if body.input is not None:
            raise ApiError(
                422, "A run from a past checkpoint takes no input; fork with update_state.", "input"
            )
        return engine.replay(thread, checkpoint_id, **body.options(request))
    if body.input is None:
        raise ApiError(422, "A run needs an input (or a command).", "input")
    return engine.start(
        graph,
        body.input,
        thread_id=thread_id,
        tenant=request.auth.tenant,
        **body.options(request),
    )


def _resume(request, thread: Thread, body: RunCreate, checkpoint_id: str | None) -> Run:
    value = body.command.resume
    if checkpoint_id is None:
        pending = [i.id for i in engine.pending_interrupts(thread)]
        return engine.resume(thread, **_resume_args(pending, value), **body.options(request))
    if body.multitask_strategy != "reject":
        raise ApiError(
            422,
            "An answer given again forks the thread, which needs it idle: "
            "multitask_strategy must be reject.",
            "multitask_strategy",
        )
    pending = [i.id for i in engine.state_at(thread, checkpoint_id).interrupts]
    options = {k: v for k, v in body.options(request).items() if k != "multitask_strategy"}
    return engine.answer_again(thread, checkpoint_id, **_resume_args(pending, value), **options)


def _run_path(run: Run) -> str:
    return reverse("api:get_run", args=[run.thread.name, run.pk])


def _located(response: HttpResponse, run: Run) -> HttpResponse:
    """Name the run in ``Content-Location``, where the SDK reads a new run's ids."""
    response["Content-Location"] = _run_path(run)
    return response


@threads.post("/{thread_id}/runs", summary="Create a background run")
def create_run(request, thread_id: str, body: RunCreate):
    """Starts a run with ``input``, resumes the thread's interrupt(s) with
    ``command.resume`` (one value, or ``{interrupt_id: value}``), or replays from
    ``checkpoint_id``; ``multitask_strategy`` decides what happens to an active run,
    ``durability`` when checkpoints are saved. Returns the pending run; a worker
    executes it."""
    run = _create_run(request, thread_id, body)
    return _located(api.create_response(request, _run_json(run), status=200), run)


def _output(run_id: int) -> dict:
    """What ``wait`` and ``join`` return once the run has ended: the thread's values,
    with ``__interrupt__`` when it stopped at interrupts, or ``__error__``."""
    run = Run.objects.select_related("thread").filter(pk=run_id).first()
    if run is None:
        return {"__error__": {"error": "RunDeleted", "message": "The run no longer exists."}}
    if run.status == Run.Status.ERROR:
        return {"__error__": {"error": run.error_type, "message": run.error_message}}
    state = engine.thread_state(run.thread)
    values = jsonable(state.values)
    if state.interrupts and isinstance(values, dict):
        values["__interrupt__"] = [_interrupt(i) for i in state.interrupts]
    return values


async def _wait_output(run_id: int) -> dict:
    await events.wait_until_final(run_id)
    return await borrow(_output, run_id)


@threads.post("/{thread_id}/runs/wait", summary="Create a run and wait for its output")
async def wait_run(request, thread_id: str, body: RunCreate):
    """As ``POST /threads/{thread_id}/runs``, then waits for the run to end and returns
    the thread's values (with ``__interrupt__``), or ``{"__error__": ...}``."""
    run = await borrow(_create_run, request, thread_id, body)
    output = await _wait_output(run.pk)
    return _located(api.create_response(request, output, status=200), run)


def _stream_response(request, run: Run, modes: list[str], subgraphs: bool, after: int):
    """The run's events in the Agent Server's SSE format, from the shared event source."""
    query = urlencode([("stream_mode", m) for m in modes] + [("stream_subgraphs", subgraphs)])
    response = StreamingHttpResponse(
        _sdk_events(run.pk, modes, subgraphs, after),
        content_type="text/event-stream",
        headers=sse.SSE_HEADERS,
    )
    # Where the SDK reconnects (with Last-Event-ID) if the stream is cut, and the run.
    response["Location"] = request.build_absolute_uri(f"{_run_path(run)}/stream?{query}")
    return _located(response, run)


async def _sdk_events(run_id: int, modes: list[str], subgraphs: bool, after: int):
    """``metadata`` first; then each recorded chunk of a wanted mode as ``event: mode``
    (``mode|ns`` for a subgraph's, with ``stream_subgraphs``) with ``id: seq``; when the
    run has ended, ``values`` (the thread's values, with ``__interrupt__``) and, for a
    failed run, ``error``."""
    if after == 0:
        yield sse.event("metadata", {"run_id": str(run_id), "attempt": 1})
    async for item in events.follow(run_id, after):
        if isinstance(item, events.Event):
            if item.event in modes and (subgraphs or not item.ns):
                name = f"{item.event}|{item.ns}" if item.ns else item.event
                yield sse.event(name, item.data, id=item.seq)
        elif isinstance(item, events.Keepalive):
            yield sse.KEEPALIVE
        else:
            output = await borrow(_output, run_id)
            if "__error__" in output:
                yield sse.event("error", output["__error__"])
            elif "values" in modes:
                yield sse.event("values", output)


@threads.post("/{thread_id}/runs/stream", summary="Create a run and stream its events (SSE)")
async def stream_run(request, thread_id: str, body: RunCreate):
    """As ``POST /threads/{thread_id}/runs``, answered with the run's events as
    server-sent events while it runs (see ``GET .../runs/{run_id}/stream``)."""
    run = await borrow(_create_run, request, thread_id, body)
    return _stream_response(request, run, body.modes(), body.stream_subgraphs, 0)


class RunsQuery(Strict):
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    status: str | None = None


@threads.get("/{thread_id}/runs", summary="List a thread's runs, newest first")
def list_runs(request, thread_id: str, query: Query[RunsQuery]):
    thread = _thread(request, thread_id)
    found = thread.runs.select_related("thread")
    if query.status:
        found = found.filter(status=query.status)
    return [_run_json(r) for r in found[query.offset : query.offset + query.limit]]


@threads.get("/{thread_id}/runs/{run_id}", summary="Get a run", url_name="get_run")
def get_run(request, thread_id: str, run_id: str):
    return _run_json(_run(_thread(request, thread_id), run_id))


@threads.get("/{thread_id}/runs/{run_id}/join", summary="Wait for a run's output")
async def join_run(request, thread_id: str, run_id: str):
    """Waits for the run to end; returns what ``runs/wait`` returns."""
    run = await borrow(lambda: _run(_thread(request, thread_id), run_id))
    return await _wait_output(run.pk)


class JoinStreamQuery(Schema):
    stream_mode: list[str] = []
    stream_subgraphs: bool = False
    cancel_on_disconnect: bool = False


@threads.get("/{thread_id}/runs/{run_id}/stream", summary="Stream a run's events (SSE)")
async def join_stream(request, thread_id: str, run_id: str, query: Query[JoinStreamQuery]):
    """The run's events as server-sent events, from the start or, on reconnect, after
    the ``Last-Event-ID`` header's event; the stream ends when the run has. Modes:
    ``stream_mode`` (repeatable; default all of values, updates, custom, tasks)."""
    if query.cancel_on_disconnect:
        raise ApiError(422, "cancel_on_disconnect is not supported.", "cancel_on_disconnect")
    try:
        after = sse.last_event_id(request)
    except ValueError as exc:
        raise ApiError(422, str(exc), "Last-Event-ID") from None
    modes = _modes(query.stream_mode)
    run = await borrow(lambda: _run(_thread(request, thread_id), run_id))
    return _stream_response(request, run, modes, query.stream_subgraphs, after)


class CancelQuery(Schema):
    wait: bool = False
    action: Literal["interrupt", "rollback"] = "interrupt"


@threads.post("/{thread_id}/runs/{run_id}/cancel", summary="Cancel a run")
async def cancel_run(request, thread_id: str, run_id: str, query: Query[CancelQuery]):
    """Cancels a pending run at once, or stops a running one at its next super-step
    boundary (its checkpoints are kept). With ``wait``, answers once the run has ended.
    Returns the run. 409 when it has already ended."""
    if query.action == "rollback":
        raise ApiError(
            422,
            "Cancelling with rollback is not supported; a cancelled run keeps its "
            "checkpoints (start a run with multitask_strategy rollback to discard them).",
            "action",
        )
    run = await borrow(_cancel, request, thread_id, run_id)
    if query.wait:
        await events.wait_until_final(run.pk)
    run = await borrow(lambda: Run.objects.select_related("thread").get(pk=run.pk))
    return api.create_response(request, _run_json(run), status=200 if query.wait else 202)


def _cancel(request, thread_id: str, run_id: str) -> Run:
    run = _run(_thread(request, thread_id), run_id)
    _may_change(request)
    return engine.cancel(run, requested_by=_caller(request))


# -- the store -------------------------------------------------------------------------

store = Router(tags=["store"])
Namespace = list[str]


def _store(request: HttpRequest) -> ScopedStore:
    """The token's tenant's part of the store: every namespace begins with the tenant's
    slug, added here and stripped from what comes back (``durable.persistence.store.scoped``)."""
    return tenant_store(request.auth.tenant)


def _item_json(item) -> dict:
    found = {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at,
        "updated_at": item.updated_at,
    }
    if getattr(item, "score", None) is not None:
        found["score"] = item.score
    return found


def _store_call(call):
    """The store's refusals (a bad namespace, filter or TTL) as 422s naming no single
    field, since the store's messages name it."""
    try:
        return call()
    except ValueError as exc:
        raise ApiError(422, str(exc), "namespace" if "amespace" in str(exc) else None) from None


class StorePut(Strict):
    namespace: Namespace
    key: str = Field(min_length=1, max_length=THREAD_ID_MAX_LENGTH)
    value: dict[str, Any]
    index: Literal[False] | list[str] | None = None
    ttl: float | None = Field(None, gt=0)


@store.put("/items", summary="Put an item", response={204: None})
def put_item(request, body: StorePut):
    _may_change(request)
    engine.check_storable(body.value, "value")
    _store_call(
        lambda: _store(request).put(
            tuple(body.namespace), body.key, body.value, index=body.index, ttl=body.ttl
        )
    )
    return 204, None


class StoreGet(Schema):
    key: str
    namespace: str = ""
    refresh_ttl: bool | None = None


@store.get("/items", summary="Get an item")
def get_item(request, query: Query[StoreGet]):
    namespace = tuple(label for label in query.namespace.split(".") if label)
    item = _store_call(
        lambda: _store(request).get(namespace, query.key, refresh_ttl=query.refresh_ttl)
    )
    if item is None:
        raise ApiError(404, f"No item {query.key!r} in namespace {namespace!r}.", "key")
    return _item_json(item)


class StoreDelete(Strict):
    namespace: Namespace
    key: str


@store.delete("/items", summary="Delete an item", response={204: None})
def delete_item(request, body: StoreDelete):
    _may_change(request)
    _store_call(lambda: _store(request).delete(tuple(body.namespace), body.key))
    return 204, None


class StoreSearch(Strict):
    namespace_prefix: Namespace = []
    filter: dict[str, Any] | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    query: str | None = None
    refresh_ttl: bool | None = None


@store.post("/items/search", summary="Search items")
def search_items(request, body: StoreSearch = None):
    body = body or StoreSearch()
    found = _store_call(
        lambda: _store(request).search(
            tuple(body.namespace_prefix),
            query=body.query,
            filter=body.filter,
            limit=body.limit,
            offset=body.offset,
            refresh_ttl=body.refresh_ttl,
        )
    )
    return {"items": [_item_json(i) for i in found]}


class StoreNamespaces(Strict):
    prefix: Namespace | None = None
    suffix: Namespace | None = None
    max_depth: int | None = Field(None, ge=1)
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


@store.post("/namespaces", summary="List namespaces")
def list_namespaces(request, body: StoreNamespaces = None):
    body = body or StoreNamespaces()
    found = _store_call(
        lambda: _store(request).list_namespaces(
            prefix=tuple(body.prefix) if body.prefix else None,
            suffix=tuple(body.suffix) if body.suffix else None,
            max_depth=body.max_depth,
            limit=body.limit,
            offset=body.offset,
        )
    )
    return {"namespaces": [list(ns) for ns in found]}


api.add_router("/assistants", assistants)
api.add_router("/threads", threads)
api.add_router("/store", store)
