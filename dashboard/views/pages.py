"""Rendering a page or, for htmx, one of its partials."""

from __future__ import annotations

from django.shortcuts import render

from durable.models import Run


def render_page(request, template, context, *, target, part, status=200, part_only=False):
    """``template`` rendered whole, or only its partial ``part`` (django-template-partials'
    ``"page.html#part"``) when htmx targets the element ``target`` or ``part_only`` is
    set. The response says ``Vary: HX-Request``, since it depends on that header."""
    if part_only or (request.htmx and request.htmx.target == target):
        template = f"{template}#{part}"
    response = render(request, template, context, status=status)
    response["Vary"] = "HX-Request"
    return response


def refusal(exc, thread) -> str:
    """What to tell an operator whose request ``durable.engine`` refused (``exc``, an
    ``InvalidRequest``). A thread busy with another run is said in the console's words
    (the runs layer's message speaks to API clients, of ``multitask_strategy``): often
    another tab or operator acted first."""
    if exc.field == "thread" and thread is not None:
        active = thread.runs.filter(status__in=Run.ACTIVE).order_by("pk").first()
        if active is not None:
            return (
                f"Thread {thread.thread_id!r} is busy: run {active.pk} ({active.kind}) is "
                f"{active.status}, perhaps started from another tab or by someone else. "
                "Look at that run; when it has ended, load this page again."
            )
    return exc.message
