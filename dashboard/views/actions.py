"""Fork and replay from a checkpoint of a thread: a form (GET) and the action (POST).

Both take a required reason. It is kept as ``metadata={"reason": ...}``: on the Run
(``Run.metadata``) and on the checkpoints it writes, and, for a fork, on the fork's own
checkpoint even when it does not run (``durable.engine.fork``); the audit trail
(``durable.audit``) records it too.
"""

from __future__ import annotations

from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from dashboard import access
from dashboard.forms import ForkForm, ReplayForm, refusal
from dashboard.http import see_other
from dashboard.present import checkpoint
from durable import engine
from durable.redaction import redact
from durable.values import jsonable


def _posted(request):
    return request.POST if request.method == "POST" else None


def _at_checkpoint(request, pk: int, checkpoint_id: str):
    """``(thread, snapshot, None)`` for an action on thread ``pk`` at ``checkpoint_id``,
    or ``(thread, None, page)``: a 404 page naming the field at fault. 404 for a thread
    the request may not see; 403 for a POST of a viewer."""
    thread = access.thread_or_404(request, pk)
    if request.method == "POST":
        access.require_operator(request)
    try:
        return thread, engine.state_at(thread, checkpoint_id), None
    except engine.InvalidRequest as exc:
        context = {"thread": thread, "field": exc.field, "message": exc.message}
        return thread, None, render(request, "dashboard/action_error.html", context, status=404)


@require_http_methods(["GET", "POST"])
def fork(request, pk: int, checkpoint_id: str):
    """Fork thread ``pk`` at ``checkpoint_id`` (``ForkForm``): ``durable.engine.fork``
    with the changed state keys, ``as_node``, ``run`` and the reason as metadata; then
    303 to the fork's run, or to the thread when it does not run. The form shows, per
    as_node, what LangGraph would run next after the update (``checkpoint.after_update``,
    nothing written). Refused (400, the form with its errors, nothing changed): bad JSON
    in a key (the error names it), a node the graph does not have, no reason, an update
    the graph cannot take, a run asked for after an update that leaves nothing to run
    (the fork alone is allowed: unticking the run is the operator's explicit choice),
    a busy thread. 404 for a thread not visible or a checkpoint that is not the thread's.

    ``?migrate=1``, for a checkpoint that no longer fits the deployed graph: the form is
    prefilled with the fork that migrates it (``durable.engine.migration``)."""
    thread, snapshot, error_page = _at_checkpoint(request, pk, checkpoint_id)
    if error_page:
        return error_page
    shape = engine.graph_shape(thread)
    wrote = checkpoint.writers(thread, snapshot)
    current = jsonable(snapshot.values)
    migrating = request.GET.get("migrate") == "1"
    migration = engine.migration(thread, checkpoint_id) if migrating else None
    form = ForkForm(shape, current, wrote, _posted(request), migration=migration)
    if request.method == "POST" and form.is_valid():
        try:
            result = engine.fork(
                thread,
                checkpoint_id,
                form.values,
                as_node=form.cleaned_data["as_node"],
                run=form.cleaned_data["run_after"],
                metadata={"reason": form.cleaned_data["reason"]},
                requested_by=request.user,
            )
        except engine.InvalidRequest as exc:
            form.add_error(form.field_for(exc.field), refusal(exc, thread))
        else:
            if result.run is not None:
                return see_other(reverse("run", args=[result.run.pk]))
            return see_other(reverse("thread", args=[thread.pk]))
    # What each as_node would run next with the values submitted (as they are, unsent).
    values = getattr(form, "values", None) if form.is_bound else None
    after = checkpoint.after_update(thread, checkpoint_id, shape.nodes, values)
    context = {
        "thread": thread,
        "snapshot": snapshot,
        # Masked as a whole, so that paths match from the state's root.
        "shown_values": redact(current),
        "checkpoint_id": checkpoint_id,
        "form": form,
        "writers": wrote,
        "after": after,
        "chosen": after.get(form["as_node"].value()),
        "migration": migration,
    }
    status = 400 if form.is_bound else 200
    return render(request, "dashboard/fork.html", context, status=status)


@require_http_methods(["GET", "POST"])
def replay(request, pk: int, checkpoint_id: str):
    """Replay thread ``pk`` from ``checkpoint_id``: a confirmation page listing the
    nodes that run again (the checkpoint's ``next``, then what may follow them) and
    warning that their side effects happen again; POST with a reason
    (``ReplayForm``) calls ``durable.engine.replay`` and 303s to the new run. Refused
    (400, nothing changed): no reason, a busy thread. 404 as for ``fork``."""
    thread, snapshot, error_page = _at_checkpoint(request, pk, checkpoint_id)
    if error_page:
        return error_page
    form = ReplayForm(_posted(request))
    if request.method == "POST" and form.is_valid():
        try:
            run = engine.replay(
                thread,
                checkpoint_id,
                metadata={"reason": form.cleaned_data["reason"]},
                requested_by=request.user,
            )
        except engine.InvalidRequest as exc:
            form.add_error(None, refusal(exc, thread))
        else:
            return see_other(reverse("run", args=[run.pk]))
    shape = engine.graph_shape(thread)
    context = {
        "thread": thread,
        "snapshot": snapshot,
        "checkpoint_id": checkpoint_id,
        "form": form,
        "then": [n for n in shape.after(snapshot.next) if n not in snapshot.next],
        "again": [n for n in shape.after(snapshot.next) if n in snapshot.next],
    }
    status = 400 if form.is_bound else 200
    return render(request, "dashboard/replay.html", context, status=status)
