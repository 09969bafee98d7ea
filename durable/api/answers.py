"""What each route answers, as the OpenAPI document describes it: pydantic schemas named
and shaped after the Agent Server's components (``Thread``, ``Run``, ``ThreadState``,
``Assistant``, ``Item``, ...) for the JSON that ``shapes`` builds, ``ErrorResponse`` for
every refusal (``errors.error``), and ``EVENT_STREAM`` for the routes that answer with
server-sent events.

A route's ``response=`` schema also filters what it returns (ninja validates and dumps
the answer through it), so every schema here keeps the keys it does not declare
(``extra="allow"``): a key ``shapes`` adds reaches clients before it is declared here.
``Run`` is the exception that the others should follow: ``shapes.run_json`` builds each
run through it, and it forbids keys it does not declare, so it is the one run shape.
A value a schema declares but ``shapes`` does not build is a 500, which the schema
fuzzing test (``tests/server/test_api_schema.py``) finds."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from durable.models import Run as RunRow
from durable.models import Thread as ThreadRow

# A graph's state: an object for a ``StateGraph``, any JSON value for the functional
# API's (``durable.values.jsonable``).
Values = Any


class Answer(BaseModel):
    # A plain pydantic model, not ninja's ``Schema``: that one reads fields off the
    # answer as attributes, which drops the keys it does not declare.
    model_config = ConfigDict(extra="allow")


class ErrorResponse(Answer):
    """A refused request: what is wrong, and the input at fault (``null`` when no single
    input is; a path such as ``metadata.team`` names a part of one)."""

    detail: str
    field: str | None


class Interrupt(Answer):
    """A LangGraph ``Interrupt``: the value the graph asked with, and its id."""

    value: Any
    id: str | None


class CheckpointConfig(Answer):
    """A checkpoint of a thread, by the thread's ``thread_id``."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str | None
    checkpoint_map: dict[str, Any] | None


class ThreadTask(Answer):
    """A ``PregelTask`` of a state: ``error`` as ``Type(message)``, ``checkpoint`` the
    subgraph's when the task runs one, ``state`` its state when read with ``subgraphs``."""

    id: str
    name: str
    error: Any
    interrupts: list[Interrupt]
    checkpoint: CheckpointConfig | None = None
    state: ThreadState | None = None
    result: Any


class ThreadState(Answer):
    """A LangGraph ``StateSnapshot`` (``durable.snapshots.state_json``)."""

    values: Values
    next: list[str]
    checkpoint: CheckpointConfig | None
    metadata: dict[str, Any] | None
    created_at: str | None
    parent_checkpoint: CheckpointConfig | None
    tasks: list[ThreadTask]
    interrupts: list[Interrupt]


ThreadTask.model_rebuild()


class ThreadStateUpdateResponse(Answer):
    """The checkpoint ``update_state`` wrote."""

    checkpoint: CheckpointConfig


class Thread(Answer):
    """A thread (``shapes.thread_json``): its latest state's ``values``, and its pending
    ``interrupts`` by task id."""

    thread_id: str
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any]
    status: Literal[tuple(ThreadRow.Status.values)]
    values: Values
    interrupts: dict[str, list[Interrupt]]


class RunError(Answer):
    error: str
    message: str
    node: str | None = None


# A run's status as the Agent Server's ``RunStatus`` names it: a run stopped on request
# is "interrupted" there (the SDKs' RunStatus has no "cancelled"); the console's words
# stay its own.
WIRE_STATUS = {RunRow.Status.CANCELLED: "interrupted"}
RUN_STATUSES = tuple(dict.fromkeys(WIRE_STATUS.get(s, s) for s in RunRow.Status.values))


class Run(Answer):
    """A run as the Agent Server's ``Run``, plus what this server records: ``kind``
    (start, resume, fork, replay), ``durability``, ``requested_by``, the checkpoint it
    started from, ``interrupts`` it stopped at, ``error`` and why it was stopped
    (``stop_detail``). ``thread_id`` is the thread's ``name``; ``assistant_id`` is the
    stored assistant's the run was asked on (with ``assistant_version``, the version that
    gave it its config; ``null`` for a run on a graph), or its graph's. ``shapes.run_json``
    builds every answer through this schema, so it is the whole of what is sent."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    thread_id: str
    assistant_id: str
    assistant_version: int | None
    created_at: datetime
    updated_at: datetime
    status: Literal[RUN_STATUSES]
    metadata: dict[str, Any]
    # The Agent Server's ``kwargs``: what the run was asked to do with (its input or
    # command, config, context, stream modes, interrupts before/after).
    kwargs: dict[str, Any]
    multitask_strategy: Literal[tuple(RunRow.MultitaskStrategy.values)]
    kind: str
    durability: str
    requested_by: str
    checkpoint_id: str | None
    interrupts: Any
    error: RunError | None
    stop_detail: str | None


class Cron(Answer):
    """A cron (``shapes.cron_json``): ``thread_id`` is ``null`` for a cron whose every
    fire runs on a new thread; ``next_run_date`` is ``null`` while it is disabled."""

    cron_id: str
    assistant_id: str | None
    thread_id: str | None
    on_run_completed: Literal["delete", "keep"] | None
    end_time: datetime | None
    schedule: str
    timezone: str
    created_at: datetime
    updated_at: datetime
    payload: dict[str, Any]
    user_id: str | None
    next_run_date: datetime | None
    metadata: dict[str, Any]
    enabled: bool


class CronFields(Answer):
    """A cron as ``POST /runs/crons/search`` answers it: the fields of ``select`` only."""

    cron_id: str | None = None
    assistant_id: str | None = None
    thread_id: str | None = None
    on_run_completed: str | None = None
    end_time: datetime | None = None
    schedule: str | None = None
    timezone: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    payload: dict[str, Any] | None = None
    user_id: str | None = None
    next_run_date: datetime | None = None
    metadata: dict[str, Any] | None = None
    enabled: bool | None = None


class AssistantVersion(Answer):
    """One version of an assistant (``shapes.version_json``); a registered graph's
    default assistant has one, version 1."""

    assistant_id: str
    graph_id: str
    name: str
    description: str | None
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: dict[str, Any]
    version: int
    created_at: datetime


class Assistant(AssistantVersion):
    """An assistant at its latest version (``shapes.assistant_json``): a stored one
    (``assistant_id`` a UUID), or a registered graph's default (its name)."""

    updated_at: datetime


class AssistantFields(Answer):
    """An assistant of a search with ``select``: only the fields it names."""

    assistant_id: str | None = None
    graph_id: str | None = None
    name: str | None = None
    description: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    version: int | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class GraphSchemaNoId(Answer):
    """A graph's JSON schemas, ``null`` where LangGraph can describe none."""

    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    state_schema: dict[str, Any] | None
    config_schema: dict[str, Any] | None
    context_schema: dict[str, Any] | None


class GraphSchema(GraphSchemaNoId):
    graph_id: str


# ``/assistants/{id}/subgraphs``: each subgraph's schemas by its namespace.
Subgraphs = dict[str, GraphSchemaNoId]


class GraphDrawing(Answer):
    """The graph as LangGraph draws it (``Graph.to_json``)."""

    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]


class ServerInfo(Answer):
    version: str
    langgraph_py_version: str
    flags: dict[str, Any]
    metadata: dict[str, Any]


class Ok(Answer):
    ok: bool


class ThreadPruneResponse(Answer):
    pruned_count: int


class Item(Answer):
    """A store item; ``score`` only in a search with ``query`` over an index."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class SearchItem(Item):
    score: float | None = None


class SearchItemsResponse(Answer):
    items: list[SearchItem]


class ListNamespaceResponse(Answer):
    namespaces: list[list[str]]


# ``runs/wait`` and ``join``: the thread's values once the run has ended (any JSON
# value), with ``__interrupt__``, or ``{"__error__": {"error", "message"}}``.
RunOutput = Any

# One server-sent event of a run's stream: its name (a stream mode, ``metadata``,
# ``error``; ``mode|namespace`` for a subgraph's), its JSON data, and its sequence number
# (what a reconnect sends back as ``Last-Event-ID``; not on ``metadata`` and the end).
SSE_EVENT = {
    "type": "object",
    "properties": {
        "event": {"type": "string"},
        "data": {"type": "string", "contentMediaType": "application/json"},
        "id": {"type": "string"},
    },
    "required": ["event", "data"],
}

# The OpenAPI of a route that answers with server-sent events (``durable.sse``), for its
# ``openapi_extra``: ninja documents a route's ``response=`` as JSON only.
EVENT_STREAM = {
    "responses": {
        200: {
            "description": "The run's events as server-sent events (``event:``, ``data:`` "
            "JSON, ``id:``), ending when the run has ended.",
            "content": {"text/event-stream": {"schema": SSE_EVENT}},
        }
    }
}
