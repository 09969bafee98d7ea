"""Graph versions: a stable digest of a compiled graph's structure (its nodes, edges, and
the JSON Schemas of its state, input and output), recorded once per graph and structure
as a ``GraphVersion`` with a short name an operator reads (``v2-1a2b3c4``).

LangGraph resumes an old thread with the graph deployed now, not the code that wrote it.
So every run records the version its worker built (``record_run``), and its checkpoints
carry the digest in their metadata (``METADATA_KEY``, added to the run's config by
``durable.engine.execution``); ``durable.engine.fit`` compares a thread's newest
checkpoint with the version deployed now.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import warnings
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Max
from langgraph.channels.last_value import LastValue
from langgraph.warnings import LangGraphDeprecatedSinceV10
from pydantic import TypeAdapter

from durable.graphs import get_graph
from durable.models import GraphVersion, Run, Thread

logger = logging.getLogger(__name__)

# The key of a checkpoint's metadata that holds the digest of the version that wrote it.
METADATA_KEY = "graph_version"
# How many times a new version is tried when another process records one at once.
RECORD_ATTEMPTS = 5


@dataclass(frozen=True)
class Structure:
    """What a version is made from (``GraphVersion``'s fields of the same names) and
    ``digest``, the SHA-256 hex digest of them as canonical JSON."""

    nodes: list[str]
    edges: list[list[str]]
    state_schema: dict
    combined_keys: list[str]
    input_schema: dict | None
    output_schema: dict | None

    @property
    def digest(self) -> str:
        parts = {
            "nodes": self.nodes,
            "edges": self.edges,
            "state": self.state_schema,
            "combined": self.combined_keys,
            "input": self.input_schema,
            "output": self.output_schema,
        }
        text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()


def _schema_of(type_) -> dict:
    try:
        return TypeAdapter(type_).json_schema()
    except Exception:  # noqa: BLE001  (a type pydantic cannot describe: any value)
        return {}


def _required(state_schema_type, keys: list[str]) -> list[str]:
    """The state keys its schema requires: a TypedDict's required keys, a model's or a
    dataclass's fields without a default."""
    required = getattr(state_schema_type, "__required_keys__", None)
    if required is None:
        required = _schema_of(state_schema_type).get("required", [])
    return sorted(k for k in required if k in keys)


def _jsonschema(read) -> dict | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
            return read()
    except Exception as exc:  # noqa: BLE001  (a schema LangGraph cannot build)
        logger.debug("no schema: %s", exc)
        return None


# Keyed by the registry's compiled graph (one per process and graph): building the
# schemas and the drawing costs milliseconds.
@functools.cache
def structure(compiled) -> Structure:
    """The ``Structure`` of ``compiled`` (a ``CompiledStateGraph``): its own nodes
    (LangGraph's ``__``-prefixed ones left out), the edges of LangGraph's drawing
    (``get_graph()``), one schema per state key (``builder.channels``), and
    ``get_input_jsonschema`` / ``get_output_jsonschema``."""
    builder = compiled.builder
    nodes = sorted(n for n in compiled.nodes if not n.startswith("__"))
    try:
        edges = sorted([e.source, e.target] for e in compiled.get_graph().edges)
    except Exception as exc:  # noqa: BLE001  (a graph LangGraph cannot draw)
        logger.warning("graph %s: no drawing for its version: %s", compiled.name, exc)
        edges = []
    channels = builder.channels
    keys = sorted(channels)
    properties = {key: _schema_of(channels[key].ValueType) for key in keys}
    state = {
        "type": "object",
        "properties": properties,
        "required": _required(builder.state_schema, keys),
    }
    combined = sorted(k for k in keys if not isinstance(channels[k], LastValue))
    return Structure(
        nodes=nodes,
        edges=edges,
        state_schema=state,
        combined_keys=combined,
        input_schema=_jsonschema(compiled.get_input_jsonschema),
        output_schema=_jsonschema(compiled.get_output_jsonschema),
    )


def version_of(graph_name: str, compiled) -> GraphVersion:
    """The ``GraphVersion`` of ``compiled`` (registered as ``graph_name``), recorded the
    first time a process sees it: numbered after the graph's highest, named
    ``v<number>-<first 7 hex of the digest>``. Two processes that record the same new
    version at once end with one row: the one whose INSERT loses reads the other's."""
    shape = structure(compiled)
    digest = shape.digest
    for attempt in range(RECORD_ATTEMPTS):
        found = GraphVersion.objects.filter(graph=graph_name, digest=digest).first()
        if found is not None:
            return found
        highest = GraphVersion.objects.filter(graph=graph_name).aggregate(n=Max("number"))["n"]
        number = (highest or 0) + 1
        try:
            with transaction.atomic():
                return GraphVersion.objects.create(
                    graph=graph_name,
                    digest=digest,
                    number=number,
                    name=f"v{number}-{digest[:7]}",
                    nodes=shape.nodes,
                    edges=shape.edges,
                    state_schema=shape.state_schema,
                    combined_keys=shape.combined_keys,
                    input_schema=shape.input_schema,
                    output_schema=shape.output_schema,
                )
        except IntegrityError:
            if attempt == RECORD_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def deployed_version(graph_name: str) -> GraphVersion:
    """The version of graph ``graph_name`` as this process builds it now (the registry's,
    ``durable.graphs.get_graph``). Raises ``durable.graphs.UnknownGraph``."""
    return version_of(graph_name, get_graph(graph_name))


def record_run(run: Run, compiled) -> GraphVersion:
    """Record on ``run`` and on its thread the version of ``compiled``, the graph the
    worker runs it with; returns it."""
    version = version_of(run.graph, compiled)
    Run.objects.filter(pk=run.pk).update(graph_version=version)
    Thread.objects.filter(pk=run.thread_pk).update(graph_version=version)
    run.graph_version = version
    return version


def find(graph_name: str, digest) -> GraphVersion | None:
    """The recorded version of ``graph_name`` with ``digest``, or ``None``."""
    if not isinstance(digest, str) or not digest:
        return None
    return GraphVersion.objects.filter(graph=graph_name, digest=digest).first()
