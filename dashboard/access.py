"""What the console shows a request, and what it may do: every queryset of a view starts
here, scoped to the request's tenant (``dashboard.tenancy``). Anything of another tenant
is a 404, exactly as if it did not exist."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from durable.models import Assistant, AuditEvent, Cron, Run, Thread
from durable.persistence.store import ScopedStore, tenant_store
from durable.tenancy import is_auditor, may_act, may_reveal


def threads(request) -> QuerySet[Thread]:
    """The threads ``request`` may see: its tenant's (none without a tenant)."""
    return Thread.objects.of_tenants(request.tenant)


def may_see_all_tenants(request) -> bool:
    """Whether the request may read every tenant's threads at once: a staff auditor."""
    return request.user.is_authenticated and is_auditor(request.user)


def every_tenants_threads(request) -> QuerySet[Thread]:
    """Every tenant's threads, for a staff auditor; otherwise ``PermissionDenied``."""
    if not may_see_all_tenants(request):
        raise PermissionDenied("Only a staff auditor may read every tenant.")
    return Thread.objects.all()


def runs(request) -> QuerySet[Run]:
    """The runs ``request`` may see: those of its threads."""
    return Run.objects.filter(thread__in=threads(request))


def crons(request) -> QuerySet[Cron]:
    """The crons of the request's tenant (none without a tenant)."""
    return Cron.objects.of_tenants(request.tenant).select_related(
        "tenant", "thread", "stored_assistant"
    )


def cron_or_404(request, pk: int) -> Cron:
    """Cron ``pk`` if ``request`` may see it; otherwise ``Http404``."""
    return get_object_or_404(crons(request), pk=pk)


def may_see_run(request, pk: int) -> bool:
    """Whether run ``pk`` exists and ``request`` may see it."""
    return runs(request).filter(pk=pk).exists()


def assistants(request) -> QuerySet[Assistant]:
    """The stored assistants ``request`` may see: its tenant's (none without a tenant)."""
    return Assistant.objects.of_tenants(request.tenant)


def assistant_or_404(request, assistant_id) -> Assistant:
    """The tenant's assistant ``assistant_id`` (a UUID); otherwise ``Http404``, as for
    one that does not exist."""
    return get_object_or_404(assistants(request), assistant_id=assistant_id)


def audit_events(request) -> QuerySet[AuditEvent]:
    """The audit trail of the request's tenant."""
    return AuditEvent.objects.of_tenants(request.tenant)


def store(request) -> ScopedStore:
    """The request's tenant's part of the store: namespaces under its slug, shown
    without it (``durable.persistence.store.scoped``). 403 for a user of no tenant."""
    if request.tenant is None:
        raise PermissionDenied("You are not a member of any tenant.")
    return tenant_store(request.tenant)


def thread_or_404(request, pk: int) -> Thread:
    """Thread ``pk`` if ``request`` may see it; otherwise ``Http404``, as for a thread
    that does not exist."""
    return get_object_or_404(threads(request), pk=pk)


def may_act_here(request) -> bool:
    """Whether the request's role may resume, fork, replay, cancel and delete."""
    return request.role is not None and may_act(request.role)


def may_reveal_here(request) -> bool:
    """Whether the request may reveal a masked value: a tenant admin, or an auditor."""
    return may_reveal(request.role, request.user)


def require_revealer(request) -> None:
    """Raise ``PermissionDenied`` (403) unless the request may reveal masked values."""
    if not may_reveal_here(request):
        raise PermissionDenied("Only a tenant admin or an auditor may reveal a masked value.")


def require_operator(request) -> None:
    """Raise ``PermissionDenied`` (403) unless the request may change threads and runs.
    Views call it after looking up what they act on, so that another tenant's thread is
    a 404 even to a viewer."""
    if not may_act_here(request):
        raise PermissionDenied("Viewers cannot change threads or runs.")
