"""Who is asking, in which tenant: login, the current tenant and the member's role.

``TenantMiddleware`` sends anonymous visitors of the console to the login page (the API
authenticates its own callers by token, the admin by its own login), and sets on every
request:

- ``request.tenant``: the tenant the user works in now (the session's choice among
  their memberships, else their first), or ``None`` when they have none;
- ``request.role``: their role there (``viewer``, ``operator`` or ``admin``); a staff
  auditor (permission ``durable.audit_all_tenants``) may open any tenant, as a viewer
  where not a member;
- ``request.tenants``: the tenants they may switch to.

It computes these before the view runs, so that async views read plain attributes.
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from durable.db import borrow
from durable.models import Role, Tenant
from durable.tenancy import is_auditor, may_act

SESSION_KEY = "durable_tenant"
# Paths with their own authentication, or none needed.
OPEN_PREFIXES = ("/api/", "/admin/", "/accounts/", "/metrics", settings.STATIC_URL)


class TenantMiddleware:
    """Sync and async. Under ASGI each request runs its sync code on a thread of its
    own, whose database connection stays open until the response ends: for a stream of
    server-sent events, until the stream closes. So the async path reads the session,
    the user and the memberships on a borrowed connection (``durable.db.borrow``),
    given back at once; otherwise 50 open streams would hold 50 connections."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.async_mode:
            return self.__acall__(request)
        _no_tenant(request)
        if request.path.startswith(OPEN_PREFIXES):
            return self.get_response(request)
        if not _identify(request):
            return redirect_to_login(request.get_full_path())
        return self.get_response(request)

    async def __acall__(self, request):
        _no_tenant(request)
        if request.path.startswith(OPEN_PREFIXES):
            return await self.get_response(request)
        if not await borrow(_identify, request):
            return redirect_to_login(request.get_full_path())
        return await self.get_response(request)


def _no_tenant(request) -> None:
    request.tenant, request.role, request.tenants = None, None, []


def _identify(request) -> bool:
    """Whether the request's user is logged in; if so, choose their tenant."""
    if not request.user.is_authenticated:
        return False
    _choose_tenant(request)
    return True


def _choose_tenant(request) -> None:
    user = request.user
    roles = {m.tenant: m.role for m in user.memberships.select_related("tenant")}
    if is_auditor(user):
        for tenant in Tenant.objects.all():
            roles.setdefault(tenant, Role.VIEWER)
    if not roles:
        return
    by_slug = {t.slug: t for t in roles}
    tenant = by_slug.get(request.session.get(SESSION_KEY)) or min(roles, key=lambda t: t.slug)
    request.tenant, request.role = tenant, roles[tenant]
    request.tenants = sorted(roles, key=lambda t: t.slug)


@require_POST
def switch_tenant(request):
    """Work in the tenant ``slug`` (POST) from now on, if the user may; back to ``next``."""
    slug = request.POST.get("tenant", "")
    if any(t.slug == slug for t in request.tenants):
        request.session[SESSION_KEY] = slug
    target = request.POST.get("next") or reverse("threads")
    if not url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        target = reverse("threads")
    return HttpResponseRedirect(target)


def role(request) -> dict:
    """Template context: ``may_act``, whether the request's role may act (operators and
    admins), so that pages offer viewers no form they would be refused."""
    return {"may_act": may_act(getattr(request, "role", None) or "")}
