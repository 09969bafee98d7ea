"""Fork a thread at a checkpoint: the form (GET; beside the tree with htmx, a page of its
own without), the fork itself (POST), and the live preview of what it would write and run
(POST to ``fork-preview``, as the operator types; nothing is written).

The reason is required and kept as ``metadata={"reason": ...}`` on the fork's checkpoint,
on its run, and in the audit trail (``durable.audit``).
"""

from __future__ import annotations

from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from dashboard.forms import ForkForm, refusal
from dashboard.http import at_checkpoint, posted, render_page, see_other
from dashboard.present import checkpoint, diffs
from durable import engine, reports
from durable.redaction import redact
from durable.values import jsonable

# The element of the thread page that the form opens in, beside the tree.
PANE = "checkpoint-detail"


def _form(request, thread, snapshot, checkpoint_id, data):
    """The ``ForkForm`` of ``snapshot`` with ``data``, and what builds it."""
    shape = engine.graph_shape(thread)
    wrote = checkpoint.writers(thread, snapshot)
    migrating = request.GET.get("migrate") == "1"
    migration = reports.migration(thread, checkpoint_id) if migrating else None
    form = ForkForm(
        shape,
        jsonable(snapshot.values),
        wrote,
        data,
        migration=migration,
        schema=engine.state_schema(thread),
        step=snapshot.metadata.get("step"),
    )
    return form, shape, wrote, migration


@require_http_methods(["GET", "POST"])
def fork(request, pk: int, checkpoint_id: str):
    """Fork thread ``pk`` at ``checkpoint_id`` (``ForkForm``): ``durable.engine.fork``
    with the changed state keys, ``as_node``, ``run`` and the reason as metadata; then
    303 to the fork's run, or to the thread when it does not run. The form shows, per
    as_node, what LangGraph would run next after the update (``checkpoint.after_update``),
    and the preview of the chosen one (``preview``), nothing written. Refused (400, the
    form with its errors, nothing changed): bad JSON in a key (the error names it), a
    node the graph does not have, no reason, an update the graph cannot take, a run
    asked for after an update that leaves nothing to run (the fork alone is allowed), a
    busy thread. 404 for a thread not visible or a checkpoint that is not the thread's.
    An htmx GET aimed at the thread page's pane gets the form alone.

    ``?migrate=1``, for a checkpoint that no longer fits the deployed graph: the form is
    prefilled with the fork that migrates it (``durable.reports.migration``)."""
    thread, snapshot, error_page = at_checkpoint(request, pk, checkpoint_id)
    if error_page:
        return error_page
    form, shape, wrote, migration = _form(request, thread, snapshot, checkpoint_id, posted(request))
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
        "shown_values": redact(jsonable(snapshot.values)),
        "checkpoint_id": checkpoint_id,
        "form": form,
        "writers": wrote,
        "after": after,
        "chosen": after.get(form["as_node"].value()),
        "migration": migration,
        **preview(thread, checkpoint_id, form),
    }
    status = 400 if form.is_bound else 200
    return render_page(
        request, "dashboard/fork.html", context, target=PANE, part="panel", status=status
    )


@require_POST
def fork_preview(request, pk: int, checkpoint_id: str):
    """``POST`` the fork form (without its reason): the preview partial, what the fork
    would write (the state's changes after reducers) and run next, or the errors the
    form or the graph gives, each on its field too (out-of-band swaps). Nothing is
    written. 404 and 403 as for ``fork``."""
    thread, snapshot, error_page = at_checkpoint(request, pk, checkpoint_id)
    if error_page:
        return error_page
    form, *_ = _form(request, thread, snapshot, checkpoint_id, request.POST)
    form.is_valid()
    context = {"thread": thread, "checkpoint_id": checkpoint_id, "form": form, "oob": True}
    context.update(preview(thread, checkpoint_id, form))
    return render_page(
        request, "dashboard/fork.html", context, target="", part="preview", part_only=True
    )


def preview(thread, checkpoint_id: str, form: ForkForm) -> dict:
    """The preview of ``form``'s fork: ``preview_changes`` (``durable.diffs.Change``
    from the checkpoint's state to the fork's, masked), ``preview_next`` (the nodes
    LangGraph would run), ``preview_as_node``; or ``preview_refused`` (the form's errors
    or the graph's refusal, also put on the form's field at fault);
    ``preview_run_refused``: why "Fork and run" would be refused (``""``: it would run);
    ``preview_run_off``: why the "Fork and run" button is disabled (either refusal),
    absent when it is enabled.
    ``preview_fields``:
    ``(field name, errors)`` of each field the preview marks."""
    as_node = form["as_node"].value() or None
    result = {"preview_as_node": as_node, "preview_refused": False}
    if form.is_bound:
        form.is_valid()  # sets form.values; the reason is not needed for a preview
        blocking = {name: e for name, e in form.errors.items() if name != "reason"}
    else:
        blocking = {}
        form.values = form.initial_values
    if not blocking:
        try:
            found = engine.preview_fork(thread, checkpoint_id, form.values, as_node=as_node)
        except engine.InvalidRequest as exc:
            form.add_error(form.field_for(exc.field), exc.message)
        else:
            result["preview_changes"] = diffs.state_changes(found.before, found.after)
            result["preview_next"] = found.next
            result["preview_run_refused"] = found.run_refused
    result["preview_refused"] = any(n != "reason" for n in form.errors)
    # "Fork and run" is off while either would refuse it: the update itself (the fork
    # would be refused whichever button is pressed), or a run that would run nothing.
    if result["preview_refused"]:
        result["preview_run_off"] = (
            "The graph would refuse this update, so “Fork and run” is off until the "
            "errors shown are corrected."
        )
    elif result.get("preview_run_refused"):
        result["preview_run_off"] = (
            "Nothing would run after this update, so “Fork and run” would be refused: "
            "use “Only add the checkpoint”."
        )
    result["preview_fields"] = [
        (name, form.errors.get(name, []))
        for name in form.fields
        if name not in ("reason", "run_after")
    ]
    result["preview_form_errors"] = form.non_field_errors()
    return result
