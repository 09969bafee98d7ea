"""The interrupt inbox: every pending interrupt of the visible threads, to answer or
close.

``/inbox/`` lists the interrupted threads, grouped by graph and oldest first within a
graph (``?graph=`` keeps one graph, ``?page=`` pages), each with the form answering all
of its interrupts at once, by interrupt id. ``/inbox/threads/<pk>/`` is one thread's
entry alone (a deep link, and where a refused answer is shown with its errors).
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db.models import Count, Min
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard import access
from dashboard.forms import CloseForm, GraphForm, ResumeForm, refusal
from dashboard.http import see_other
from dashboard.present.inbox import Entry, entry_at
from durable import engine
from durable.models import Thread

THREADS_PER_PAGE = 10


def _entry(thread: Thread, answer=None, close_form: CloseForm | None = None) -> Entry:
    """``thread``'s entry at its latest state, with its forms: the answer form bound to
    ``answer`` (posted data) or unbound, and ``close_form`` or one for the checkpoint the
    entry shows."""
    shown = entry_at(thread, engine.thread_state(thread))
    shown.form = ResumeForm(shown.pending, answer)
    shown.close_form = close_form or CloseForm(initial={"checkpoint_id": shown.checkpoint_id})
    return shown


@require_GET
def inbox(request):
    """The inbox page. Threads with status ``interrupted``, ordered by graph, then by
    when they stopped (oldest first); ``THREADS_PER_PAGE`` per page, so a page reads
    that many states whatever the backlog."""
    waiting = access.threads(request).filter(status=Thread.Status.INTERRUPTED)
    graphs = list(
        waiting.values("graph").annotate(n=Count("pk"), oldest=Min("updated_at")).order_by("graph")
    )
    picked = GraphForm(request.GET)
    if not picked.is_valid():
        # A graph name no thread can have (too long, or with a NUL, which PostgreSQL
        # refuses): an input error, not a server error.
        return render(
            request,
            "dashboard/inbox.html",
            {
                "graphs": graphs,
                "total": sum(g["n"] for g in graphs),
                "entries": [],
                "error": "graph: no graph has this name.",
            },
            status=400,
        )
    chosen = picked.cleaned_data["graph"]
    if chosen:
        waiting = waiting.filter(graph=chosen)
    page = Paginator(waiting.order_by("graph", "updated_at", "pk"), THREADS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "graphs": graphs,
        "chosen": chosen,
        "total": sum(g["n"] for g in graphs),
        "page": page,
        "entries": [_entry(thread) for thread in page],
    }
    return render(request, "dashboard/inbox.html", context)


@require_GET
def inbox_thread(request, pk: int):
    """One thread's inbox entry; 404 for a thread the request may not see."""
    thread = access.thread_or_404(request, pk)
    return _render_one(request, _entry(thread))


def _render_one(request, entry: Entry, status: int = 200):
    response = render(request, "dashboard/inbox_thread.html", {"entry": entry}, status=status)
    return response


@require_POST
def answer(request, pk: int):
    """Answer every pending interrupt of thread ``pk`` (``ResumeForm``): a resume
    run, then 303 to that run's page. Refused (400, the form with its errors, nothing
    changed): an answer that does not validate, or what ``durable.engine.resume``
    refuses (nothing pending, a busy thread)."""
    thread = access.thread_or_404(request, pk)
    access.require_operator(request)
    shown = _entry(thread, request.POST)
    form = shown.form
    if form.is_valid():
        try:
            run = engine.resume(thread, **form.resume_args, requested_by=request.user)
        except engine.InvalidRequest as exc:
            form.add_error(None, refusal(exc, thread))
        else:
            return see_other(reverse("run", args=[run.pk]))
    return _render_one(request, shown, status=400)


@require_POST
def close(request, pk: int):
    """Close thread ``pk`` without resuming (``durable.engine.close``): its next tasks,
    and so its interrupts, are cleared; 303 to the thread. The reason stays on the new
    checkpoint's metadata and in the audit trail. Refused (400, nothing changed): no
    reason, or what ``durable.engine.close`` refuses (a thread that moved on since the
    operator saw it, nothing pending at ``checkpoint_id``)."""
    thread = access.thread_or_404(request, pk)
    access.require_operator(request)
    form = CloseForm(request.POST)
    if form.is_valid():
        try:
            engine.close(
                thread,
                form.cleaned_data["checkpoint_id"],
                requested_by=request.user,
                reason=form.cleaned_data["reason"],
            )
        except engine.InvalidRequest as exc:
            form.add_error(None, refusal(exc, thread))
        else:
            return see_other(reverse("thread", args=[thread.pk]))
    return _render_one(request, _entry(thread, close_form=form), status=400)
