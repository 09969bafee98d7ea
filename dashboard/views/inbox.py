"""The interrupt inbox: every pending interrupt of the visible threads, a queue to answer
or close.

``/inbox/`` lists the interrupted threads (``?graph=``, ``?action=``, ``?q=`` filter,
``?sort=`` orders: by graph, oldest or newest waiting; ``?page=`` pages), with the count
waiting per graph and per action, each with the form answering all of its interrupts at
once, by interrupt id. ``/inbox/bulk/`` answers several single-interrupt threads of one
kind with one decision. ``/inbox/threads/<pk>/`` is one thread's entry alone (a deep
link, and where a refused answer is shown with its errors).
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count, Min
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard import access
from dashboard.forms import CloseForm, ResumeForm, refusal
from dashboard.forms.inbox import SORTS, BulkAnswerForm, InboxQuery
from dashboard.http import see_other
from dashboard.present.inbox import Entry, entry_at
from durable import engine
from durable.engine import inline
from durable.models import Thread
from durable.reports import waiting as waiting_report

THREADS_PER_PAGE = 10


def _entry(thread: Thread, answer=None, close_form: CloseForm | None = None) -> Entry:
    """``thread``'s entry at its latest state, with its forms: the answer form bound to
    ``answer`` (posted data) or unbound, and ``close_form`` or one for the checkpoint the
    entry shows."""
    shown = entry_at(thread, engine.thread_state(thread))
    shown.form = ResumeForm(shown.pending, answer)
    shown.close_form = close_form or CloseForm(initial={"checkpoint_id": shown.checkpoint_id})
    return shown


def _waiting(request):
    return waiting_report.waiting(access.threads(request).select_related("tenant"))


@require_GET
def inbox(request):
    """The inbox page (``_render_inbox``)."""
    return _render_inbox(request)


def _render_inbox(request, bulk: BulkAnswerForm | None = None, status: int = 200):
    """The threads with status ``interrupted`` that the GET parameters keep
    (``InboxQuery``), in the order they ask, ``THREADS_PER_PAGE`` per page: a page
    reads that many states, and counts in a fixed number of queries, whatever the
    backlog. Bad parameters: 400 with their errors."""
    waiting = _waiting(request)
    query = InboxQuery(request.GET)
    context = {"sorts": SORTS, "query": query, "bulk": bulk or BulkAnswerForm(queryset=waiting)}
    if not query.is_valid():
        graphs = waiting.values("graph").annotate(n=Count("pk")).order_by("graph")
        # A message that already names its parameter is not named twice.
        errors = [
            e if e.startswith(f"{name}: ") else f"{name}: {e}"
            for name, es in query.errors.items()
            for e in es
        ]
        context |= {"graphs": list(graphs), "total": waiting.count(), "entries": []}
        return render(request, "dashboard/inbox.html", context | {"errors": errors}, status=400)
    chosen = query.cleaned_data
    matched = waiting_report.matching(waiting, chosen["action"], chosen["q"])
    graphs = matched.values("graph").annotate(n=Count("pk"), oldest=Min("waiting_since"))
    if chosen["graph"]:
        matched = matched.filter(graph=chosen["graph"])
    actions = matched.values("action").annotate(n=Count("pk")).order_by("action")
    page = Paginator(matched.order_by(*query.ordering), THREADS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    graphs = [g | {"href": query.query(graph=g["graph"])} for g in graphs.order_by("graph")]
    entries = [_entry(thread) for thread in page]
    context |= {
        "graphs": graphs,
        "all_graphs": query.query(graph=None),
        "previous_href": page.has_previous() and query.query(page=page.number - 1),
        "next_href": page.has_next() and query.query(page=page.number + 1),
        "picked": request.POST.getlist("threads"),
        "actions": [a for a in actions if a["action"]],
        "chosen": chosen,
        "total": waiting.count(),
        "page": page,
        "entries": entries,
        # Bulk answers need two entries of a kind at least: no select boxes for fewer
        # (but a refused bulk answer is shown with its error).
        "bulkable": sum(1 for e in entries if e.bulk_kind) > 1 or bulk is not None,
    }
    return render(request, "dashboard/inbox.html", context, status=status)


def _back_to_inbox(request):
    """303 to the inbox with the query string the request had (its filters and page)."""
    query = request.GET.urlencode()
    return see_other(f"{reverse('inbox')}?{query}" if query else reverse("inbox"))


@require_http_methods(["GET", "POST"])
def bulk(request):
    """Answer every thread of ``BulkAnswerForm.threads`` with its ``decision``: each
    thread is resumed with its own interrupt id by ``durable.engine.resume`` (one run
    and one audit event each), then 303 back to the inbox as the query string had it.
    Refused (400, the inbox with the error, nothing changed): threads of different
    kinds or not waiting on exactly one interrupt with one action, a decision one of
    them does not allow, or what ``durable.engine.resume`` refuses for any of them.
    A GET (a refused answer's page reloaded or bookmarked) is 303 to the inbox, as
    the query string has it."""
    if request.method == "GET":
        return _back_to_inbox(request)
    access.require_operator(request)
    form = BulkAnswerForm(request.POST, queryset=_waiting(request))
    if form.is_valid():
        entries = [_entry(thread) for thread in form.cleaned_data["threads"]]
        answers = _bulk_answers(form, entries)
        if answers is not None:
            try:
                with transaction.atomic():  # all or none: a refusal rolls back the others
                    runs = [
                        engine.resume(e.thread, answers=by_id, requested_by=request.user)
                        for e, by_id in zip(entries, answers, strict=True)
                    ]
            except engine.InvalidRequest as exc:
                form.add_error(None, f"{exc.message} Nothing was answered.")
            else:
                names = ", ".join(e.thread.name for e in entries)
                interrupts = "interrupt" if len(runs) == 1 else "interrupts"
                messages.success(request, f"Answered {len(runs)} {interrupts} ({names}).")
                return _back_to_inbox(request)
    return _render_inbox(request, bulk=form, status=400)


def _bulk_answers(form: BulkAnswerForm, entries: list[Entry]) -> list[dict] | None:
    """Each entry's answer by interrupt id, ``{interrupt_id: value}``, as its own answer
    form (``ResumeForm``) makes it from the bulk decision; ``None`` after adding the
    reason to ``form`` when the entries cannot be answered together."""
    kinds = {e.bulk_kind for e in entries}
    if "" in kinds:
        odd = next(e for e in entries if not e.bulk_kind)
        form.add_error(
            "threads",
            f"threads: {odd.thread.name} does not wait on one interrupt with one action;"
            " answer it on its own.",
        )
        return None
    if len(kinds) > 1:
        form.add_error(
            "threads",
            "threads: the selected interrupts are of different kinds ("
            + "; ".join(sorted(kinds))
            + "); select interrupts of one kind.",
        )
        return None
    decision, message = form.cleaned_data["decision"], form.cleaned_data["message"]
    answers = []
    for entry in entries:
        [card] = ResumeForm(entry.pending).cards
        # The interrupt the page showed (``interrupt-<pk>``): a thread that has moved on
        # to another interrupt since (answered elsewhere, then asking again) is not
        # answered unseen, as its own answer form, bound to interrupt ids, is not.
        shown = form.data.get(f"interrupt-{entry.thread.pk}")
        if shown is not None and shown != card.id:
            form.add_error(
                "threads",
                f"threads: {entry.thread.name} now waits on another interrupt than the one"
                " shown; look at it again before answering.",
            )
            return None
        if card.kind == "human":
            data = {card.response.html_name: "accept" if decision == "approve" else "ignore"}
        else:
            action = card.actions[0]
            data = {action.decision.html_name: decision, action.message.html_name: message}
        answer = ResumeForm(entry.pending, data)
        if not answer.is_valid():
            problems = " ".join(m for ms in answer.errors.values() for m in ms)
            form.add_error("decision", f"decision: {entry.thread.name}: {problems}")
            return None
        answers.append({card.id: answer.resume_args["value"]})
    return answers


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
    run, then 303 to that run's page, or to ``next`` when it is an inbox page (the
    keyboard's answers go on with the next interrupt). Refused (400, the form with its
    errors, nothing changed): an answer that does not validate, or what ``durable.engine.resume``
    refuses (nothing pending, a busy thread)."""
    thread = access.thread_or_404(request, pk)
    access.require_operator(request)
    shown = _entry(thread, request.POST)
    form = shown.form
    if form.is_valid():
        try:
            with inline.awaited():  # its run's page follows it
                run = engine.resume(thread, **form.resume_args, requested_by=request.user)
        except engine.InvalidRequest as exc:
            form.add_error(None, refusal(exc, thread))
        else:
            back = request.POST.get("next", "")
            if back.startswith(reverse("inbox")) and url_has_allowed_host_and_scheme(
                back, allowed_hosts={request.get_host()}
            ):
                messages.success(request, f"Answered {thread.name}: run {run.pk}.")
                return see_other(back)
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
