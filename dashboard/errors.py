"""The console's error pages, in its own layout whatever ``DEBUG`` says: 404 (no list of
the project's URLs), 500 (no traceback; it goes to the log), 503 for a fault of the
database (``dashboard.faults`` tries a read again first), and 413 for a form bigger
than ``DATA_UPLOAD_MAX_MEMORY_SIZE``.

With ``DEBUG`` on, Django answers these with its technical pages rather than the
``handler404``/``handler500`` views (``django.core.handlers.exception``), and the embedded
default runs with ``DEBUG`` on: so ``ErrorPagesMiddleware`` renders the console's own
pages for the console's requests (the API answers in JSON: ``durable.api.errors``), and
405, a visit (GET) to an address that only takes a form (``require_POST``), which Django
answers with an empty page, is the console's too, linking to the page above it; and
``not_found``/``server_error`` are the URL conf's handlers for what happens outside it.
"""

from __future__ import annotations

import logging

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import (
    BadRequest,
    PermissionDenied,
    RequestDataTooBig,
    SuspiciousOperation,
)
from django.http import Http404, HttpResponse, HttpResponseNotAllowed, HttpResponseServerError
from django.shortcuts import render
from django.template import loader
from django.urls import Resolver404, resolve
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.log import log_response

from durable import request_faults

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
MEGABYTE = 1024 * 1024
# Exceptions Django turns into 400 and 403 pages of their own (403.html is the console's).
NOT_SERVER_ERRORS = (Http404, PermissionDenied, BadRequest, SuspiciousOperation)


def not_found(request, exception=None) -> HttpResponse:
    """The console's 404 page (``handler404``)."""
    return render(request, "404.html", {"request_path": request.path}, status=404)


def server_error(request) -> HttpResponse:
    """The console's 500 page (``handler500``), rendered without the request, as Django's
    own is: whatever failed (the database, a context processor) must not fail it too."""
    return HttpResponseServerError(loader.get_template("500.html").render())


def unavailable(request, exc: BaseException) -> HttpResponse:
    """The console's 503 page, for a fault of the database (``durable.request_faults``):
    the request may not have been carried out, and may be sent again after
    ``Retry-After``. Rendered without the request, as the 500 page is: the user and the
    tenant would need the database."""
    page = HttpResponse(
        loader.get_template("503.html").render({"fault": request_faults.describe(exc)}),
        status=503,
    )
    page["Retry-After"] = str(request_faults.RETRY_AFTER_SECONDS)
    return page


def too_large(request) -> HttpResponse:
    """413: the form sent is over ``DATA_UPLOAD_MAX_MEMORY_SIZE``, so Django would not read
    it (``RequestDataTooBig``) and nothing was done. Links back to the page of the form
    when the browser said which one it was (``Referer``, on this site only)."""
    back = request.headers.get("Referer", "")
    known = url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure())
    context = {
        "sent": _megabytes(int(request.META.get("CONTENT_LENGTH") or 0)),
        "limit": _megabytes(settings.DATA_UPLOAD_MAX_MEMORY_SIZE),
        "back": back if known and back else "",
    }
    return render(request, "413.html", context, status=413)


def not_allowed(request, response: HttpResponseNotAllowed) -> HttpResponse:
    """405 in the console's layout, for ``response`` (Django's empty one; its ``Allow``
    header is kept): the address takes only a form sent by the console's pages. Links to
    the page one level up when there is one (the fork form for its preview, the inbox for
    its bulk answer), else to the threads."""
    parent = request.path.rstrip("/").rpartition("/")[0] + "/"
    try:
        resolve(parent)
    except Resolver404:
        parent = ""
    context = {"request_path": request.path, "parent": parent, "allow": response["Allow"]}
    page = render(request, "405.html", context, status=405)
    page["Allow"] = response["Allow"]
    return page


def _explained(request, response) -> HttpResponse:
    """``response``, or the console's page for it when it is Django's bare 405."""
    if isinstance(response, HttpResponseNotAllowed):
        return not_allowed(request, response)
    return response


def _megabytes(size: int) -> str:
    return f"{size / MEGABYTE:.1f} MB"


def _body_too_large(request) -> bool:
    """Whether the request's form (a POST's) is over the limit. Reading it here, before
    ``CsrfViewMiddleware`` (which reads the token from it) and the view, is where Django
    would raise ``RequestDataTooBig``; a form under the limit stays read for them."""
    try:
        request.POST  # noqa: B018 (reading it parses it)
    except RequestDataTooBig:
        return True
    return False


def _unresolved(request, response) -> bool:
    """Whether ``response`` is the 404 of a URL no pattern matches: that raises before
    any view, so before ``process_exception``, and leaves the request unresolved."""
    return response.status_code == 404 and request.resolver_match is None


class ErrorPagesMiddleware:
    """The console's pages for a form too large (413), a URL that names nothing or an
    ``Http404`` of a view (404), and an exception of a view (500: logged, and signalled
    as Django does, so the test client re-raises it). Requests under ``/api/`` are left to
    the API. Sync and async."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.async_mode:
            return self.__acall__(request)
        if request.path.startswith(API_PREFIX):
            return self.get_response(request)
        if request.method == "POST" and _body_too_large(request):
            return too_large(request)
        response = self.get_response(request)
        return (
            not_found(request) if _unresolved(request, response) else _explained(request, response)
        )

    async def __acall__(self, request):
        if request.path.startswith(API_PREFIX):
            return await self.get_response(request)
        if request.method == "POST" and await sync_to_async(_body_too_large)(request):
            return await sync_to_async(too_large)(request)
        response = await self.get_response(request)
        if _unresolved(request, response):
            return await sync_to_async(not_found)(request)
        if isinstance(response, HttpResponseNotAllowed):
            return await sync_to_async(not_allowed)(request, response)
        return response

    def process_exception(self, request, exception):
        if request.path.startswith(API_PREFIX):
            return None
        if isinstance(exception, Http404):
            return not_found(request, exception)
        if request_faults.note(request, exception):  # dashboard.faults retries a read
            logger.warning("%s %s: database fault (%s)", request.method, request.path, exception)
            return unavailable(request, exception)
        if isinstance(exception, NOT_SERVER_ERRORS) or settings.DEBUG_PROPAGATE_EXCEPTIONS:
            return None
        signals.got_request_exception.send(sender=None, request=request)
        response = server_error(request)
        log_response(
            "Internal Server Error: %s",
            request.path,
            response=response,
            request=request,
            exception=exception,
        )
        return response
