"""The tenant's settings page: what a tenant admin sets for the tenant they work in
(how long an interrupt waits before the inbox marks it overdue). Only the tenant's
admins see or change it; each change is audited (``durable.tenancy.set_overdue_after``)."""

from __future__ import annotations

import copy

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.urls import reverse
from django.utils.duration import duration_string
from django.views.decorators.http import require_http_methods

from dashboard.forms.tenant import TenantSettingsForm
from dashboard.http import see_other
from durable import tenancy


@require_http_methods(["GET", "POST"])
def tenant_settings(request):
    """The form (GET), or the change (POST): 303 back to the page, or the form again
    with the error on its field (400), nothing changed. 403 for anyone but an admin of
    the current tenant (a staff auditor included)."""
    if request.tenant is None or not tenancy.may_configure(request.role):
        raise PermissionDenied("Only an admin of this tenant may change its settings.")
    tenant = request.tenant
    # The form edits a copy: a refused value must not show as the tenant's on the page.
    form = TenantSettingsForm(request.POST or None, instance=copy.copy(tenant))
    if request.method == "POST" and form.is_valid():
        tenancy.set_overdue_after(
            tenant,
            form.cleaned_data["overdue_after"],
            requested_by=request.user,
            reason=form.cleaned_data["reason"],
        )
        # Said on the page the 303 lands on: without it a save looks like nothing happened.
        messages.success(
            request,
            f"Saved: overdue after is now {duration_string(form.cleaned_data['overdue_after'])}.",
        )
        return see_other(reverse("tenant-settings"))
    context = {"form": form, "tenant": tenant}
    return render(
        request, "dashboard/tenant_settings.html", context, status=400 if form.errors else 200
    )
