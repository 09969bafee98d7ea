"""Replay from a checkpoint of a thread (fork: ``dashboard.views.fork``): a form (GET)
and the action (POST); what both take.

Both take a required reason. It is kept as ``metadata={"reason": ...}``: on the Run
(``Run.metadata``) and on the checkpoints it writes, and, for a fork, on the fork's own
checkpoint even when it does not run (``durable.engine.fork``); the audit trail
(``durable.audit``) records it too.
"""

from __future__ import annotations

from django.urls import reverse
from django.views.decorators.http import require_http_methods

from dashboard.forms import ReplayForm, refusal
from dashboard.http import at_checkpoint, posted, render_page, see_other
from durable import engine


@require_http_methods(["GET", "POST"])
def replay(request, pk: int, checkpoint_id: str):
    """Replay thread ``pk`` from ``checkpoint_id``: a confirmation page listing the
    nodes that run again (the checkpoint's ``next``, then what may follow them) and
    warning that their side effects happen again; POST with a reason
    (``ReplayForm``) calls ``durable.engine.replay`` and 303s to the new run. Refused
    (400, nothing changed): no reason, a busy thread. 404 as for ``fork``. An htmx GET
    aimed at the thread page's pane gets the panel alone."""
    thread, snapshot, error_page = at_checkpoint(request, pk, checkpoint_id)
    if error_page:
        return error_page
    form = ReplayForm(posted(request))
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
    return render_page(
        request,
        "dashboard/replay.html",
        context,
        target="checkpoint-detail",
        part="panel",
        status=status,
    )
