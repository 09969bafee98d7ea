"""What the API accepts: the JSON body parser, and each route's request body or query as
a ninja ``Schema``, with the Agent Server's field names. Bodies are ``Strict``: a field
this server does not serve is a 422 naming it rather than silently ignored."""

from __future__ import annotations

import json
import types
import typing
import uuid
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from ninja.parser import Parser
from ninja.schema import DjangoGetter
from pydantic import AfterValidator, AliasChoices, BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from durable.api.errors import ApiError, BodyNotJSON
from durable.engine import checks
from durable.engine.requests import Resume, RunRequest
from durable.engine.stored_assistants import RunAssistant
from durable.models import NAME_MAX_LENGTH, THREAD_ID_MAX_LENGTH
from durable.persistence.store.checks import MAX_TTL_MINUTES
from durable.persistence.text import UnstorableText, check_text, text_problem, walk

# The largest offset a database takes (PostgreSQL's OFFSET is a bigint).
MAX_OFFSET = 2**63 - 1

# What a run's stream can carry, as the Agent Server names the modes: those a run can be
# asked to record (``durable.engine.checks``). A join of a run that was asked for none
# (one the console started) carries ``JOIN_MODES`` unless it asks for others.
STREAM_MODES = checks.STREAM_MODES
JOIN_MODES = ("values", "updates", "custom", "tasks")


class JSONParser(Parser):
    """Parses bodies as JSON, saying where a body fails to parse (ninja turns any parse
    failure into a 400, and the API's ``HttpError`` handler, in ``errors``, passes our
    message on); a body or query is refused whole when it holds text no database can
    take (``durable.persistence.text``: 422 naming its path, ``metadata.team``).

    A body must say ``Content-Type: application/json`` (else 415): a browser sends a
    cross-site form or ``text/plain`` POST without asking the server first, but not a
    JSON one, so this keeps other web pages from driving the API (it has no CSRF token).
    A request that authenticated with the ``x-api-key`` header is the exception: no
    cross-site form can set a header, so its body is parsed as JSON whatever its
    Content-Type says (Agent Chat UI's passthrough forwards JSON as ``text/plain``), and
    one that does not parse is still the 415.
    Ninja authenticates before it parses (``ninja.operation.Operation.run``), so
    ``request.auth`` is set here when the key was good.
    A body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is a 413. An object with a key twice is a
    400 naming it: JSON leaves such a body's meaning open (Python would keep the last
    value, other parsers the first), and an operator's request must say one thing."""

    def parse_body(self, request):
        declared = request.content_type == "application/json"
        unsupported = ApiError(
            415, "The request body must be JSON (Content-Type: application/json).", "body"
        )
        if not declared and not _keyed(request):
            raise unsupported
        repeated: list[_Repeated] = []
        try:
            body = json.loads(request.body, object_pairs_hook=lambda p: _object(p, repeated))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if not declared:  # not JSON, and not said to be: the Content-Type was right
                raise unsupported from None
            raise BodyNotJSON(f"The request body is not valid JSON: {exc}.") from None
        except RecursionError:
            raise BodyNotJSON("The request body is nested too deeply.") from None
        if repeated:
            _refuse_repeated(body)
        _check_text(body, "body")
        return body

    def parse_querydict(self, data, list_fields, request):
        query = super().parse_querydict(data, list_fields, request)
        _check_text(query, "query")
        return query


def _keyed(request) -> bool:
    """Whether the request authenticated with an API key header, which a browser sends
    cross-site only after a CORS preflight the server allowed."""
    return getattr(request, "auth", None) is not None and bool(request.headers.get("x-api-key"))


class _Repeated(dict):
    """A parsed JSON object that had the key ``key`` more than once."""

    key: str


def _object(pairs: list[tuple[str, Any]], repeated: list[_Repeated]) -> dict:
    """A JSON object's ``pairs`` as a dict; one with a repeated key is marked, and kept
    in ``repeated``."""
    parsed = dict(pairs)
    if len(parsed) == len(pairs):
        return parsed
    seen: set[str] = set()
    marked = _Repeated(parsed)
    marked.key = next(k for k, _ in pairs if k in seen or seen.add(k))
    repeated.append(marked)
    return marked


def _refuse_repeated(body: Any) -> None:
    """400 naming the first repeated key of ``body`` by its path."""
    path, item = next((p, i) for p, i in walk(body) if isinstance(i, _Repeated))
    raise ApiError(
        400,
        f"The request body has the key {item.key[:100]!r} more than once"
        f"{f' (in {path})' if path else ''}; send each key once.",
        f"{path}.{item.key}" if path else item.key,
    )


def _check_text(data: Any, whole: str) -> None:
    """422 naming the path of the first text in ``data`` no database takes; ``whole``
    when it is one of ``data``'s own keys."""
    try:
        check_text(data)
    except UnstorableText as exc:
        raise ApiError(422, str(exc), exc.field or whole) from None


def _storable(text: str) -> str:
    if problem := text_problem(text):
        raise PydanticCustomError("unstorable_text", "{problem}", {"problem": problem})
    return text


# The id a tenant gives a thread (``Thread.name``), in a path or a body: what the table
# holds, so that a longer one is a 422 rather than no thread or a database error.
ThreadId = Annotated[
    str, Field(min_length=1, max_length=THREAD_ID_MAX_LENGTH), AfterValidator(_storable)
]


def _kinds(annotation: Any) -> set[type]:
    """The JSON kinds a field's type takes: ``bool``, ``int`` (any number), ``object``
    (anything else)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _kinds(args[0])
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_kinds(a) for a in args))
    if origin is Literal:
        return {
            bool if isinstance(a, bool) else int if isinstance(a, int | float) else object
            for a in args
        }
    if annotation is bool:
        return {bool}
    if annotation in (int, float):
        return {int}
    if annotation is Any:
        return {bool, int, object}
    return {object}


class Request(Schema):
    """A request's body or query: a JSON object (ninja's ``Schema`` would read fields off
    any value, a list included), whose booleans and numbers are what their fields say.
    Pydantic takes ``true`` for ``1`` and ``0`` for ``false``, which the OpenAPI document
    (JSON Schema) does not: such a value is a 422 naming its field. Query values are text,
    which ninja reads into their types, as the document says."""

    @model_validator(mode="before")
    @classmethod
    def _json_types(cls, data: Any) -> Any:
        # ninja hands its own validators the input in a ``DjangoGetter``.
        fields = data._obj if isinstance(data, DjangoGetter) else data
        if isinstance(fields, BaseModel):
            return data
        if not isinstance(fields, dict):
            raise PydanticCustomError("dict_type", "Input should be a JSON object")
        for name, value in fields.items():
            field = cls.model_fields.get(name)
            if field is None or not isinstance(value, bool | int | float):
                continue
            kinds = _kinds(field.annotation)
            if isinstance(value, bool) and bool not in kinds:
                raise ApiError(422, f"{name}: must be a number, not {str(value).lower()}.", name)
            if not isinstance(value, bool) and int not in kinds and bool in kinds:
                raise ApiError(422, f"{name}: must be true or false, not {value}.", name)
        return data


class Strict(Request):
    model_config = ConfigDict(extra="forbid")


class CheckpointRef(Strict):
    """A checkpoint of a thread, as the Agent Server names it."""

    checkpoint_id: str | None = None
    checkpoint_ns: str = ""
    thread_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


def chosen_checkpoint(body: StateUpdate | RunCreate) -> str | None:
    """The checkpoint a body names, as ``checkpoint.checkpoint_id`` or ``checkpoint_id``."""
    return (body.checkpoint.checkpoint_id if body.checkpoint else None) or body.checkpoint_id


# -- threads -------------------------------------------------------------------------

ThreadStatus = Literal["idle", "busy", "interrupted", "error"]


class ThreadCreate(Strict):
    thread_id: ThreadId | None = None
    metadata: dict[str, Any] = {}
    if_exists: Literal["raise", "do_nothing"] = "raise"
    graph_id: str | None = None


class ThreadSearch(Strict):
    metadata: dict[str, Any] | None = None
    ids: list[str] | None = None
    status: ThreadStatus | None = None
    limit: int = Field(10, ge=1, le=100)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    sort_by: Literal["thread_id", "status", "created_at", "updated_at"] = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"


class ThreadCount(Strict):
    metadata: dict[str, Any] | None = None
    status: ThreadStatus | None = None


class ThreadPatch(Strict):
    metadata: dict[str, Any] = {}


class ThreadPrune(Strict):
    thread_ids: list[ThreadId] = Field(max_length=1000)
    strategy: Literal["delete", "keep_latest"] = "delete"


# -- state and history ---------------------------------------------------------------


class StateQuery(Schema):
    subgraphs: bool = False


class StateUpdate(Strict):
    values: dict[str, Any] | None = None
    as_node: str | None = None
    checkpoint: CheckpointRef | None = None
    checkpoint_id: str | None = None


class StatePatch(Strict):
    metadata: dict[str, Any]


class StateAtCheckpoint(Strict):
    checkpoint: CheckpointRef
    subgraphs: bool = False


class ConfigRef(Schema):
    """A checkpoint named as a LangGraph ``RunnableConfig`` (``{"configurable":
    {"checkpoint_id": ...}}``), as the JS SDK sends ``before``."""

    configurable: CheckpointRef


class HistoryQuery(Strict):
    limit: int = Field(10, ge=1, le=1000)
    before: str | ConfigRef | CheckpointRef | None = None
    metadata: dict[str, Any] | None = Field(
        None, validation_alias=AliasChoices("metadata", "filter")
    )
    checkpoint: CheckpointRef | None = None


# -- runs ----------------------------------------------------------------------------


class CommandBody(Strict):
    """LangGraph's ``Command`` (the OpenAPI's ``Command``): ``resume`` answers the
    interrupt(s), ``update`` is applied to the state, ``goto`` names the node(s) to run
    next, or ``Send``s."""

    update: dict[str, Any] | list[Any] | None = None
    resume: Any = None
    # A node name, a ``Send`` (``{"node", "input"}``) or a list of them, mixed as
    # LangGraph takes them: checked by ``durable.engine`` (``command.goto``).
    goto: Any = None


class RunConfig(Strict):
    """The graph's config, as the OpenAPI's ``RunCreateStateful.config`` (values checked
    by ``durable.engine.options``, as are the other run options)."""

    tags: list[str] | None = None
    recursion_limit: int | None = None
    configurable: dict[str, Any] | None = None


# "*" (every node) or node names; checked against the graph by ``durable.engine``.
Breakpoints = str | list[str] | None


class RunCreate(Strict):
    assistant_id: str
    input: Any = None
    command: CommandBody | None = None
    metadata: dict[str, Any] | None = None
    config: RunConfig | None = None
    context: dict[str, Any] | None = None
    webhook: str | None = Field(None, min_length=1, max_length=65536)
    interrupt_before: Breakpoints = None
    interrupt_after: Breakpoints = None
    stream_mode: str | list[str] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    feedback_keys: list[str] | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] = "reject"
    durability: Literal["sync", "async", "exit"] | None = None
    checkpoint_during: bool | None = None
    if_not_exists: Literal["create", "reject"] = "reject"
    after_seconds: float | None = None
    on_disconnect: Literal["cancel", "continue"] = "continue"
    checkpoint_id: str | None = None
    checkpoint: CheckpointRef | None = None

    def modes(self) -> list[str]:
        return stream_modes(self.stream_mode)

    def to_request(self, chosen: RunAssistant, requested_by: str) -> RunRequest:
        """The engine's request for this body, on ``chosen`` (``engine.resolve_assistant``:
        the graph, and the assistant's config and context merged under the body's).
        ``command`` is a ``Resume`` (its ``resume`` a value, or a map of interrupt ids
        that the engine tells apart); ``checkpoint`` or ``checkpoint_id`` the past
        checkpoint it starts from. ``stream_resumable`` and ``feedback_keys`` ask nothing
        of the run: every run's events are recorded (a stream can always be joined
        again), and feedback is not served, so no key has a URL to sign. 422 naming
        ``stream_mode`` for an unknown mode; the rest is checked by the engine."""
        command = self.command
        return RunRequest.on_assistant(
            chosen,
            input=self.input,
            resume=None
            if command is None
            else Resume(command.resume, goto=command.goto, update=command.update),
            checkpoint_id=chosen_checkpoint(self),
            stream_modes=self.modes(),
            interrupt_before=self.interrupt_before,
            interrupt_after=self.interrupt_after,
            durability=self.chosen_durability(),
            webhook=self.webhook,
            metadata=self.metadata,
            multitask_strategy=self.multitask_strategy,
            after_seconds=self.after_seconds,
            requested_by=requested_by,
        )

    def chosen_durability(self) -> str:
        """``durability``; unset, the deprecated ``checkpoint_during`` says it as the Agent
        Server reads it (``langgraph_api/models/run.py``): ``false`` is ``exit``, anything
        else ``async``."""
        if self.durability is not None:
            return self.durability
        return "exit" if self.checkpoint_during is False else "async"


class StatelessRunCreate(RunCreate):
    """A run on a thread of its own (``POST /runs``): what becomes of the thread once
    the run has ended."""

    on_completion: Literal["delete", "keep"] = "delete"


class BatchRunCreate(StatelessRunCreate):
    """One run of ``POST /runs/batch``. The JS SDK's ``runs.createBatch`` sends each
    payload as its caller wrote it, ``assistantId`` included, beside the
    ``assistant_id`` it adds (``client/runs/index.js``): the two must agree."""

    assistantId: str | None = None  # noqa: N815 - the JS SDK's own key

    @model_validator(mode="after")
    def _one_assistant(self):
        if self.assistantId is not None and self.assistantId != self.assistant_id:
            raise PydanticCustomError(
                "assistant_mismatch", "assistantId and assistant_id name different assistants"
            )
        return self


class RunsCancel(Strict):
    status: Literal["pending", "running", "all"] | None = None
    thread_id: ThreadId | None = None
    run_ids: list[str] | None = Field(None, max_length=1000)


def stream_modes(stream_mode: str | list[str] | None) -> list[str]:
    """The stream modes asked for, each once, in order (``[]`` when none is); 422 naming
    ``stream_mode`` for one that is not in ``STREAM_MODES`` (``checks.checked_stream_modes``
    decides)."""
    try:
        return checks.checked_stream_modes(stream_mode)
    except checks.InvalidRequest as exc:
        raise ApiError(422, exc.message, exc.field) from None


class RunsQuery(Strict):
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    status: str | None = None


class JoinStreamQuery(Schema):
    stream_mode: list[str] = []
    stream_subgraphs: bool = False
    cancel_on_disconnect: bool = False


class CancelQuery(Schema):
    wait: bool = False
    action: Literal["interrupt", "rollback"] = "interrupt"


# -- assistants ----------------------------------------------------------------------


AssistantSortBy = Literal["assistant_id", "created_at", "updated_at", "name", "graph_id"]
AssistantField = Literal[
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "created_at",
    "updated_at",
    "metadata",
    "version",
]
AssistantName = Annotated[
    str, Field(min_length=1, max_length=NAME_MAX_LENGTH), AfterValidator(_storable)
]


class AssistantCreate(Strict):
    """An assistant of ``graph_id`` (checked by ``durable.engine.stored_assistants``)."""

    assistant_id: uuid.UUID | None = None
    graph_id: str
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    name: AssistantName | None = None
    description: str | None = None


class AssistantPatch(Strict):
    graph_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    name: AssistantName | None = None
    description: str | None = None


class AssistantCount(Strict):
    graph_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None


class AssistantSearch(AssistantCount):
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    sort_by: AssistantSortBy | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[AssistantField] | None = None


class AssistantVersions(Strict):
    metadata: dict[str, Any] | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


class AssistantLatest(Strict):
    version: int


class AssistantDeleteQuery(Schema):
    delete_threads: bool = False


class GraphQuery(Schema):
    """``xray`` as the Agent Server takes it: ``true``/``false``, or a depth of subgraphs
    (1 to 99); ``depth()`` reads it."""

    xray: str = Field("false", pattern=r"^(true|false|True|False|[1-9][0-9]?)$")

    def depth(self) -> bool | int:
        return int(self.xray) if self.xray.isdigit() else self.xray in ("true", "True")


class SubgraphsQuery(Schema):
    recurse: bool = False


# -- the store -----------------------------------------------------------------------

# LangGraph's rules for a namespace label (``langgraph/store/base``): not empty, no ".".
NamespaceLabel = Annotated[str, Field(min_length=1, pattern=r"^[^.]+$")]
Namespace = list[NamespaceLabel]


class StorePut(Strict):
    namespace: Namespace = Field(min_length=1)
    key: str = Field(min_length=1, max_length=THREAD_ID_MAX_LENGTH)
    value: dict[str, Any]
    index: Literal[False] | list[str] | None = None
    ttl: float | None = Field(None, gt=0, le=MAX_TTL_MINUTES)


class StoreGet(Schema):
    key: str
    namespace: str = ""
    refresh_ttl: bool | None = None


class StoreDelete(Strict):
    namespace: Namespace
    key: str


class StoreSearch(Strict):
    namespace_prefix: Namespace = []
    filter: dict[str, Any] | None = None
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    query: str | None = None
    refresh_ttl: bool | None = None


class StoreNamespaces(Strict):
    prefix: Namespace | None = None
    suffix: Namespace | None = None
    max_depth: int | None = Field(None, ge=1)
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
