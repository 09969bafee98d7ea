"""Checking a request before anything is written.

Each check raises ``InvalidRequest(field, message)``: ``field`` names the input at fault,
``message`` says in words what is wrong and what would be right.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.validators import validator_for
from langgraph.channels import LastValue
from langgraph.constants import END
from langgraph.pregel._utils import is_xxh3_128_hexdigest
from langgraph.types import Interrupt
from pydantic import PydanticUserError

from durable.graphs import UnknownGraph, get_graph
from durable.models import Checkpoint, Run, Thread
from durable.persistence.checkpoint import check_thread_id
from durable.persistence.text import UnstorableText, check_text

if TYPE_CHECKING:
    from durable.engine.requests import RunRequest

DURABILITIES = tuple(Run.Durability.values)
MULTITASK_STRATEGIES = tuple(Run.MultitaskStrategy.values)
# update_state's own meanings of as_node (langgraph/pregel/main.py, bulk_update_state):
# "__copy__" copies the checkpoint as it is, "__input__" applies the values as graph
# input, and END ("__end__") with no values clears the next tasks.
COPY, INPUT = "__copy__", "__input__"
CHECKPOINT_ID_MAX_LENGTH = 64
REQUESTED_BY_MAX_LENGTH = 150
MAX_JSON_DEPTH = 100
# An input refused by the graph's input schema: how many of its problems are named, and
# how long each may be (a jsonschema message quotes the value at fault).
MAX_SCHEMA_PROBLEMS = 3
MAX_PROBLEM_LENGTH = 200
# The stream modes a run can be asked to record, as the Agent Server names them
# (``langgraph_api/schema.py``, ``StreamMode``): LangGraph's own (``langgraph/types.py``),
# ``messages-tuple`` (LangGraph's ``messages`` chunks as they come) and ``events``
# (``astream_events`` v2 records).
STREAM_MODES = (
    "values",
    "updates",
    "custom",
    "tasks",
    "messages",
    "messages-tuple",
    "events",
    "debug",
    "checkpoints",
)


class InvalidRequest(ValueError):
    """A request that was refused before anything changed. ``field`` names the input at
    fault: ``graph``, ``thread``, ``name``, ``input``, ``resume``, ``answers``,
    ``checkpoint_id``, ``values``, ``as_node``, ``metadata``, ``durability``,
    ``multitask_strategy``, ``requested_by``, ``stream_mode``, ``run`` or ``checkpoint_ns``;
    for a run's options and commands (``durable.engine.options``) ``config``, ``context``,
    ``interrupt_before``, ``interrupt_after``, ``after_seconds``, ``webhook``, ``goto`` or
    ``update``; ``graph_version`` for a run from a checkpoint that no longer fits the
    deployed graph (``durable.engine.fit``); or a path below one of them
    (``input.employee``) for text the database cannot hold; ``message`` says what is
    wrong in words."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


def compiled_graph(graph: str):
    try:
        return get_graph(graph)
    except UnknownGraph as exc:
        raise InvalidRequest("graph", str(exc)) from None


def checked_name(name: Any) -> str:
    """A tenant's name for a thread, checked as the checkpointer checks its thread ids
    (a string of at most 255 characters) and as text the database can hold. Raises
    ``InvalidRequest("name")``."""
    try:
        name = check_thread_id(name)
    except ValueError as exc:
        raise InvalidRequest("name", str(exc)) from None
    check_storable(name, "name")
    return name


def check_input(compiled, input: Any) -> None:
    """``input`` as a run of ``compiled`` takes it: a JSON object of the graph's input
    keys (any of them: LangGraph takes a partial input), each of the type the input
    schema gives it (``check_input_types``). Raises ``InvalidRequest("input")``."""
    if not isinstance(input, dict):
        raise InvalidRequest("input", "input must be a JSON object.")
    check_storable(input, "input")
    # The input schema's keys (the state's, unless the graph declares ``input_schema``),
    # read from the builder rather than a JSON schema, which not every type can produce.
    allowed = set(compiled.builder.schemas[compiled.builder.input_schema])
    _check_keys(input, allowed, "input", "Unknown input key(s)", "The graph takes")
    check_input_types(compiled, input, "input")


def check_input_types(compiled, values: dict, field: str) -> None:
    """Each key of ``values`` against its property in the graph's input JSON schema
    (LangGraph's ``get_input_jsonschema``). Only keys whose channel keeps what it is given
    (``LastValue``) are checked: a key with a reducer takes what its reducer takes
    (``add_messages`` a message, a string, a tuple, a list of them), not the type of the
    value it keeps. No key is required, and a graph whose types have no JSON schema is
    not checked. Raises ``InvalidRequest(field)`` naming each key at fault."""
    validator = _input_validator(compiled, frozenset(values))
    if validator is None:
        return
    errors = sorted(validator.iter_errors(values), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        problems = "; ".join(
            f"{field}.{_path(error)}: {_clip(error.message)}"
            for error in errors[:MAX_SCHEMA_PROBLEMS]
        )
        raise InvalidRequest(field, f"Does not match the graph's input schema: {problems}.")


# Cached: LangGraph builds the input schema anew on each call (~2 ms, the most of a run
# request's checks), and checking a schema against its metaschema costs as much again.
# Keyed by the registry's compiled graph; bounded, as a copy of one would be a new key.
@functools.lru_cache(maxsize=256)
def _input_validator(compiled, keys: frozenset[str]):
    """A validator of the ``keys`` of the graph's input JSON schema whose channel is a
    ``LastValue``, or ``None`` when there is nothing to check."""
    try:
        schema = compiled.get_input_jsonschema()
    except (PydanticUserError, TypeError):
        return None
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return None
    channels = compiled.builder.channels
    kept = {
        key: prop
        for key, prop in properties.items()
        if key in keys and isinstance(channels.get(key), LastValue)
    }
    return _validator({"type": "object", "properties": kept, "$defs": schema.get("$defs", {})})


def _path(error: ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path)


def _clip(text: str) -> str:
    if len(text) <= MAX_PROBLEM_LENGTH:
        return text
    return text[: MAX_PROBLEM_LENGTH - 1] + "…"


def _check_keys(values: dict, allowed: set, field: str, what: str, takes: str) -> None:
    if unknown := sorted(set(values) - allowed):
        raise InvalidRequest(
            field, f"{what}: {', '.join(unknown)}. {takes}: {', '.join(sorted(allowed))}."
        )


def check_update(compiled, values: Any, as_node: Any) -> None:
    """``values`` and ``as_node`` as ``update_state`` takes them (``bulk_update_state``
    in ``langgraph/pregel/main.py``)."""
    if as_node is not None and not isinstance(as_node, str):
        raise InvalidRequest("as_node", "as_node must be a node name.")
    if as_node in (COPY, END):
        if values is not None:
            does = "copies the checkpoint as it is" if as_node == COPY else "clears the next tasks"
            raise InvalidRequest("values", f"as_node {as_node!r} takes no values: it {does}.")
        return
    if as_node is not None and as_node != INPUT and as_node not in compiled.nodes:
        nodes = ", ".join(sorted(compiled.nodes))
        raise InvalidRequest(
            "as_node",
            f"Unknown node {as_node!r}. The graph's nodes: {nodes}; or {COPY}, {INPUT}, {END}.",
        )
    if values is None:
        if as_node == INPUT:
            raise InvalidRequest("values", f"as_node {INPUT!r} needs input values.")
        return
    if not isinstance(values, dict):
        raise InvalidRequest("values", "values must be a JSON object of state keys.")
    check_storable(values, "values")
    if as_node == INPUT:
        keys = set(compiled.builder.schemas[compiled.builder.input_schema])
        _check_keys(values, keys, "values", "Unknown input key(s)", "The graph takes")
        check_input_types(compiled, values, "values")
    else:
        keys = set(compiled.builder.channels)
        _check_keys(values, keys, "values", "Unknown state key(s)", "The state has")


def checkpoint_config(thread: Thread, checkpoint_id: Any, checkpoint_ns: str = "") -> dict:
    """The config of the thread's checkpoint ``checkpoint_id`` in ``checkpoint_ns`` (by
    default the root namespace, the graph's own): one index lookup. Raises
    ``InvalidRequest("checkpoint_id")``."""
    if not isinstance(checkpoint_id, str) or not checkpoint_id:
        raise InvalidRequest("checkpoint_id", "checkpoint_id must be a checkpoint id.")
    check_storable(checkpoint_id, "checkpoint_id")
    if len(checkpoint_id) > CHECKPOINT_ID_MAX_LENGTH or not (
        Checkpoint.objects.filter(
            thread_id=thread.thread_id, checkpoint_ns=checkpoint_ns, checkpoint_id=checkpoint_id
        ).exists()
    ):
        where = f" in namespace {checkpoint_ns[:200]!r}" if checkpoint_ns else ""
        raise InvalidRequest(
            "checkpoint_id",
            f"Thread {thread.name!r} has no checkpoint {checkpoint_id[:80]!r}{where}.",
        )
    return {
        "configurable": {
            "thread_id": thread.thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def resume_by_id(pending: list[Interrupt], value: Any, answers: Any) -> tuple[Any, Any]:
    """``(value, answers)``, with a ``value`` that is LangGraph's resume map (a non-empty
    JSON object whose keys are all ids of ``pending`` interrupts, as in
    ``Command(resume={interrupt_id: value})``) taken as ``answers``.

    Raises ``InvalidRequest("resume")`` for a ``value`` whose keys all have the form of
    interrupt ids when some are not pending: LangGraph would take it as a resume map
    too (``langgraph/pregel/_loop.py``), answer nothing and ask again."""
    if answers is None and isinstance(value, dict) and value:
        if set(value) <= {i.id for i in pending}:
            return None, value
        if all(isinstance(key, str) and is_xxh3_128_hexdigest(key) for key in value):
            unknown = sorted(set(value) - {i.id for i in pending})
            raise InvalidRequest("resume", f"Not pending here: {', '.join(unknown)}.")
    return value, answers


def resume_command(pending: list[Interrupt], value: Any, answers: Any) -> dict:
    """``{"resume": ...}`` answering ``pending``: ``value`` for a lone interrupt, or
    ``answers`` ``{interrupt_id: value}``. Each answer to an interrupt whose value carries
    a JSON Schema ``response_schema`` must match it. Raises ``InvalidRequest``."""
    by_id = {i.id: i for i in pending}
    if answers is not None:
        if not isinstance(answers, dict) or not answers:
            raise InvalidRequest("answers", "answers must map interrupt ids to values.")
        if unknown := sorted(set(answers) - set(by_id)):
            raise InvalidRequest("answers", f"Not pending here: {', '.join(unknown)}.")
        check_storable(answers, "answers")
        for interrupt_id, answer in answers.items():
            check_response_schema(by_id[interrupt_id], answer, "answers")
        return {"resume": answers}
    if len(pending) > 1:
        raise InvalidRequest(
            "resume",
            f"{len(pending)} interrupts are pending; answer each by its interrupt id.",
        )
    check_storable(value, "resume")
    check_response_schema(pending[0], value, "resume")
    return {"resume": value}


def check_response_schema(interrupt: Interrupt, answer: Any, field: str) -> None:
    """Refuse an ``answer`` that does not match the ``response_schema`` (JSON Schema) the
    interrupt's value carries, if any; a broken schema checks nothing."""
    schema = response_schema(interrupt.value)
    if schema is not None and (error := schema_error(answer, schema)):
        where = "/".join(str(p) for p in error.absolute_path) or "the answer"
        raise InvalidRequest(
            field,
            f"The answer to interrupt {interrupt.id} does not match its response_schema"
            f" at {where}: {error.message}.",
        )


def response_schema(value: Any) -> dict | None:
    """The JSON Schema an interrupt's payload ``value`` asks its answer to match (its
    ``response_schema`` key), or ``None`` when it has none."""
    schema = value.get("response_schema") if isinstance(value, dict) else None
    return schema if isinstance(schema, dict) else None


def schema_error(value: Any, schema: dict) -> ValidationError | None:
    """The first way ``value`` breaks the JSON Schema ``schema`` (a jsonschema
    ``ValidationError``: ``.message``, and ``.absolute_path`` the keys and indexes down to
    the part at fault), or ``None``. A broken schema checks nothing: it is the graph's
    mistake, and refusing every answer would leave the interrupt unanswerable."""
    validator = _validator(schema)
    return None if validator is None else next(iter(validator.iter_errors(value)), None)


def _validator(schema: dict):
    """A jsonschema validator of ``schema`` (its own draft), or ``None`` for a broken
    schema."""
    try:
        validator = validator_for(schema)(schema)
        validator.check_schema(schema)
    except SchemaError:
        return None
    return validator


def check_request(request: RunRequest, thread: Thread | None) -> None:
    """The rules of a run request that hold whatever surface asked: a thread runs its own
    graph (``graph``: "Thread 'x' runs graph 'a', not 'b'."), input or a command, not
    both (``input``), and what a past checkpoint accepts of a command: only a resume
    (``goto``, ``update``), given again on an idle thread (``multitask_strategy``). Input
    at a past checkpoint is taken, as LangGraph's ``stream(input, config)`` takes it with
    the config of a checkpoint: applied there, on a new branch. The options' own checks
    follow in ``run_options`` and ``options.graph_options``."""
    graph = request.graph
    if thread is not None and thread.graph and graph and thread.graph != graph:
        raise InvalidRequest(
            "graph", f"Thread {thread.name!r} runs graph {thread.graph!r}, not {graph!r}."
        )
    resume = request.resume
    if resume is not None and request.input not in (None, {}):
        # {} beside a command is Agent Chat UI's: no input.
        raise InvalidRequest("input", "Send either input or command, not both.")
    if request.checkpoint_id is None:
        return
    if resume is None:
        return
    if resume.goto is not None or resume.update is not None:
        raise InvalidRequest(
            "goto" if resume.goto is not None else "update",
            "A command from a past checkpoint takes only resume; fork with update_state.",
        )
    if request.multitask_strategy != Run.MultitaskStrategy.REJECT:
        raise InvalidRequest(
            "multitask_strategy",
            "An answer given again forks the thread, which needs it idle: "
            "multitask_strategy must be reject.",
        )


def run_options(request: RunRequest) -> dict:
    """The Run fields of the request's options that need no graph: ``metadata``,
    ``durability``, ``multitask_strategy``, ``requested_by``, ``stream_modes``. Raises
    ``InvalidRequest`` naming the field."""
    durability, multitask_strategy = request.durability, request.multitask_strategy
    if durability not in DURABILITIES:
        raise InvalidRequest(
            "durability",
            f"durability must be one of {', '.join(DURABILITIES)}, not {durability!r}.",
        )
    if multitask_strategy not in MULTITASK_STRATEGIES:
        raise InvalidRequest(
            "multitask_strategy",
            f"multitask_strategy must be one of {', '.join(MULTITASK_STRATEGIES)}, "
            f"not {multitask_strategy!r}.",
        )
    return {
        "metadata": checked_metadata(request.metadata),
        "durability": durability,
        "multitask_strategy": multitask_strategy,
        "requested_by": actor(request.requested_by),
        "stream_modes": checked_stream_modes(request.stream_modes),
    }


def langgraph_mode(mode: str) -> str:
    """The LangGraph stream mode (and ``RunEvent`` name) a recorded mode comes from:
    ``messages-tuple`` is LangGraph's ``messages``, which the API shapes either way."""
    return "messages" if mode == "messages-tuple" else mode


def checked_stream_modes(stream_modes: Any) -> list[str]:
    """The stream modes a run records beside its own (``STREAM_MODES``), each once, in
    the order given (one mode may come as a string, as the API takes it; empty ones are
    dropped); none (``None`` or ``[]``) records only what the engine needs. Raises
    ``InvalidRequest("stream_mode")``."""
    if stream_modes is None:
        return []
    if isinstance(stream_modes, str):
        stream_modes = [stream_modes]
    if not isinstance(stream_modes, (list, tuple)):
        raise InvalidRequest("stream_mode", "stream_mode must be a list of stream modes.")
    modes: list = []
    for mode in stream_modes:
        if mode != "" and mode not in modes:
            modes.append(mode)
    if unknown := [m for m in modes if m not in STREAM_MODES]:
        raise InvalidRequest(
            "stream_mode",
            f"Unknown stream mode(s) {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(STREAM_MODES)}.",
        )
    return modes


def checked_metadata(metadata: Any) -> dict:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidRequest("metadata", "metadata must be a JSON object.")
    check_storable(metadata, "metadata")
    return metadata


def actor(requested_by: Any) -> str:
    """Who asked, as text: a user's username, or the string given."""
    if requested_by is None:
        return ""
    if hasattr(requested_by, "get_username"):
        return requested_by.get_username() if requested_by.is_authenticated else ""
    if not isinstance(requested_by, str):
        raise InvalidRequest("requested_by", "requested_by must be a user or a string.")
    if len(requested_by) > REQUESTED_BY_MAX_LENGTH:
        raise InvalidRequest(
            "requested_by", f"requested_by is over {REQUESTED_BY_MAX_LENGTH} characters."
        )
    return requested_by


def check_storable(value: Any, field: str) -> None:
    """Refuse a value that cannot be kept as JSON on a Run in every supported database:
    text no database holds (``durable.persistence.text``: the error names its path,
    ``input.employee``), NaN and infinities (not JSON), non-JSON types, and nesting
    deeper than ``MAX_JSON_DEPTH`` (SQLite's JSON functions stop at 1,000). Raises
    ``InvalidRequest(field)``."""
    try:
        check_text(value, field)
    except UnstorableText as exc:
        raise InvalidRequest(exc.field, str(exc)) from None
    if problem := _json_problem(value, 0):
        raise InvalidRequest(field, f"{field} {problem}.")


def _json_problem(value: Any, depth: int) -> str | None:
    if depth > MAX_JSON_DEPTH:
        return f"is nested more than {MAX_JSON_DEPTH} levels deep"
    if value is None or isinstance(value, (bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "holds NaN or Infinity, which JSON cannot store"
    if isinstance(value, str):
        return None
    if isinstance(value, dict):
        children = [*value.keys(), *value.values()]
    elif isinstance(value, list):
        children = value
    else:
        return f"holds a {type(value).__name__}, which is not JSON"
    return next(filter(None, (_json_problem(v, depth + 1) for v in children)), None)
