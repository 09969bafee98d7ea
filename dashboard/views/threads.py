"""The operator console's pages. Views read models and call ``durable.engine``; they never
touch a saver or Celery directly."""

from __future__ import annotations

import json

from django.http import (
    HttpResponseRedirect,
)
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard import access
from dashboard.forms import ResumeForm, StartRunForm
from dashboard.views import checkpoints, history
from dashboard.views.pages import refusal, render_page
from durable import engine
from durable.graphs import example_input, graph_names
from durable.models import Run


@require_GET
def thread_list(request):
    return _render_thread_list(request, StartRunForm())


@require_POST
def start_run(request):
    access.require_operator(request)
    form = StartRunForm(request.POST)
    if form.is_valid():
        try:
            run = engine.start(
                form.cleaned_data["graph"],
                form.cleaned_data["input"],
                requested_by=request.user,
                tenant=request.tenant,
            )
        except engine.InvalidRequest as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            return _see_other(reverse("thread", args=[run.thread_id]))
    return _render_thread_list(request, form, status=400)


def _see_other(url: str) -> HttpResponseRedirect:
    """303: the browser follows a POST's result with a GET."""
    return HttpResponseRedirect(url, status=303)


def _render_thread_list(request, form, status=200):
    return history.render_thread_list(request, _start_forms(form), status=status)


def _start_forms(form) -> dict:
    """The start-run form of each graph; the submitted one keeps its input and errors."""
    submitted = form.data.get("graph") if form.is_bound else None
    start_forms = [
        {
            "graph": name,
            "input": (
                form.data.get("input")
                if submitted == name
                else json.dumps(example_input(name), indent=2)
            ),
            "errors": form.errors if submitted == name else {},
        }
        for name in graph_names()
    ]
    orphan_errors = form.errors if form.is_bound and submitted not in graph_names() else {}
    return {"start_forms": start_forms, "orphan_errors": orphan_errors}


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
    if not pending:
        form.add_error(None, f"Thread {thread.name!r} has no pending interrupt to resume.")
    elif form.is_valid():
        try:
            engine.resume(thread, **form.resume_args, requested_by=request.user)
        except engine.InvalidRequest as exc:
            form.add_error(None, refusal(exc, thread))
        else:
            return _see_other(reverse("thread", args=[thread.pk]))
    return _render_thread(request, thread, form=form, status=400)


def _last_seq(run) -> int:
    if run is None:
        return 0
    return run.events.order_by("-seq").values_list("seq", flat=True).first() or 0


def _render_thread(request, thread, form=None, status=200):
    # The active run first, then the thread's status and state: a run's end and its
    # thread's status commit together, so a page with no active run to follow shows what
    # the end wrote. Read the other way round, a run that ended between the reads left
    # a page that said "busy" and had nothing left to refresh it.
    active_run = thread.runs.filter(status__in=Run.ACTIVE).first()
    thread.refresh_from_db()
    state = engine.thread_state(thread)
    pending = list(state.interrupts)
    latest = ((state.config or {}).get("configurable") or {}).get("checkpoint_id") or ""
    context = {
        "thread": thread,
        "latest_checkpoint": latest,
        "latest_json_url": checkpoints.json_url(thread, latest) if latest else "",
        "last_seq": _last_seq(active_run),
        "state": state,
        # The first page of the checkpoint tree; older pages are on the history page.
        "tree": history.tree_context(thread),
        "recent_runs": thread.runs.all()[:10],
        "active_run": active_run,
        "pending": pending,
        "resume_form": form or ResumeForm(pending),
    }
    return render_page(
        request, "dashboard/thread_detail.html", context, target="live", part="live", status=status
    )
