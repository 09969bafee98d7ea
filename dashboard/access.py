"""What the console shows a request: every queryset of a view, and the store it
browses, start here, so that tenant scoping (issue 6) lands in one place. Until tenants
exist, everything is visible."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from durable.models import Run, Thread
from durable.store import DjangoStore


def threads(request) -> QuerySet[Thread]:
    """The threads ``request`` may see."""
    return Thread.objects.all()


def runs(request) -> QuerySet[Run]:
    """The runs ``request`` may see: those of its threads."""
    return Run.objects.filter(thread__in=threads(request))


def thread_or_404(request, pk: int) -> Thread:
    """Thread ``pk`` if ``request`` may see it; otherwise ``Http404``, as for a thread
    that does not exist."""
    return get_object_or_404(threads(request), pk=pk)


def store(request) -> DjangoStore:
    """The long-term memory store as ``request`` may browse it: for now the whole store;
    tenancy narrows it here (to the tenant's namespaces)."""
    return DjangoStore()
