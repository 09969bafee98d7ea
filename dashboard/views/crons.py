"""The Crons page: the tenant's crons with their schedules in words and as expressions,
next fire times and last runs; a form for a new one; enable, disable and delete. Viewers
read; every change goes through ``durable.engine.crons`` (audited)."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from dashboard import access
from dashboard.forms import CronForm
from dashboard.http import see_other
from dashboard.present.crons import rows
from durable import engine

CRONS_PER_PAGE = 50


@require_http_methods(["GET", "POST"])
def cron_list(request):
    """The page (GET): the tenant's crons, newest first, ``CRONS_PER_PAGE`` a page
    (``?page=``); a new cron (POST, operators): 303 back to the page, or the form again
    with the error on its field (400), nothing stored."""
    form = CronForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        access.require_operator(request)
        if form.is_valid():
            data = form.cleaned_data
            try:
                engine.create_cron(
                    data["schedule"],
                    tenant=request.tenant,
                    assistant_id=data["assistant_id"],
                    timezone=data["timezone"],
                    end_time=data["end_time"],
                    on_run_completed=data["on_run_completed"],
                    payload={"input": data["input"]},
                    requested_by=request.user,
                )
            except engine.InvalidRequest as exc:
                form.refused(exc)
            else:
                return see_other(reverse("crons"))
    return _page(request, form)


def _page(request, form: CronForm, refused: str | None = None):
    """The page with ``form``, and ``refused`` (an action's refusal) above the table;
    400 when either holds an error."""
    page = Paginator(access.crons(request), CRONS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "rows": rows(list(page), access.runs(request)),
        "form": form,
        "may_act": access.may_act_here(request),
        "refused": refused,
    }
    failed = form.errors or refused
    return render(request, "dashboard/crons.html", context, status=400 if failed else 200)


@require_POST
def cron_enable(request, pk: int):
    """Enable (``enabled=1``) or disable (``enabled=0``) cron ``pk``; 303 to the page, or
    the page with the refusal (400: a cron past its ``end_time`` is not enabled again)."""
    cron = access.cron_or_404(request, pk)
    access.require_operator(request)
    enabled = request.POST.get("enabled") == "1"
    try:
        engine.update_cron(cron, {"enabled": enabled}, requested_by=request.user)
    except engine.InvalidRequest as exc:
        return _page(request, CronForm(), refused=exc.message)
    return see_other(reverse("crons"))


@require_POST
def cron_delete(request, pk: int):
    """Delete cron ``pk`` (its runs stay); 303 to the page."""
    cron = access.cron_or_404(request, pk)
    access.require_operator(request)
    engine.delete_cron(cron, requested_by=request.user)
    return see_other(reverse("crons"))
