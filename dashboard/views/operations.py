"""The Operations page: how runs went over the last hour, day or week, for the tenant
(or, for a staff auditor who asks ``?tenants=all``, every tenant), drawn as SVG charts
with their numbers as tables (``dashboard.present.operations``); and the deployment's last
fault drills (``durable.drills``: what passed, how long recovery took; the reasons and
worker names for staff only)."""

from __future__ import annotations

from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard import access
from dashboard.forms.operations import OperationsForm
from dashboard.forms.queries import form_errors
from dashboard.present.operations import operations_context
from durable import drills
from durable.reports.figures import WINDOWS

TEMPLATE = "dashboard/operations.html"


@require_GET
def operations(request):
    """``/operations/?window=hour|day|week[&tenants=all]``; a bad parameter is a 400 in
    the console's layout, naming it."""
    may_see_all = access.may_see_all_tenants(request)
    form = OperationsForm(request.GET, may_see_all=may_see_all)
    context = {"form": form, "may_see_all": may_see_all, "windows": list(WINDOWS)}
    if not form.is_valid():
        context["errors"] = form_errors(form)
        return render(request, TEMPLATE, context, status=400)
    every = form.cleaned_data["tenants"] == "all"
    threads = access.every_tenants_threads(request) if every else access.threads(request)
    context.update(
        operations_context(threads, WINDOWS[form.cleaned_data["window"]], timezone.now(), every),
        every_tenant=every,
        chosen=form.cleaned_data,
        drills=drills.last_reports(),
        drill_details=request.user.is_staff,
    )
    return render(request, TEMPLATE, context)
