"""The HTTP API, shaped after LangGraph's Agent Server API so that the official
``langgraph-sdk`` client works against it unchanged (``get_sync_client(url=".../api")``).

Resources, paths and fields follow the Agent Server's where they exist: threads, their
state and history, runs (background, streamed, waited for) and assistants. A registered
graph's name is its ``assistant_id`` (and its ``graph_id``). Every operation goes through
``durable.runs``; this module only reads models.

Errors are JSON: ``{"detail": message, "field": name}`` (``field`` is ``null`` when no
single input is at fault), with status 404 for an unknown thread, run or assistant, 409
for a run refused because the thread is busy, 422 for input that is not acceptable and
400 for a body that is not JSON. A refused request changes nothing.

Not implemented (refused with 422 naming the field when sent): stateless runs, ``config``,
``context``, ``interrupt_before``/``interrupt_after``, webhooks, crons, the store routes.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from langgraph.types import StateSnapshot
from ninja import Field, NinjaAPI, Query, Router, Schema
from ninja.errors import HttpError, ValidationError
from ninja.parser import Parser
from pydantic import AliasChoices, ConfigDict

from durable import events, runs
from durable.graphs import graph_names
from durable.metadata import MetadataKeyEquals
from durable.models import Checkpoint, Run, Thread
from durable.values import jsonable


class ApiError(Exception):
    """A refused request: HTTP ``status``, a message, and the input ``field`` at fault."""

    def __init__(self, status: int, message: str, field: str | None = None):
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


class _BodyNotJSON(ValueError):
    pass


class JSONParser(Parser):
    """Parses bodies as JSON, saying where a body fails to parse (ninja turns any parse
    failure into a 400; ``_http_error`` passes our message on)."""

    def parse_body(self, request):
        try:
            return json.loads(request.body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _BodyNotJSON(f"The request body is not valid JSON: {exc}.") from None
        except RecursionError:
            raise _BodyNotJSON("The request body is nested too deeply.") from None


api = NinjaAPI(
    title="Durable console API",
    version="1",
    description=__doc__,
    urls_namespace="api",
    parser=JSONParser(),
)


def _error(request, status: int, message: str, field: str | None = None) -> HttpResponse:
    return api.create_response(request, {"detail": message, "field": field}, status=status)


@api.exception_handler(ApiError)
def _api_error(request, exc: ApiError):
    return _error(request, exc.status, exc.message, exc.field)


@api.exception_handler(runs.InvalidRequest)
def _invalid_request(request, exc: runs.InvalidRequest):
    return _error(request, 422, exc.message, exc.field)


@api.exception_handler(HttpError)
def _http_error(request, exc: HttpError):
    if isinstance(exc.__cause__, _BodyNotJSON):
        return _error(request, 400, str(exc.__cause__), "body")
    return _error(request, exc.status_code, str(exc))


@api.exception_handler(Http404)
def _not_found(request, exc):
    return _error(request, 404, "Not found.")


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
    """Every thread this request may see. The API is open for now: tenancy (issue 5)
    narrows this one queryset, and every lookup below goes through it, runs included
    (they are reached only through their thread)."""
    return Thread.objects.all()


def _thread(request: HttpRequest, thread_id: str) -> Thread:
    thread = _threads(request).filter(thread_id=thread_id).first()
    if thread is None:
        raise ApiError(404, f"Thread {thread_id!r} not found.", "thread_id")
    return thread


def _run(thread: Thread, run_id: str) -> Run:
    run = thread.runs.filter(pk=int(run_id)).first() if run_id.isdigit() else None
    if run is None:
        raise ApiError(404, f"Run {run_id!r} not found on thread {thread.thread_id!r}.", "run_id")
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


def _checkpoint(config: dict | None) -> dict | None:
    if not config:
        return None
    c = config["configurable"]
    return {
        "thread_id": c.get("thread_id"),
        "checkpoint_ns": c.get("checkpoint_ns", ""),
        "checkpoint_id": c.get("checkpoint_id"),
        "checkpoint_map": c.get("checkpoint_map"),
    }


def _interrupt(item) -> dict:
    return {"value": jsonable(item.value), "id": item.id}


def _task(task) -> dict:
    error = task.error
    if isinstance(error, BaseException):
        error = f"{type(error).__name__}({error})"
    state = task.state
    return {
        "id": task.id,
        "name": task.name,
        "error": jsonable(error) if error is not None else None,
        "interrupts": [_interrupt(i) for i in task.interrupts],
        "checkpoint": _checkpoint(state) if isinstance(state, dict) else None,
        "state": _state(state) if isinstance(state, StateSnapshot) else None,
        "result": jsonable(task.result) if task.result is not None else None,
    }


def _state(snapshot: StateSnapshot) -> dict:
    """A ``StateSnapshot`` as the Agent Server's ``ThreadState``."""
    return {
        "values": jsonable(snapshot.values),
        "next": list(snapshot.next),
        "checkpoint": _checkpoint(snapshot.config),
        "metadata": jsonable(snapshot.metadata),
        "created_at": snapshot.created_at,
        "parent_checkpoint": _checkpoint(snapshot.parent_config),
        "tasks": [_task(t) for t in snapshot.tasks],
        "interrupts": [_interrupt(i) for i in snapshot.interrupts],
    }


def _thread_json(thread: Thread) -> dict:
    """A thread as the Agent Server's ``Thread``: its metadata carries ``graph_id`` and
    ``assistant_id`` once a graph is bound; ``values`` and ``interrupts`` (by task id)
    are its latest state's."""
    state = runs.thread_state(thread)
    interrupts: dict[str, list] = {}
    for task in state.tasks:
        if task.interrupts:
            interrupts[task.id] = [_interrupt(i) for i in task.interrupts]
    metadata = dict(thread.metadata)
    if thread.graph:
        metadata.update(graph_id=thread.graph, assistant_id=thread.graph)
    return {
        "thread_id": thread.thread_id,
        "created_at": thread.created_at,
        "updated_at": thread.updated_at,
        "metadata": metadata,
        "status": thread.status,
        "values": jsonable(state.values),
        "interrupts": interrupts,
    }


def _run_json(run: Run) -> dict:
    """A run as the Agent Server's ``Run``, plus ``kind`` and ``error``."""
    return {
        "run_id": str(run.pk),
        "thread_id": run.thread.thread_id,
        "assistant_id": run.graph,
        "created_at": run.created_at,
        "updated_at": run.ended_at or run.started_at or run.created_at,
        "status": run.status,
        "metadata": {},
        "multitask_strategy": "reject",
        "kind": run.kind,
        "error": (
            {"error": run.error_type, "message": run.error_message} if run.error_type else None
        ),
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
    offset: int = Field(0, ge=0)


@assistants.post("/search", summary="Search assistants (one per registered graph)")
def search_assistants(request, body: AssistantSearch = None):
    body = body or AssistantSearch()
    names = [
        n
        for n in graph_names()
        if (body.graph_id is None or n == body.graph_id) and (body.name is None or n == body.name)
    ]
    return [_assistant(n) for n in names[body.offset : body.offset + body.limit]]


@assistants.get("/{assistant_id}", summary="Get an assistant")
def get_assistant(request, assistant_id: str):
    return _assistant(_graph(assistant_id))


# -- threads ------------------------------------------------------------------------

threads = Router(tags=["threads"])


class ThreadCreate(Strict):
    thread_id: str | None = None
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
    if body.thread_id is not None and body.if_exists == "raise":
        if _threads(request).filter(thread_id=body.thread_id).exists():
            raise ApiError(409, f"Thread {body.thread_id!r} already exists.", "thread_id")
    thread, _ = runs.create_thread(
        body.thread_id, graph=graph, metadata=metadata, if_exists="do_nothing"
    )
    return _thread_json(thread)


class ThreadSearch(Strict):
    metadata: dict[str, Any] | None = None
    ids: list[str] | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    limit: int = Field(10, ge=1, le=100)
    offset: int = Field(0, ge=0)
    sort_by: Literal["thread_id", "status", "created_at", "updated_at"] = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"


@threads.post("/search", summary="Search threads")
def search_threads(request, body: ThreadSearch = None):
    """Threads whose metadata has every key/value of ``metadata`` (``graph_id`` and
    ``assistant_id`` match the thread's graph), with ``status``, among ``ids``; sorted,
    then ``limit`` (at most 100) from ``offset``."""
    body = body or ThreadSearch()
    found = _threads(request)
    for key, value in (body.metadata or {}).items():
        if key in ("graph_id", "assistant_id"):
            found = found.filter(graph=value) if isinstance(value, str) else found.none()
        else:
            found = found.filter(MetadataKeyEquals(key, value))
    if body.status:
        found = found.filter(status=body.status)
    if body.ids is not None:
        found = found.filter(thread_id__in=body.ids)
    sign = "-" if body.sort_order == "desc" else ""
    found = found.order_by(f"{sign}{body.sort_by}", f"{sign}pk")
    return [_thread_json(t) for t in found[body.offset : body.offset + body.limit]]


@threads.get("/{thread_id}", summary="Get a thread")
def get_thread(request, thread_id: str):
    return _thread_json(_thread(request, thread_id))


# -- state and history ----------------------------------------------------------------


def _check_checkpoint(thread: Thread, checkpoint_id: str, field: str) -> None:
    """Refuse a checkpoint id that is not one of ``thread``'s root checkpoints."""
    if not Checkpoint.objects.filter(
        thread_id=thread.thread_id, checkpoint_ns="", checkpoint_id=checkpoint_id
    ).exists():
        raise ApiError(
            404,
            f"Checkpoint {checkpoint_id!r} is not a checkpoint of thread {thread.thread_id!r}.",
            field,
        )


def _state_at(thread: Thread, checkpoint_id: str, field: str, subgraphs: bool) -> dict:
    _check_checkpoint(thread, checkpoint_id, field)
    return _state(runs.state_at(thread, checkpoint_id, subgraphs=subgraphs))


class StateQuery(Schema):
    subgraphs: bool = False


@threads.get("/{thread_id}/state", summary="Get a thread's latest state")
def get_state(request, thread_id: str, query: Query[StateQuery]):
    thread = _thread(request, thread_id)
    return _state(runs.thread_state(thread, subgraphs=query.subgraphs))


class StateAtCheckpoint(Strict):
    checkpoint: CheckpointRef
    subgraphs: bool = False


@threads.post("/{thread_id}/state/checkpoint", summary="Get a thread's state at a checkpoint")
def post_state_at(request, thread_id: str, body: StateAtCheckpoint):
    thread = _thread(request, thread_id)
    if not body.checkpoint.checkpoint_id:
        raise ApiError(422, "checkpoint.checkpoint_id is required.", "checkpoint.checkpoint_id")
    return _state_at(
        thread, body.checkpoint.checkpoint_id, "checkpoint.checkpoint_id", body.subgraphs
    )


@threads.get("/{thread_id}/state/{checkpoint_id}", summary="Get a thread's state at a checkpoint")
def get_state_at(request, thread_id: str, checkpoint_id: str, query: Query[StateQuery]):
    thread = _thread(request, thread_id)
    return _state_at(thread, checkpoint_id, "checkpoint_id", query.subgraphs)


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
    if before is not None:
        _check_checkpoint(thread, before, "before")
    history = runs.thread_history(thread, body.limit, before=before, filter=body.metadata)
    return [_state(s) for s in history]


# -- runs ---------------------------------------------------------------------------

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
        return [self.stream_mode] if isinstance(self.stream_mode, str) else self.stream_mode


def _check_modes(modes: list[str]) -> None:
    if unknown := [m for m in modes if m not in STREAM_MODES]:
        raise ApiError(
            422,
            f"Stream mode(s) {', '.join(unknown)} are not recorded; "
            f"choose from {', '.join(STREAM_MODES)}.",
            "stream_mode",
        )


def _resume_args(thread: Thread, value: Any) -> dict:
    """``command.resume`` as ``runs.resume`` arguments: a map whose keys are all pending
    interrupt ids answers each by id (LangGraph's resume map); anything else is the
    answer to the one pending interrupt."""
    pending = {i.id for i in runs.pending_interrupts(thread)}
    if isinstance(value, dict) and value and set(value) <= pending:
        return {"answers": value}
    return {"value": value}


def _create_run(request, thread_id: str, body: RunCreate) -> Run:
    graph = _graph(body.assistant_id)
    _check_modes(body.modes())
    thread = _threads(request).filter(thread_id=thread_id).first()
    if thread is None and body.if_not_exists != "create":
        raise ApiError(404, f"Thread {thread_id!r} not found.", "thread_id")
    if thread is not None and thread.graph and thread.graph != graph:
        raise ApiError(
            422,
            f"Thread {thread_id!r} runs graph {thread.graph!r}, not {graph!r}.",
            "assistant_id",
        )
    if body.checkpoint_id or body.checkpoint:
        raise ApiError(422, "Runs from a past checkpoint are not served yet.", "checkpoint_id")
    if body.command is not None:
        if body.input is not None:
            raise ApiError(422, "Send either input or command, not both.", "input")
        if thread is None:
            raise ApiError(404, f"Thread {thread_id!r} not found.", "thread_id")
        return runs.resume(thread, **_resume_args(thread, body.command.resume))
    if body.input is None:
        raise ApiError(422, "A run needs an input (or a command).", "input")
    return runs.start(graph, body.input, thread_id=thread_id)


def _located(request, response: HttpResponse, run: Run) -> HttpResponse:
    """Name the run in ``Content-Location``, where the SDK reads a new run's ids."""
    response["Content-Location"] = (
        f"{request.path.split('/threads/')[0]}/threads/{run.thread.thread_id}/runs/{run.pk}"
    )
    return response


@threads.post("/{thread_id}/runs", summary="Create a background run")
def create_run(request, thread_id: str, body: RunCreate):
    """Starts a run with ``input``, or resumes the thread's interrupt(s) with
    ``command.resume``; returns the pending run. A worker executes it."""
    run = _create_run(request, thread_id, body)
    response = api.create_response(request, _run_json(run), status=200)
    return _located(request, response, run)


def _output(run_id: int) -> dict:
    """What ``wait`` and ``join`` return once the run has ended: the thread's values,
    with ``__interrupt__`` when it stopped at interrupts, or ``__error__``."""
    run = Run.objects.select_related("thread").filter(pk=run_id).first()
    if run is None:
        return {"__error__": {"error": "RunDeleted", "message": "The run's thread was deleted."}}
    if run.status == Run.Status.ERROR:
        return {"__error__": {"error": run.error_type, "message": run.error_message}}
    state = runs.thread_state(run.thread)
    values = jsonable(state.values)
    if state.interrupts and isinstance(values, dict):
        values["__interrupt__"] = [_interrupt(i) for i in state.interrupts]
    return values


async def _wait_output(run_id: int) -> dict:
    await events.wait_until_final(run_id)
    return await events.borrow(lambda: _output(run_id))


@threads.post("/{thread_id}/runs/wait", summary="Create a run and wait for its output")
async def wait_run(request, thread_id: str, body: RunCreate):
    run = await events.borrow(lambda: _create_run(request, thread_id, body))
    output = await _wait_output(run.pk)
    return _located(request, api.create_response(request, output, status=200), run)


class RunsQuery(Strict):
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0)
    status: str | None = None


@threads.get("/{thread_id}/runs", summary="List a thread's runs, newest first")
def list_runs(request, thread_id: str, query: Query[RunsQuery]):
    thread = _thread(request, thread_id)
    found = thread.runs.select_related("thread")
    if query.status:
        found = found.filter(status=query.status)
    return [_run_json(r) for r in found[query.offset : query.offset + query.limit]]


@threads.get("/{thread_id}/runs/{run_id}", summary="Get a run")
def get_run(request, thread_id: str, run_id: str):
    return _run_json(_run(_thread(request, thread_id), run_id))


@threads.get("/{thread_id}/runs/{run_id}/join", summary="Wait for a run's output")
async def join_run(request, thread_id: str, run_id: str):
    run = await events.borrow(lambda: _run(_thread(request, thread_id), run_id))
    return await _wait_output(run.pk)


api.add_router("/assistants", assistants)
api.add_router("/threads", threads)
