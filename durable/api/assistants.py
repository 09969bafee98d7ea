"""``/assistants``: the tenant's assistants, stored configurations of a registered graph
in versions (``durable.engine.stored_assistants``), created, read, searched, counted,
changed (each change a new version), set back to an earlier version and deleted; and
every registered graph (``durable.graphs``) as its own default assistant, named by the
graph (its ``assistant_id`` and ``graph_id``), which reads but does not change. For
each, its graph's drawing, schemas and subgraphs."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpResponse
from ninja import Query, Router

from durable import engine
from durable.api import access, answers, shapes
from durable.api.authentication import caller, may_change
from durable.api.errors import ApiError, json_response
from durable.api.schemas import (
    AssistantCount,
    AssistantCreate,
    AssistantDeleteQuery,
    AssistantLatest,
    AssistantPatch,
    AssistantSearch,
    AssistantVersions,
    GraphQuery,
    SubgraphsQuery,
)
from durable.graphs import graph_names
from durable.models import Assistant
from durable.persistence.metadata import MetadataKeyEquals

assistants = Router(tags=["assistants"])


@assistants.post("", summary="Create an assistant", response=answers.Assistant)
def create_assistant(request, body: AssistantCreate):
    """A new assistant of registered graph ``graph_id``, version 1, with ``config``
    (``configurable``, ``recursion_limit``, ``tags``; checked against the graph's config
    schema), ``context`` (checked against its context schema), ``metadata``, ``name``
    (default ``Untitled``) and ``description``; ``assistant_id`` a UUID (default: a new
    one). An ``assistant_id`` the tenant already has is a 409 with ``if_exists:
    raise`` (the default), and answers that assistant, unchanged, with ``do_nothing``.
    422 naming the field for an unknown graph or a config the graph refuses."""
    tenant = request.auth.tenant
    if body.assistant_id is not None:
        existing = engine.find_assistant(tenant, body.assistant_id)
        if existing is not None:
            if body.if_exists == "raise":
                raise ApiError(
                    409, f"Assistant {str(body.assistant_id)!r} already exists.", "assistant_id"
                )
            return shapes.assistant_json(existing)
    may_change(request)
    made = engine.create_assistant(
        tenant,
        body.graph_id,
        config=body.config,
        context=body.context,
        metadata=body.metadata,
        name=body.name,
        description=body.description,
        assistant_id=body.assistant_id,
        requested_by=caller(request),
    )
    return shapes.assistant_json(made)


def _stored(request, body: AssistantCount) -> QuerySet[Assistant]:
    found = Assistant.objects.of_tenants(request.auth.tenant)
    if body.graph_id is not None:
        found = found.filter(graph_id=body.graph_id)
    if body.name is not None:
        found = found.filter(name__icontains=body.name)
    for key, value in (body.metadata or {}).items():
        found = found.filter(MetadataKeyEquals(key, value))
    return found


def _defaults(body: AssistantCount) -> list[str]:
    """The registered graphs whose default assistants match: they carry no metadata,
    so a ``metadata`` filter matches none."""
    return [
        n
        for n in graph_names()
        if (body.graph_id is None or n == body.graph_id)
        and (body.name is None or body.name.lower() in n.lower())
        and not body.metadata
    ]


@assistants.post(
    "/search",
    summary="Search assistants",
    response=list[answers.Assistant | answers.AssistantFields],
)
def search_assistants(request, body: AssistantSearch = None):
    """The assistants with ``graph_id``, whose name holds ``name`` (any case), whose
    metadata has every key/value of ``metadata``: first the registered graphs' default
    assistants (in the registry's order, or by name when sorted by ``name``,
    ``graph_id`` or ``assistant_id``), then the stored ones, by ``sort_by`` (default
    ``created_at``) in ``sort_order`` (default ``desc``); ``limit`` from ``offset``.
    With ``select``, each answer holds only those fields."""
    body = body or AssistantSearch()
    order = body.sort_order or "desc"
    defaults = _defaults(body)
    if body.sort_by in ("name", "graph_id", "assistant_id"):
        defaults.sort(reverse=order == "desc")
    end = body.offset + body.limit
    page: list = defaults[body.offset : end]
    if len(page) < body.limit:
        sign = "-" if order == "desc" else ""
        stored = _stored(request, body).order_by(
            f"{sign}{body.sort_by or 'created_at'}", f"{sign}pk"
        )
        start = max(0, body.offset - len(defaults))
        page += list(stored[start : start + body.limit - len(page)])
    shaped = [shapes.assistant_json(found) for found in page]
    if body.select is None:
        return shaped
    return json_response(request, [{k: a[k] for k in body.select} for a in shaped])


@assistants.post("/count", summary="Count assistants", response=int)
def count_assistants(request, body: AssistantCount = None):
    """How many assistants ``POST /assistants/search`` would find with the same
    ``graph_id``, ``name`` and ``metadata``, all pages together."""
    body = body or AssistantCount()
    return len(_defaults(body)) + _stored(request, body).count()


@assistants.get("/{assistant_id}", summary="Get an assistant", response=answers.Assistant)
def get_assistant(request, assistant_id: str):
    """The assistant at its latest version."""
    return shapes.assistant_json(access.assistant(request, assistant_id))


def _changing(request, assistant_id: str):
    """The assistant a request would change: 404 for none, then 403 for a viewer."""
    found = access.assistant(request, assistant_id)
    may_change(request)
    return found


@assistants.patch("/{assistant_id}", summary="Update an assistant", response=answers.Assistant)
def patch_assistant(request, assistant_id: str, body: AssistantPatch):
    """A new version of the assistant, made its latest: each field sent replaces the
    latest version's (``metadata`` is merged into it, key by key), the others stay. 422
    naming the field for an unknown graph or a config the graph refuses; 409 for a
    registered graph's default assistant, which cannot change."""
    found = access.changeable(_changing(request, assistant_id))
    changed = engine.update_assistant(
        found,
        graph_id=body.graph_id,
        config=body.config,
        context=body.context,
        metadata=body.metadata,
        name=body.name,
        description=body.description,
        requested_by=caller(request),
    )
    return shapes.assistant_json(changed)


@assistants.delete("/{assistant_id}", summary="Delete an assistant", response={204: None})
def delete_assistant(request, assistant_id: str, query: Query[AssistantDeleteQuery]):
    """Deletes the assistant and its versions; the runs made on it stay, unless
    ``delete_threads``: then the threads that ran on it are deleted too (409, and nothing
    deleted, while one of them has a running run). 409 for a registered graph's default
    assistant, which cannot change."""
    found = access.changeable(_changing(request, assistant_id))
    engine.delete_assistant(
        found, delete_threads=query.delete_threads, requested_by=caller(request)
    )
    return HttpResponse(status=204)


@assistants.post(
    "/{assistant_id}/versions",
    summary="List an assistant's versions, newest first",
    response=list[answers.AssistantVersion],
)
def list_versions(request, assistant_id: str, body: AssistantVersions = None):
    """The assistant's versions whose metadata has every key/value of ``metadata``,
    newest first, ``limit`` from ``offset``. A registered graph's default assistant has
    one, version 1."""
    body = body or AssistantVersions()
    found = access.assistant(request, assistant_id)
    if isinstance(found, str):
        default = [] if body.metadata else [shapes.version_json(found)]
        return default[body.offset : body.offset + body.limit]
    versions = found.versions.select_related("assistant").order_by("-version")
    for key, value in (body.metadata or {}).items():
        versions = versions.filter(MetadataKeyEquals(key, value))
    return [shapes.version_json(v) for v in versions[body.offset : body.offset + body.limit]]


@assistants.post(
    "/{assistant_id}/latest",
    summary="Set an assistant's latest version",
    response=answers.Assistant,
)
def set_latest(request, assistant_id: str, body: AssistantLatest):
    """Makes ``version`` the assistant's latest: it takes that version's fields, and runs
    on it use them from now on. 422 naming ``version`` for one it does not have."""
    found = access.changeable(_changing(request, assistant_id))
    changed = engine.set_latest_version(found, body.version, requested_by=caller(request))
    return shapes.assistant_json(changed)


@assistants.get(
    "/{assistant_id}/graph",
    summary="Get an assistant's graph drawing",
    response=answers.GraphDrawing,
)
def get_assistant_graph(request, assistant_id: str, query: Query[GraphQuery]):
    """The graph's nodes and edges as LangGraph draws them (``{"nodes": [{"id", "type",
    "data"}], "edges": [{"source", "target", "conditional"}]}``); with ``xray``, its
    subgraphs' nodes too (a number: that many levels)."""
    return engine.graph_json(access.graph(request, assistant_id), query.depth())


@assistants.get(
    "/{assistant_id}/schemas", summary="Get an assistant's schemas", response=answers.GraphSchema
)
def get_assistant_schemas(request, assistant_id: str):
    """``{"graph_id", "input_schema", "output_schema", "state_schema",
    "config_schema", "context_schema"}``: JSON schemas of the assistant's graph,
    ``null`` where the graph has none LangGraph can describe."""
    return engine.graph_schemas(access.graph(request, assistant_id))


@assistants.get(
    "/{assistant_id}/subgraphs", summary="Get an assistant's subgraphs", response=answers.Subgraphs
)
def get_assistant_subgraphs(request, assistant_id: str, query: Query[SubgraphsQuery]):
    """``{namespace: schemas}`` for each subgraph (schemas as ``/schemas`` gives them);
    with ``recurse``, their subgraphs too."""
    return engine.subgraph_schemas(access.graph(request, assistant_id), None, query.recurse)


@assistants.get(
    "/{assistant_id}/subgraphs/{namespace}",
    summary="Get an assistant's subgraphs at a namespace",
    response=answers.Subgraphs,
)
def get_assistant_subgraphs_at(
    request, assistant_id: str, namespace: str, query: Query[SubgraphsQuery]
):
    """As ``/subgraphs``, for the subgraphs at ``namespace`` only."""
    return engine.subgraph_schemas(access.graph(request, assistant_id), namespace, query.recurse)
