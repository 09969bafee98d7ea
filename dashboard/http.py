"""The console's responses beyond a plain ``render``: the redirect after a POST, and a page
or (for htmx) one of its partials. (A stream of server-sent events: ``durable.sse.response``.)"""

from __future__ import annotations

from django.http import HttpResponseRedirect
from django.shortcuts import render


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
