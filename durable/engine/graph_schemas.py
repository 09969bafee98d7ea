"""What a registered graph is, as the Agent Server's assistants describe it: its drawing
(``graph_json``), the JSON schemas of its input, output, state, config and context
(``graph_schemas``; the input's alone, kept: ``input_schema``) and those of its
subgraphs (``subgraph_schemas``). Nothing here reads or writes a thread; a graph name
that is not registered raises ``InvalidRequest("assistant_id")``."""

from __future__ import annotations

import functools
import logging
import warnings
from typing import Any

from langgraph.warnings import LangGraphDeprecatedSinceV10
from pydantic import TypeAdapter

from durable.engine.checks import InvalidRequest
from durable.graphs import UnknownGraph, get_graph

logger = logging.getLogger(__name__)


def _compiled(name: str):
    try:
        return get_graph(name)
    except UnknownGraph as exc:
        raise InvalidRequest("assistant_id", str(exc)) from None


def graph_json(name: str, xray: bool | int = False) -> dict:
    """LangGraph's drawing of graph ``name`` (``get_graph(xray=...).to_json()``):
    ``{"nodes": [{"id", "type", "data"}], "edges": [{"source", "target",
    "conditional"}]}``; ``xray`` draws subgraphs' nodes too (an int: that many levels
    deep). A node's ``data`` loses its ``id``, the Python path of its runnable, as the
    Agent Server's does (``langgraph_api/api/assistants.py``)."""
    drawn = _compiled(name).get_graph(xray=xray).to_json()
    for node in drawn.get("nodes", []):
        if isinstance(node.get("data"), dict):
            node["data"].pop("id", None)
    return drawn


def state_properties(compiled) -> dict:
    """``{key: JSON schema}``, one per state key of ``compiled``, typed by what its
    channel takes (``{}``, any value, where the type has no JSON schema)."""
    properties = {}
    for key in compiled.stream_channels_list:
        try:
            properties[key] = TypeAdapter(compiled.channels[key].UpdateType).json_schema()
        except Exception:  # noqa: BLE001  (a type pydantic cannot describe is any value)
            properties[key] = {}
    return properties


def _state_schema(compiled) -> dict:
    """A JSON schema with one property per state key (``state_properties``)."""
    properties = state_properties(compiled)
    return {"title": compiled.get_name("State"), "type": "object", "properties": properties}


def _schemas(compiled, only: tuple[str, ...] | None = None) -> dict:
    """The five schemas of a compiled graph (those named in ``only``, when given); one
    LangGraph cannot give is ``None``, as the Agent Server answers it."""
    readers = {
        "input_schema": compiled.get_input_jsonschema,
        "output_schema": compiled.get_output_jsonschema,
        "state_schema": lambda: _state_schema(compiled),
        "config_schema": compiled.get_config_jsonschema,
        "context_schema": compiled.get_context_jsonschema,
    }
    found: dict[str, Any] = {}
    for key, read in readers.items():
        if only is not None and key not in only:
            continue
        try:
            with warnings.catch_warnings():
                # The config schema is deprecated for the context schema in LangGraph 1,
                # but the Agent Server's answer still carries it.
                warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
                found[key] = read()
        except Exception as exc:  # noqa: BLE001  (a schema LangGraph cannot build)
            logger.warning("No %s for graph %s: %s", key, compiled.name, exc)
            found[key] = None
    return found


def graph_schemas(name: str) -> dict:
    """``{"graph_id", "input_schema", "output_schema", "state_schema",
    "config_schema", "context_schema"}`` of graph ``name``."""
    return {"graph_id": name, **_schemas(_compiled(name))}


@functools.cache
def input_schema(name: str) -> dict | None:
    """The input JSON schema of graph ``name`` (``None`` when LangGraph cannot build
    one), as ``graph_schemas`` gives it; kept per process, as the compiled graph is, so
    it is shared: read it, never change it."""
    return _schemas(_compiled(name), only=("input_schema",))["input_schema"]


def subgraph_schemas(name: str, namespace: str | None = None, recurse: bool = False) -> dict:
    """``{namespace: schemas}`` for the subgraphs of graph ``name`` (LangGraph's
    ``get_subgraphs``): those at ``namespace`` only when given, and their own subgraphs
    too with ``recurse``."""
    found = _compiled(name).get_subgraphs(namespace=namespace, recurse=recurse)
    return {ns: _schemas(subgraph) for ns, subgraph in found}
