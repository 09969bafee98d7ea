"""Where a replayed or forked branch first did something else than the branch it left
(``durable.reports.divergence``): a page per thread, and the box on a replay or fork
run's page, which loads the report of the run's branch."""

from __future__ import annotations

from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from dashboard import access
from dashboard.forms import form_errors
from dashboard.forms.divergence import DivergenceForm
from dashboard.http import render_page
from durable import engine, history, reports


@require_GET
def thread_divergence(request, pk: int):
    """``/threads/<pk>/divergence/?checkpoint_id=``: the branch through that checkpoint
    (default: the thread's newest) compared with the branch it left, step by step from
    the fork point: the first step where they differ, with what differs there, or "no
    divergence". A checkpoint the thread does not have is an error on the form (400)."""
    thread = access.thread_or_404(request, pk)
    form = DivergenceForm(request.GET)
    context = {"thread": thread, "form": form, "report": None, "errors": []}
    status = 200
    if form.is_valid():
        checkpoint_id = form.cleaned_data["checkpoint_id"] or history.newest_checkpoint_id(
            thread.thread_id
        )
        if checkpoint_id is None:
            context["empty"] = True
        else:
            try:
                context["report"] = reports.divergence(thread, checkpoint_id)
            except engine.InvalidRequest as exc:
                form.add_error("checkpoint_id", exc.message)
    if form.errors:
        context["errors"] = form_errors(form)
        status = 400
    return render_page(
        request,
        "dashboard/divergence.html",
        context,
        target="divergence",
        part="report",
        status=status,
    )


@require_GET
def run_divergence(request, pk: int):
    """``/runs/<pk>/divergence/``: the report for the branch run ``pk`` made (a replay, a
    fork, an interrupt answered again) as the divergence page, or, for htmx, as the run
    page's box (``includes/run_divergence.html``), which waits while the run goes on.
    404 for a run the request may not see."""
    run = get_object_or_404(access.runs(request).select_related("thread"), pk=pk)
    box = bool(request.htmx and request.htmx.target == "run-divergence")
    context = {
        "thread": run.thread,
        "run": run,
        "form": DivergenceForm(),
        "report": None if box and run.is_active else reports.run_divergence(run),
        "errors": [],
        "loaded": True,
    }
    template = "dashboard/includes/run_divergence.html" if box else "dashboard/divergence.html"
    response = render(request, template, context)
    response["Vary"] = "HX-Request"
    return response
