"""What a request may reach, by the names the protocol uses: the token's tenant's threads
(by ``Thread.name``, which the wire calls ``thread_id``), a thread's runs, the tenant's
assistants (and the registered graphs, each its own default assistant), and which names
a thread URL can carry. Another tenant's thread or assistant is a 404 like one that does
not exist."""

from __future__ import annotations

import re
import uuid

from django.db.models import QuerySet
from django.http import HttpRequest

from durable import engine
from durable.api.errors import ApiError
from durable.graphs import graph_names
from durable.models import Assistant, Cron, Run, Thread

# Names a thread URL cannot carry back as one path segment: clients and proxies resolve
# "." and "..", "/" splits the segment, and the name of a route beside
# /threads/{thread_id} is that route (GET /threads/search would not reach a thread named
# "search"). Such a thread could be created but never reached.
UNREACHABLE_NAMES = re.compile(r"/|^\.{1,2}$|^(search|count|prune)$")


def threads(request: HttpRequest) -> QuerySet[Thread]:
    """The threads of the token's tenant. Every lookup goes through this one queryset,
    runs included (they are reached only through their thread), so another tenant's
    thread is a 404 like one that does not exist."""
    return Thread.objects.of_tenants(request.auth.tenant)


def find_thread(request: HttpRequest, name: str) -> Thread | None:
    """The tenant's thread named ``name`` (``Thread.name``: the id the tenant gave it;
    the checkpointer's own id is never shown), or ``None``. Routes take ``name`` as a
    ``schemas.ThreadId``, text the table can hold."""
    return threads(request).filter(name=name).first()


def thread_not_found(name: str) -> ApiError:
    return ApiError(404, f"Thread {name!r} not found.", "thread_id")


def thread(request: HttpRequest, name: str) -> Thread:
    """The tenant's thread named ``name``; 404 when it has none."""
    found = find_thread(request, name)
    if found is None:
        raise thread_not_found(name)
    return found


def check_reachable(name: str) -> None:
    """422 for a name a new thread cannot take, since its URLs could not reach it."""
    if UNREACHABLE_NAMES.search(name):
        raise ApiError(
            422,
            "thread_id cannot hold '/' or be '.', '..', 'search', 'count' or 'prune' in URLs.",
            "thread_id",
        )


def run(request: HttpRequest, name: str, run_id: str) -> Run:
    """Run ``run_id`` of the tenant's thread named ``name``; 404 for either unknown."""
    found_thread = thread(request, name)
    # Run ids are bigints: anything else is no run (and must not reach the database).
    valid = run_id.isascii() and run_id.isdigit() and len(run_id) <= 18
    found = found_thread.runs.filter(pk=int(run_id)).first() if valid else None
    if found is None:
        raise ApiError(404, f"Run {run_id!r} not found on thread {found_thread.name!r}.", "run_id")
    return found


def assistant(request: HttpRequest, assistant_id: str) -> Assistant | str:
    """The tenant's stored assistant ``assistant_id`` (its UUID), or the name of the
    registered graph it names (that graph's own default assistant); 404 else."""
    found = engine.find_assistant(request.auth.tenant, assistant_id)
    if found is not None:
        return found
    if assistant_id not in graph_names():
        raise engine.UnknownAssistant(assistant_id)
    return assistant_id


def graph(request: HttpRequest, assistant_id: str) -> str:
    """The registered graph the assistant ``assistant_id`` runs; 404 for no assistant."""
    found = assistant(request, assistant_id)
    return found if isinstance(found, str) else found.graph_id


def changeable(found: Assistant | str) -> Assistant:
    """``found`` (``assistant``), to change it: 409 for a registered graph's default
    assistant, which is not stored and so cannot change."""
    if isinstance(found, str):
        raise ApiError(
            409,
            f"Assistant {found!r} is the registered graph's own default assistant, which "
            "cannot change: create an assistant of the graph to configure it.",
            "assistant_id",
        )
    return found


def crons(request: HttpRequest) -> QuerySet[Cron]:
    """The crons of the token's tenant (another tenant's is a 404 like none)."""
    return Cron.objects.of_tenants(request.auth.tenant).select_related("tenant", "thread")


def cron(request: HttpRequest, cron_id: str) -> Cron:
    """The tenant's cron ``cron_id`` (a UUID); 404 for an unknown one or any other text."""
    try:
        key = uuid.UUID(cron_id)
    except ValueError:
        key = None
    found = crons(request).filter(cron_id=key).first() if key is not None else None
    if found is None:
        raise ApiError(404, f"Cron {cron_id!r} not found.", "cron_id")
    return found
