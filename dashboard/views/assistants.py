"""The Assistants page: the tenant's assistants (stored configurations of a registered
graph, in versions) beside the registered graphs, each its own default assistant;
creating one, editing it (each save a new version, its config checked against the
graph's config schema), its versions with a diff between two, making an earlier
version the latest again, and deleting it. Every change goes through
``durable.engine`` (``stored_assistants``), which audits it; viewers read only.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard import access
from dashboard.forms.assistants import (
    AssistantForm,
    AssistantRunForm,
    LatestForm,
    VersionDiffForm,
)
from dashboard.http import posted, see_other
from dashboard.present.diffs import changes
from durable import engine
from durable.graphs import graph_names
from durable.redaction import redact

VERSIONS_SHOWN = 50
ASSISTANTS_PER_PAGE = 50
COMPARED = ("graph_id", "name", "description", "config", "context", "metadata")


def _save(request, form: AssistantForm, assistant=None):
    """Create (``assistant`` ``None``) or change the assistant from a valid ``form``;
    an engine refusal goes on the field it names. Returns the assistant, or ``None``."""
    fields = {k: form.cleaned_data[k] for k in COMPARED}
    try:
        if assistant is None:
            return engine.create_assistant(request.tenant, requested_by=request.user, **fields)
        return engine.update_assistant(assistant, requested_by=request.user, **fields)
    except engine.InvalidRequest as exc:
        form.add_error(form.field_for(exc.field), exc.message)
        return None


@require_http_methods(["GET", "POST"])
def assistant_list(request):
    """The tenant's assistants, newest first, ``ASSISTANTS_PER_PAGE`` a page
    (``?page=``), and the registered graphs; POST creates
    one (``AssistantForm``) and 303s to it. Refused (400, the form with the error on its
    field, nothing stored): JSON that does not parse or is not an object, an unknown
    graph, a config the graph's config schema refuses, a context its context schema
    refuses. 403 for a viewer's POST."""
    if request.method == "POST":
        access.require_operator(request)
    form = AssistantForm(posted(request))
    if request.method == "POST" and form.is_valid():
        made = _save(request, form)
        if made is not None:
            return see_other(reverse("assistant", args=[made.assistant_id]))
    page = Paginator(access.assistants(request), ASSISTANTS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "page": page,
        "assistants": page,
        "graphs": graph_names(),
        "form": form,
    }
    return render(
        request, "dashboard/assistants.html", context, status=400 if form.is_bound else 200
    )


@require_http_methods(["GET", "POST"])
def assistant_detail(request, assistant_id):
    """One assistant: its latest version's fields in the edit form (POST saves them as
    a new version, made the latest; refused as for creating one, 400), and its
    versions, newest first, to compare or make the latest. 404 for an assistant of
    another tenant; 403 for a viewer's POST."""
    assistant = access.assistant_or_404(request, assistant_id)
    if request.method == "POST":
        access.require_operator(request)
    form = AssistantForm(posted(request), assistant=assistant)
    if request.method == "POST" and form.is_valid():
        if _save(request, form, assistant) is not None:
            return see_other(reverse("assistant", args=[assistant.assistant_id]))
    return _render_detail(request, assistant, form, status=400 if form.is_bound else 200)


def _render_detail(request, assistant, form, *, latest_form=None, run_form=None, status=200):
    versions = list(assistant.versions.order_by("-version")[:VERSIONS_SHOWN])
    context = {
        "assistant": assistant,
        "form": form,
        "latest_form": latest_form or LatestForm(),
        "run_form": run_form or AssistantRunForm(graph=assistant.graph_id),
        "versions": versions,
        "runs": assistant.runs.select_related("thread").order_by("-pk")[:10],
    }
    return render(request, "dashboard/assistant_detail.html", context, status=status)


@require_POST
def assistant_latest(request, assistant_id):
    """Make the posted ``version`` the assistant's latest, then 303 to it. Refused
    (400, the error on the version): a version it does not have."""
    assistant = access.assistant_or_404(request, assistant_id)
    access.require_operator(request)
    latest_form = LatestForm(request.POST)
    if latest_form.is_valid():
        try:
            engine.set_latest_version(
                assistant, latest_form.cleaned_data["version"], requested_by=request.user
            )
        except engine.InvalidRequest as exc:
            latest_form.add_error("version", exc.message)
        else:
            return see_other(reverse("assistant", args=[assistant.assistant_id]))
    form = AssistantForm(assistant=assistant)
    return _render_detail(request, assistant, form, latest_form=latest_form, status=400)


@require_POST
def assistant_run(request, assistant_id):
    """Start a run on the assistant with the posted ``input``, on a new thread: its
    latest version's config and context (``engine.resolve_assistant``); then 303 to the
    thread. Refused (400, the error on the input): JSON that does not parse, an input
    the graph refuses."""
    assistant = access.assistant_or_404(request, assistant_id)
    access.require_operator(request)
    run_form = AssistantRunForm(request.POST, graph=assistant.graph_id)
    if run_form.is_valid():
        chosen = engine.resolve_assistant(request.tenant, str(assistant.assistant_id))
        try:
            asked = engine.RunRequest.on_assistant(
                chosen, input=run_form.cleaned_data["input"], requested_by=request.user
            )
            run = engine.submit(asked, tenant=request.tenant)
        except engine.InvalidRequest as exc:
            run_form.add_error(run_form.field_for(exc.field), exc.message)
        else:
            return see_other(reverse("thread", args=[run.thread_pk]))
    form = AssistantForm(assistant=assistant)
    return _render_detail(request, assistant, form, run_form=run_form, status=400)


@require_POST
def assistant_delete(request, assistant_id):
    """Delete the assistant and its versions (its runs stay), then 303 to the list."""
    assistant = access.assistant_or_404(request, assistant_id)
    access.require_operator(request)
    engine.delete_assistant(assistant, requested_by=request.user)
    return see_other(reverse("assistants"))


@require_GET
def assistant_diff(request, assistant_id):
    """What changed from version ``a`` to version ``b`` (``?a=&b=``), path by path
    (DeepDiff, as the checkpoint diff). 400 with the errors for a missing or unknown
    version."""
    assistant = access.assistant_or_404(request, assistant_id)
    picked = VersionDiffForm(request.GET)
    errors, found = [], {}
    if picked.is_valid():
        for side in ("a", "b"):
            number = picked.cleaned_data[side]
            found[side] = assistant.versions.filter(version=number).first()
            if found[side] is None:
                errors.append((f"Version {side.upper()}", f"There is no version {number}."))
    else:
        errors = [(picked[k].label, " ".join(e)) for k, e in picked.errors.items()]
    context = {"assistant": assistant, "errors": errors}
    if not errors:
        a, b = found["a"], found["b"]
        context |= {
            "a": a,
            "b": b,
            # Masked before they are compared (``durable.redaction``).
            "changes": changes(
                redact({k: getattr(a, k) for k in COMPARED}),
                redact({k: getattr(b, k) for k in COMPARED}),
            ),
            "a_label": f"In version {a.version}",
            "b_label": f"In version {b.version}",
        }
    return render(request, "dashboard/assistant_diff.html", context, status=400 if errors else 200)
