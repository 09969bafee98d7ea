"""A thread's diagnosis (``durable.reports.diagnosis``) as the thread page shows it: the
line, and its next action as a link to the console page that takes it."""

from __future__ import annotations

from django.urls import reverse

from durable.reports.diagnosis import Diagnosis, diagnose

# The actions that change the thread (through the page they link to): a viewer sees the
# line without them.
ACTING = ("answer", "replay", "start", "migrate")


def action_url(thread, diagnosis: Diagnosis) -> str:
    """The console page (or the API's docs) that takes ``diagnosis``'s next action;
    ``""`` for none."""
    action = diagnosis.action
    if action is None:
        return ""
    args = action.args
    if action.name == "run":
        return reverse("run", args=[args["run"]])
    if action.name == "replay":
        return reverse("replay", args=[thread.pk, args["checkpoint_id"]])
    if action.name == "migrate":
        return reverse("fork", args=[thread.pk, args["checkpoint_id"]]) + "?migrate=1"
    if action.name == "answer":
        return reverse("inbox-thread", args=[thread.pk])
    if action.name == "history":
        return reverse("thread-history", args=[thread.pk])
    if action.name == "start":
        return reverse("api:openapi-view")
    return ""


def diagnosis_context(thread, may_act: bool) -> dict:
    """``diagnosis`` (the ``Diagnosis``) and ``diagnosis_url`` (its action's link, empty
    when there is none or a viewer may not take it)."""
    found = diagnose(thread)
    acting = found.action is not None and found.action.name in ACTING
    url = "" if acting and not may_act else action_url(thread, found)
    return {"diagnosis": found, "diagnosis_url": url}
