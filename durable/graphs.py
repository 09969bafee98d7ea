"""The graph registry: ``settings.DURABLE_GRAPHS`` maps a name to the dotted path of a
function that returns an uncompiled ``StateGraph``. Each is compiled once per process
with ``DjangoSaver``; a thread's runs and state reads use that graph with the thread's
tenant's part of the store (``thread_graph``).

The project's own fault-drill graph (``DRILL_GRAPH``, ``durable.drills``) is always
registered besides them, but it is not one of ``graph_names()``: tenants, the API and
the console do not see it or start it; only the drills do."""

from __future__ import annotations

import functools
import importlib

from django.utils.module_loading import import_string
from langgraph.graph.state import CompiledStateGraph

from durable import conf
from durable.persistence.checkpoint import DjangoSaver
from durable.persistence.store import tenant_store


class UnknownGraph(ValueError):
    """Raised for a graph name that ``conf.DURABLE_GRAPHS`` does not register."""

    def __init__(self, name: str):
        known = ", ".join(sorted(conf.DURABLE_GRAPHS)) or "none"
        super().__init__(f"Unknown graph {name!r}. Registered graphs: {known}.")


DRILL_GRAPH = "durable-drill"
_BUILT_IN = {DRILL_GRAPH: "durable.drills.graph.build_graph"}


def _path(name: str) -> str:
    if name in conf.DURABLE_GRAPHS:
        return conf.DURABLE_GRAPHS[name]
    if name in _BUILT_IN:
        return _BUILT_IN[name]
    raise UnknownGraph(name)


def graph_names() -> list[str]:
    return sorted(conf.DURABLE_GRAPHS)


@functools.cache
def get_graph(name: str) -> CompiledStateGraph:
    """The compiled graph registered as ``name``. Raises ``UnknownGraph``."""
    builder = import_string(_path(name))()
    return builder.compile(checkpointer=DjangoSaver(), name=name)


def thread_graph(thread) -> CompiledStateGraph:
    """The compiled graph of ``thread`` (a ``durable.models.Thread`` bound to a graph),
    with its tenant's part of the store (``tenant_store``) as the store its nodes reach
    through ``runtime.store`` or ``get_store()``: the items the API's ``/store`` routes
    and the console's store browser show that tenant, and no other tenant's.

    The compiled graph is shared by the process, the store is per tenant: this is a
    copy (``Pregel.copy``, tens of microseconds) with ``store`` replaced, which
    ``stream``, ``get_state`` and ``update_state`` put in each task's ``Runtime``.
    Raises ``UnknownGraph``."""
    return get_graph(thread.graph).copy(update={"store": tenant_store(thread.tenant)})


def example_input(name: str) -> dict:
    """The ``EXAMPLE_INPUT`` of the module that builds graph ``name``, or ``{}``."""
    module = importlib.import_module(_path(name).rsplit(".", 1)[0])
    return getattr(module, "EXAMPLE_INPUT", {})
