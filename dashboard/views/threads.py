"""The threads list (filtered, keyset-paged, with a start-run form per graph), one
thread's page, and answering its interrupts there.

The list reads only indexed columns: it pages by keyset on (updated_at, pk)
(``dashboard.paging``), so it does not slow down as threads grow.
"""

from __future__ import annotations

from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard import access
from dashboard.forms import (
    PageForm,
    ResumeForm,
    StartRunForm,
    ThreadFilter,
    form_errors,
    refusal,
    start_forms,
)
from dashboard.http import render_page, see_other
from dashboard.paging import SORTS, keyset_page
from dashboard.present.diagnosis import diagnosis_context
from dashboard.present.links import json_url
from dashboard.present.threads import status_tabs
from dashboard.present.tree import tree_context
from durable import engine, history
from durable.engine import inline
from durable.redaction import redact

THREADS_PER_PAGE = 50


@require_GET
def thread_list(request):
    return _render_thread_list(request, StartRunForm())


@require_POST
def start_run(request):
    access.require_operator(request)
    form = StartRunForm(request.POST)
    if form.is_valid():
        try:
            asked = engine.RunRequest(
                graph=form.cleaned_data["graph"],
                input=form.cleaned_data["input"],
                requested_by=request.user,
            )
            run = engine.submit(asked, tenant=request.tenant)
        except engine.InvalidRequest as exc:
            form.add_error(form.field_for(exc.field), exc.message)
        else:
            return see_other(reverse("thread", args=[run.thread_pk]))
    return _render_thread_list(request, form, status=400)


def _render_thread_list(request, form: StartRunForm, status: int = 200):
    """``/``: threads filtered by the GET parameters (``dashboard.forms.filters``),
    newest first by default, with the start-run forms. Bad filter input gets 400 and the
    form's errors. A request from htmx that targets ``thread-results`` gets only that
    part."""
    context = {**start_forms(form), **_threads_context(request)}
    if context["filter_errors"] and status == 200:
        status = 400
    return render_page(
        request,
        "dashboard/thread_list.html",
        context,
        target="thread-results",
        part="results",
        status=status,
    )


def _threads_context(request) -> dict:
    filterset = ThreadFilter(request.GET, queryset=access.threads(request))
    paging = PageForm(request.GET)
    valid = filterset.is_valid() & paging.is_valid()  # both, so both show their errors
    errors = form_errors(filterset.form) + form_errors(paging)
    if not valid:
        return {"filter": filterset, "filter_errors": errors, "page": None, "status_tabs": []}
    cleaned = paging.cleaned_data
    page = keyset_page(
        filterset.qs,
        newest_first=(cleaned.get("sort") or "-updated") == "-updated",
        after=cleaned.get("after"),
        before=cleaned.get("before"),
        size=THREADS_PER_PAGE,
    )
    counts = history.checkpoint_counts(t.thread_id for t in page.rows)
    for thread in page.rows:
        thread.checkpoint_count = counts.get(thread.thread_id, 0)
        thread.metadata = redact(thread.metadata)  # shown, never saved
    return {
        "filter": filterset,
        "filter_errors": [],
        "page": page,
        "status_tabs": status_tabs(filterset, request.GET),
        "sorts": SORTS.items(),
        "meta_values": request.GET.getlist("meta"),
    }


@require_GET
def thread_detail(request, pk: int):
    thread = access.thread_or_404(request, pk)
    return _render_thread(request, thread)


@require_POST
def resume_thread(request, pk: int):
    thread = access.thread_or_404(request, pk)
    access.require_operator(request)
    pending = engine.pending_interrupts(thread)
    form = ResumeForm(pending, request.POST)
    if form.is_valid():
        try:
            with inline.awaited():  # the page it returns to follows the run
                engine.resume(thread, **form.resume_args, requested_by=request.user)
        except engine.InvalidRequest as exc:
            form.add_error(None, refusal(exc, thread))
        else:
            return see_other(reverse("thread", args=[thread.pk]))
    return _render_thread(request, thread, form=form, status=400)


def _render_thread(request, thread, form=None, status=200):
    # The active run first, then the thread's status and state: a run's end and its
    # thread's status commit together, so a page with no active run to follow shows what
    # the end wrote. Read the other way round, a run that ended between the reads left
    # a page that said "busy" and had nothing left to refresh it.
    active_run = engine.active_run(thread)
    thread.refresh_from_db()
    state = engine.thread_state(thread)
    pending = list(state.interrupts)
    latest = ((state.config or {}).get("configurable") or {}).get("checkpoint_id") or ""
    context = {
        "thread": thread,
        "latest_checkpoint": latest,
        "latest_json_url": json_url(thread, latest) if latest else "",
        "last_seq": active_run.highest_seq() if active_run else 0,
        "state": state,
        # The first page of the checkpoint tree; older pages are on the history page.
        "tree": tree_context(thread, actions=access.may_act_here(request)),
        "recent_runs": list(thread.runs.select_related("assistant")[:10]),
        "active_run": active_run,
        "pending": pending,
        "resume_form": form or ResumeForm(pending),
        "drift": engine.thread_drift(thread),
        **diagnosis_context(thread, access.may_act_here(request)),
    }
    return render_page(
        request, "dashboard/thread_detail.html", context, target="live", part="live", status=status
    )
