"""The graph registry: ``settings.DURABLE_GRAPHS`` maps a name to the dotted path of a
function that returns an uncompiled ``StateGraph``. Each is compiled once per process
with ``DjangoSaver``."""

from __future__ import annotations

import functools
import importlib

from django.utils.module_loading import import_string
from langgraph.graph.state import CompiledStateGraph

from durable import conf
from durable.persistence.checkpoint import DjangoSaver


class UnknownGraph(ValueError):
    """Raised for a graph name that ``conf.DURABLE_GRAPHS`` does not register."""

    def __init__(self, name: str):
        known = ", ".join(sorted(conf.DURABLE_GRAPHS)) or "none"
        super().__init__(f"Unknown graph {name!r}. Registered graphs: {known}.")


def graph_names() -> list[str]:
    return sorted(conf.DURABLE_GRAPHS)


@functools.cache
def get_graph(name: str) -> CompiledStateGraph:
    """The compiled graph registered as ``name``. Raises ``UnknownGraph``."""
    if name not in conf.DURABLE_GRAPHS:
        raise UnknownGraph(name)
    builder = import_string(conf.DURABLE_GRAPHS[name])()
    return builder.compile(checkpointer=DjangoSaver(), name=name)


def example_input(name: str) -> dict:
    """The ``EXAMPLE_INPUT`` of the module that builds graph ``name``, or ``{}``."""
    if name not in conf.DURABLE_GRAPHS:
        raise UnknownGraph(name)
    module = importlib.import_module(conf.DURABLE_GRAPHS[name].rsplit(".", 1)[0])
    return getattr(module, "EXAMPLE_INPUT", {})
