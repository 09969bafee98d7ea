"""``/assistants``: the registered graphs (``durable.graphs``) as the Agent Server's
assistants, one per graph, named by the graph (its ``assistant_id`` and ``graph_id``)."""

from __future__ import annotations

from ninja import Router

from durable.api import access, answers, shapes
from durable.api.schemas import AssistantSearch
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
    names = [
        n
        for n in graph_names()
        if (body.graph_id is None or n == body.graph_id)
        and (body.name is None or n == body.name)
        and not body.metadata
    ]
    return [shapes.assistant_json(n) for n in names[body.offset : body.offset + body.limit]]


@assistants.get("/{assistant_id}", summary="Get an assistant", response=answers.Assistant)
def get_assistant(request, assistant_id: str):
    return shapes.assistant_json(access.graph(assistant_id))
