"""``/assistants``: the registered graphs (``durable.graphs``) as the Agent Server's
assistants, one per graph, named by the graph (its ``assistant_id`` and ``graph_id``)."""

from __future__ import annotations

from ninja import Query, Router

from durable import engine
from durable.api import access, answers, shapes
from durable.api.schemas import AssistantCount, AssistantSearch, GraphQuery, SubgraphsQuery
from durable.graphs import graph_names

assistants = Router(tags=["assistants"])


@assistants.post(
    "/search",
    summary="Search assistants (one per registered graph)",
    response=list[answers.Assistant],
)
def search_assistants(request, body: AssistantSearch = None):
    """The registered graphs as assistants, by name; they carry no metadata, so a
    ``metadata`` filter matches none."""
    body = body or AssistantSearch()
    names = _matching(body)
    return [shapes.assistant_json(n) for n in names[body.offset : body.offset + body.limit]]


def _matching(body: AssistantSearch | AssistantCount) -> list[str]:
    return [
        n
        for n in graph_names()
        if (body.graph_id is None or n == body.graph_id)
        and (body.name is None or n == body.name)
        and not body.metadata
    ]


@assistants.post("/count", summary="Count assistants", response=int)
def count_assistants(request, body: AssistantCount = None):
    """How many assistants ``POST /assistants/search`` would find with the same
    ``graph_id``, ``name`` and ``metadata``."""
    return len(_matching(body or AssistantCount()))


@assistants.get("/{assistant_id}", summary="Get an assistant", response=answers.Assistant)
def get_assistant(request, assistant_id: str):
    return shapes.assistant_json(access.graph(assistant_id))


@assistants.get(
    "/{assistant_id}/graph",
    summary="Get an assistant's graph drawing",
    response=answers.GraphDrawing,
)
def get_assistant_graph(request, assistant_id: str, query: Query[GraphQuery]):
    """The graph's nodes and edges as LangGraph draws them (``{"nodes": [{"id", "type",
    "data"}], "edges": [{"source", "target", "conditional"}]}``); with ``xray``, its
    subgraphs' nodes too (a number: that many levels)."""
    return engine.graph_json(access.graph(assistant_id), query.depth())


@assistants.get(
    "/{assistant_id}/schemas", summary="Get an assistant's schemas", response=answers.GraphSchema
)
def get_assistant_schemas(request, assistant_id: str):
    """``{"graph_id", "input_schema", "output_schema", "state_schema",
    "config_schema", "context_schema"}``: JSON schemas, ``null`` where the graph has
    none LangGraph can describe."""
    return engine.graph_schemas(access.graph(assistant_id))


@assistants.get(
    "/{assistant_id}/subgraphs", summary="Get an assistant's subgraphs", response=answers.Subgraphs
)
def get_assistant_subgraphs(request, assistant_id: str, query: Query[SubgraphsQuery]):
    """``{namespace: schemas}`` for each subgraph (schemas as ``/schemas`` gives them);
    with ``recurse``, their subgraphs too."""
    return engine.subgraph_schemas(access.graph(assistant_id), None, query.recurse)


@assistants.get(
    "/{assistant_id}/subgraphs/{namespace}",
    summary="Get an assistant's subgraphs at a namespace",
    response=answers.Subgraphs,
)
def get_assistant_subgraphs_at(
    request, assistant_id: str, namespace: str, query: Query[SubgraphsQuery]
):
    """As ``/subgraphs``, for the subgraphs at ``namespace`` only."""
    return engine.subgraph_schemas(access.graph(assistant_id), namespace, query.recurse)
