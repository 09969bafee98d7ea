"""The console's requests and responses beyond a plain ``render``: a form's POST data, the
checkpoint an action is about (or the page refusing it), the redirect after a POST, and a
page or (for htmx) one of its partials. (A stream of server-sent events:
``durable.sse.response``.)"""

from __future__ import annotations

from django.http import HttpResponseRedirect
from django.shortcuts import render

from dashboard import access
from durable import engine


def posted(request):
    """The POST data of ``request``, or ``None`` (an unbound form) for a GET."""
    return request.POST if request.method == "POST" else None


def at_checkpoint(request, pk: int, checkpoint_id: str):
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


def see_other(url: str) -> HttpResponseRedirect:
    """303 to ``url``: the browser follows a POST's result with a GET, so reloading the
    page it lands on does not post again."""
    return HttpResponseRedirect(url, status=303)


def render_page(request, template, context, *, target, part, status=200, part_only=False):
    """``template`` rendered whole, or only its partial ``part`` (django-template-partials'
    ``"page.html#part"``) when htmx targets the element ``target`` or ``part_only`` is
    set. The response says ``Vary: HX-Request``, since it depends on that header."""
    if part_only or (request.htmx and request.htmx.target == target):
        template = f"{template}#{part}"
    response = render(request, template, context, status=status)
    response["Vary"] = "HX-Request"
    return response
